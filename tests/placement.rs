//! Where the workers of a `*` mapping run (`--placement`): read from each worker
//! thread's CPU list in /proc while a real run goes on, on one host and between two
//! network namespaces.

use std::time::{Duration, Instant};

use crate::netns::TwoHosts;
use crate::util::{Launch, Ports, Proc, port, run, spawn};

const LIMIT: Duration = Duration::from_secs(40);

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The CPU list each of `pid`'s threads named `name-N` may run on, by N.
fn thread_cpus(pid: u32, name: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let Some(n) = comm.trim().strip_prefix(&format!("{name}-")) else {
            continue;
        };
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string());
        if let (Ok(n), Some(cpus)) = (n.parse(), cpus) {
            found.push((n, cpus));
        }
    }
    found.sort();
    found
}

/// The CPU lists of `pid`'s `name-N` threads, in N order.
fn cpu_lists(pid: u32, name: &str) -> Vec<String> {
    thread_cpus(pid, name).into_iter().map(|(_, c)| c).collect()
}

/// Polls (bounded) until `pid`'s `name-N` threads may run on `want`, in N order.
fn wait_cpus(pid: u32, name: &str, want: &[String]) {
    let until = Instant::now() + LIMIT;
    let mut seen = cpu_lists(pid, name);
    while seen != want && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        seen = cpu_lists(pid, name);
    }
    assert_eq!(seen, want, "{name} threads of {pid}");
}

/// This process's CPU list, and how many CPUs it may use.
fn own_cpus() -> (String, usize) {
    let all = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Cpus_allowed_list:")
                .map(|v| v.trim().to_string())
        })
        .unwrap();
    (
        all,
        std::thread::available_parallelism().map_or(1, usize::from),
    )
}

/// `own_cpus()` where there are two CPUs or more; None (said on one line, and refused
/// where every test must run) where every placement is the same.
fn two_cpus() -> Option<(String, usize)> {
    let (all, cpus) = own_cpus();
    if cpus < 2 && crate::util::may_skip("one CPU: every placement is the same") {
        return None;
    }
    Some((all, cpus))
}

fn both_exit_0(s: &crate::util::Output, r: &crate::util::Output) {
    assert_eq!((s.code(), r.code()), (Some(0), Some(0)), "{s:?} {r:?}");
}

#[test]
fn placement_decides_where_the_workers_of_a_star_mapping_run() {
    let _ports = Ports::take(1);
    let Some((all, cpus)) = two_cpus() else {
        return;
    };
    // A receiver's workers exist from the start: read where they may run.
    let expect = |how: &str| -> Vec<String> {
        match how {
            "none" | "auto" => vec![all.clone(), all.clone()],
            "round-robin" => vec!["0".into(), "1".into()],
            _ => (0..2)
                .map(|k| ((k + cpus / 2) % cpus).to_string())
                .collect(),
        }
    };
    // Without --placement, auto: a receiver waits for its first connection to choose.
    let flags = [
        ("none", "--placement none"),
        ("round-robin", "--placement round-robin"),
        ("opposite", "--placement opposite"),
        ("auto", ""),
    ];
    for (k, (how, flag)) in flags.iter().enumerate() {
        let p = port(10 * k as u16 + 1);
        let r = spawn(
            "receiver",
            &format!("-r -m 2,*,127.0.0.1 -p {p} -t 1 {flag} --format json"),
        );
        wait_cpus(r.pid(), "recv", &expect(how));
        // The report says which placement ran.
        let s = run(
            &format!("-s -m 2,*,127.0.0.1 -p {p} -t 1 {flag} --format json"),
            LIMIT,
        );
        let ro = r.wait(LIMIT);
        both_exit_0(&s, &ro);
        for o in [&s, &ro] {
            assert_eq!(json(&o.stdout)["reports"][0]["params"]["placement"], *how);
        }
    }
}

/// Without `--placement`, a TCP stream whose two ends are on this host shares a core:
/// the sender pins worker k to the k-th CPU at once (its target is an address of this
/// host), the receiver's worker k moves there when its first connection arrives from one.
#[test]
fn auto_placement_puts_a_streams_two_ends_on_one_core_on_one_host() {
    let _ports = Ports::take(1);
    let Some((all, _)) = two_cpus() else {
        return;
    };
    let rr: Vec<String> = vec!["0".into(), "1".into()];
    let r = spawn("receiver", "-r -m 2,*,127.0.0.1 -p @1 -t 3 --format json");
    wait_cpus(r.pid(), "recv", &[all.clone(), all]);
    let s = spawn("sender", "-s -m 2,*,127.0.0.1 -p @1 -t 3 --format json");
    wait_cpus(s.pid(), "send", &rr);
    wait_cpus(r.pid(), "recv", &rr);
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    both_exit_0(&so, &ro);
    assert_eq!(
        json(&ro.stdout)["reports"][0]["params"]["placement"],
        "auto"
    );
    // The reports give the CPUs chosen: worker k on CPU k, on both sides.
    for o in [&so, &ro] {
        let cpus: Vec<serde_json::Value> = json(&o.stdout)["reports"][0]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["cpu"].clone())
            .collect();
        assert_eq!(cpus, [0, 1], "{}", o.stdout);
    }
}

/// Sockets `pid` holds open (its listeners, sync sessions and accepted connections).
fn sockets_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|f| {
            std::fs::read_link(f.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
        })
        .count()
}

/// Samples the CPU lists of each `(process, name)`'s `name-N` threads until the first
/// one's are gone (it exits): (every list seen, how many samples were taken while the
/// receiver `rx` held at least `sockets` sockets).
fn sample_until_exit(procs: &[(&Proc, &str)], rx: u32, sockets: usize) -> (Vec<String>, usize) {
    let (mut seen, mut after) = (Vec::new(), 0);
    let until = Instant::now() + LIMIT;
    while Instant::now() < until {
        let lists: Vec<Vec<String>> = procs.iter().map(|(p, n)| cpu_lists(p.pid(), n)).collect();
        if lists[0].is_empty() && !seen.is_empty() {
            break;
        }
        if !lists[0].is_empty() && sockets_of(rx) >= sockets {
            after += 1;
        }
        seen.extend(lists.into_iter().flatten());
        std::thread::sleep(Duration::from_millis(20));
    }
    (seen, after)
}

/// Towards another host (here a second network namespace) `*` means what it means in
/// both originals: no affinity on either side, also once the connections are up.
#[test]
fn auto_placement_leaves_workers_to_the_scheduler_towards_another_host() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("pl", 16) else {
        return;
    };
    let Some((all, _)) = two_cpus() else {
        return;
    };
    let m = format!("-m 2,*,{} -p @1 -t 3 --format json", h.ip_b);
    let r = Launch::new("receiver", &format!("-r {m}"))
        .in_netns(&h.b)
        .spawn();
    wait_cpus(r.pid(), "recv", &[all.clone(), all.clone()]);
    // Two listeners and the sync listener; then a sync session and two accepted data
    // connections.
    let listening = sockets_of(r.pid());
    let s = Launch::new("sender", &format!("-s {m}"))
        .in_netns(&h.a)
        .spawn();
    let (seen, after) = sample_until_exit(&[(&r, "recv"), (&s, "send")], r.pid(), listening + 3);
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    both_exit_0(&so, &ro);
    assert!(after >= 2, "{after} samples with the connections accepted");
    assert!(seen.iter().all(|c| *c == all), "{seen:?}");
    let sent = &json(&so.stdout)["reports"][0];
    assert_eq!(sent["params"]["placement"], "auto");
    // Nothing pinned, and the reports say so: every worker's `cpu` is null.
    for o in [&so, &ro] {
        let d = json(&o.stdout);
        let threads = d["reports"][0]["threads"].as_array().unwrap();
        assert!(
            !threads.is_empty() && threads.iter().all(|t| t["cpu"].is_null()),
            "{d}"
        );
    }
}
