//! Connection-rate tests (`--connect-rate`) between two processes of the built binary, in
//! one process and between two network namespaces: the sender opens and closes
//! connections as fast as they go, the receiver counts what it accepts, and both agree.

use std::time::Duration;

use crate::netns::TwoHosts;
use crate::util::{
    FdPeak, Launch, Ports, Scratch, assert_close, assert_usage_errors, assert_valid, attempt_at,
    close_or_starved, json, json_pair_at, multi_client_at, port, ports_in, promise, report, run,
    spawn, starved, validator, wait_listening,
};

const LIMIT: Duration = Duration::from_secs(30);

fn connections(d: &serde_json::Value) -> f64 {
    report(d)["connect"]["connections"].as_u64().unwrap() as f64
}

fn per_second(d: &serde_json::Value) -> f64 {
    report(d)["connect"]["connections_per_second"]
        .as_f64()
        .unwrap()
}

/// Both sides say it was a connection-rate test; the sender timed its connects (the
/// percentiles in order), the receiver, which does not, says null; no byte moved.
fn assert_connect_rate(s: &serde_json::Value, r: &serde_json::Value) {
    for d in [s, r] {
        assert_eq!(
            report(d)["params"]["workload"]["kind"],
            "connect_rate",
            "{d}"
        );
        assert_eq!(report(d)["end"]["kind"], "completed", "{d}");
        assert_eq!(report(d)["totals"]["bytes"], 0, "{d}");
        assert_eq!(
            report(d)["connections"].as_u64().unwrap() as f64,
            connections(d)
        );
        assert_valid(&validator(), d);
    }
    let l = &report(s)["connect"]["latency_us"];
    let v: Vec<f64> = ["min", "p50", "p90", "p99", "p999", "max"]
        .iter()
        .map(|k| l[k].as_f64().unwrap())
        .collect();
    assert!(v[0] > 0.0 && v.windows(2).all(|w| w[0] <= w[1]), "{l}");
    assert!(report(r)["connect"]["latency_us"].is_null(), "{r}");
    // The timed connects are some of those counted (the rest were preempted or reset);
    // the receiver times none.
    let timed = report(s)["connect"]["timed"].as_u64().unwrap() as f64;
    assert!(timed > 0.0 && timed <= connections(s), "{s}");
    assert_eq!(report(r)["connect"]["timed"], 0, "{r}");
}

/// Sockets in TIME_WAIT to or from TCP `port` on this host.
fn time_wait(port: u16) -> usize {
    let hex = format!(":{port:04X} ");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 3 && cols[3] == "06" && format!("{} {} ", cols[1], cols[2]).contains(&hex)
        })
        .count()
}

#[test]
fn connection_rate_over_loopback_both_sides_count_the_same_connections() {
    let _ports = Ports::take(1);
    for (k, (rx, tx)) in [
        ("-P 1 -t 2", "-P 1 -n 1 -t 2 --connect-rate"),
        ("-P 2 -t 2", "-P 2 -n 1 -l 3 -t 2 --connect-rate"),
    ]
    .into_iter()
    .enumerate()
    {
        promise("sender vs receiver connections within 1 %", |i| {
            let at = attempt_at(k, i);
            let (s, r) = json_pair_at(at, rx, tx);
            assert_connect_rate(&s, &r);
            let threads = report(&s)["threads"].as_array().unwrap();
            let sum: u64 = threads
                .iter()
                .map(|t| t["connect"]["connections"].as_u64().unwrap())
                .sum();
            assert_eq!(sum as f64, connections(&s), "{s}");
            // Closed with a reset, so no connection holds a port in TIME_WAIT (the sync
            // connection may).
            let left = time_wait(port(at));
            assert!(left <= 2, "{left} sockets in TIME_WAIT on the data port");
            // What was in flight at the edges is the difference; a machine that lets the
            // run keep its promise opens far more than 500 in 2 s.
            let reports = [report(&s), report(&r)];
            if connections(&s) <= 500.0 {
                let opened = format!("{} connections in 2 s", connections(&s));
                return Err((opened, starved(&reports)));
            }
            close_or_starved(connections(&s), connections(&r), 1.0, &reports)
        });
    }
}

/// The fixed descriptors of a default receiver (16 data ports, each a listener and its
/// worker's runtime, the sync port, /proc readers) are about a hundred; its counted
/// connections are closed the moment they are accepted, so beyond that it holds no more
/// than the accepts in flight, one per sender slot at the most.
const RECEIVER_FIXED_FDS: usize = 128;
const DEFAULT_SLOTS: usize = 64;

/// At the defaults (16 ports x 4 threads = 64 slots) a connection-rate test runs within
/// 1,024 descriptors on each side, as two processes and as one, never meets EMFILE, and
/// the receiver's descriptors stay bounded by the connections in flight.
#[test]
fn connection_rate_at_the_defaults_fits_in_1024_descriptors_one_process_and_two() {
    let _ports = Ports::take(1);
    promise("the two sides count the same connections", |i| {
        let p = 1 + 30 * i;
        let r = Launch::new(
            "receiver",
            &ports_in(&format!("-r 127.0.0.1 -p @{p} -t 3 --format json")),
        )
        .nofile(1024)
        .spawn();
        wait_listening(port(p as u16 + 15), LIMIT);
        let fds = FdPeak::watch(r.pid());
        let s = Launch::new(
            "sender",
            &ports_in(&format!(
                "-s 127.0.0.1 -p @{p} -t 3 --connect-rate --format json"
            )),
        )
        .nofile(1024)
        .spawn();
        let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
        let peak = fds.peak();
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
        let (sd, rd) = (json(&so), json(&ro));
        assert_connect_rate(&sd, &rd);
        assert_eq!(
            report(&sd)["threads"].as_array().unwrap().len(),
            DEFAULT_SLOTS
        );
        assert!(connections(&sd) > 500.0, "{sd}");
        eprintln!("receiver descriptors at most {peak}");
        assert!(
            peak > 0 && peak <= RECEIVER_FIXED_FDS + DEFAULT_SLOTS,
            "the receiver held {peak} descriptors"
        );
        for o in [&so, &ro] {
            assert!(!o.stderr.contains("os error 24"), "{o:?}");
        }
        // The edges fall at one instant on both sides, give or take what is in flight: the
        // counts agree, or (where one side took an edge late, so its window is longer)
        // the rates over each side's own window do. A miscount breaks both.
        let (a, b) = (connections(&sd), connections(&rd));
        let rate = |d: &serde_json::Value| report(d)["connect"]["connections_per_second"].as_f64();
        let (ra, rb) = (rate(&sd).unwrap(), rate(&rd).unwrap());
        if (a - b).abs() <= DEFAULT_SLOTS as f64 + a / 100.0 || (ra - rb).abs() <= ra / 100.0 {
            return Ok(());
        }
        let why = starved(&[report(&sd), report(&rd)]);
        Err((
            format!("sender {a} ({ra:.0}/s) vs receiver {b} ({rb:.0}/s)"),
            why,
        ))
    });

    one_process_fits();
}

/// `--loopback` at the defaults: both roles' descriptors in one process, the
/// receiver's part and the sender's 64 workers (each its slot's socket and its runtime's,
/// two epoll instances and an eventfd, one more in flight).
fn one_process_fits() {
    let one = Launch::new(
        "loopback",
        "--loopback -p @1 -t 3 --connect-rate --format json",
    )
    .nofile(1024)
    .spawn();
    let fds = FdPeak::watch(one.pid());
    let o = one.wait(LIMIT);
    let peak = fds.peak();
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(!o.stderr.contains("os error 24"), "{o:?}");
    let d = json(&o);
    let sides: Vec<f64> = d["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["connect"]["connections"].as_u64().unwrap() as f64)
        .collect();
    assert_eq!(sides.len(), 2, "{d}");
    assert!(sides.iter().all(|&n| n > 500.0), "{sides:?}");
    eprintln!("one process: descriptors at most {peak}");
    assert!(
        peak <= RECEIVER_FIXED_FDS + DEFAULT_SLOTS * 6,
        "one process held {peak} descriptors"
    );
}

#[test]
fn every_layout_and_file_carries_the_connection_rate() {
    let _ports = Ports::take(1);
    let d = Scratch::new("cr");
    let f = |n: &str| d.file(n).display().to_string();
    let line = format!(
        "--loopback -P 1 -n 1 -p @1 -t 2 --connect-rate -x {} --xml-windows {}",
        f("r.xml"),
        f("w.xml")
    );
    let o = run(&ports_in(&line), LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let totals: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("Total "))
        .collect();
    assert_eq!(totals.len(), 2, "a table per side:\n{}", o.stdout);
    assert!(
        o.stdout.contains("Connections      Conn/s  p50(us)"),
        "{}",
        o.stdout
    );
    assert!(totals.iter().any(|t| t.contains("n/a")), "{totals:?}");
    for name in ["r.xml", "w.xml"] {
        let text = d.read(name);
        let x = roxmltree::Document::parse(&text).expect("well-formed XML");
        let block = x
            .root_element()
            .children()
            .find(|n| n.has_tag_name("connect_rate"))
            .unwrap_or_else(|| panic!("no <connect_rate> in {name}:\n{text}"));
        let n = block
            .children()
            .find(|n| n.has_tag_name("connections"))
            .and_then(|n| n.text())
            .unwrap();
        assert!(n.parse::<u64>().unwrap() > 100, "{name}:\n{text}");
    }
    let o = run(&ports_in(&format!("{line} --format linux")), LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(o.stdout.matches("\t conn/s\t:").count(), 2, "{}", o.stdout);
    assert!(o.stdout.contains("\t connect\t:p50 "), "{}", o.stdout);
    let o = run(
        &ports_in("--loopback -P 1 -n 1 -p @1 -t 2 --connect-rate --interval 1 --format jsonl"),
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let intervals: Vec<serde_json::Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .filter(|l| l["type"] == "interval" && l["side"] == "sender")
        .collect();
    assert!(intervals.len() >= 2, "{}", o.stdout);
    for iv in &intervals {
        assert!(iv["connect"]["connections"].as_u64().unwrap() > 0, "{iv}");
    }
}

#[test]
fn a_held_receiver_counts_connections_for_one_test_only() {
    let _ports = Ports::take(1);
    let h = spawn(
        "held receiver",
        &ports_in("-r 127.0.0.1 -P 1 -p @1 -t 1 -H --format jsonl"),
    );
    for extra in ["", "--connect-rate", ""] {
        let o = run(
            &ports_in(&format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 1 {extra}")),
            LIMIT,
        );
        assert_eq!(o.code(), Some(0), "{extra}: {o:?}");
    }
    let reports = h.summaries(3, LIMIT);
    let kinds: Vec<&serde_json::Value> = reports
        .iter()
        .map(|r| &r["params"]["workload"]["kind"])
        .collect();
    assert_eq!(kinds, ["stream", "connect_rate", "stream"], "{reports:?}");
    assert!(reports[1]["connect"]["connections"].as_u64().unwrap() > 100);
    // The plain test after it moved data over a connection that stayed.
    assert!(reports[2]["totals"]["bytes"].as_u64().unwrap() > 1_000_000);
    assert_eq!(reports[2]["connections"], 1);
}

/// Two senders at one multi-client receiver: its connections are theirs together
/// within 2 % (a promise: a starved run says so).
#[test]
fn a_multi_client_receiver_counts_two_senders_at_once() {
    let _ports = Ports::take(1);
    promise(
        "two senders' connections vs the receiver's within 2 %",
        |i| {
            let (ao, b, ro) = multi_client_at(attempt_at(0, i), "--connect-rate");
            let (ad, bd, rd) = (json(&ao), json(&b), json(&ro));
            assert_connect_rate(&ad, &rd);
            assert_connect_rate(&bd, &rd);
            let both = connections(&ad) + connections(&bd);
            let reports = [report(&ad), report(&bd), report(&rd)];
            close_or_starved(both, connections(&rd), 2.0, &reports)
        },
    );
}

#[test]
fn connection_rate_is_a_sender_option_for_tcp_with_sync() {
    assert_usage_errors(&[
        (
            "-r 127.0.0.1 --connect-rate",
            "--connect-rate applies to the sender",
        ),
        (
            "-s 127.0.0.1 --connect-rate -N",
            "--connect-rate needs ntttcp-for-linux's sync",
        ),
        (
            "-s -m 1,*,127.0.0.1 -to 2000 --connect-rate",
            "--connect-rate needs ntttcp-for-linux's sync",
        ),
        (
            "-s 127.0.0.1 --connect-rate -u",
            "--connect-rate cannot be combined with -u",
        ),
        (
            "-s 127.0.0.1 --connect-rate -f 30000",
            "cannot be combined with -f",
        ),
        (
            "-s 127.0.0.1 --connect-rate --rr",
            "cannot be used with '--rr",
        ),
    ]);
}

#[test]
fn connection_rate_between_namespaces_is_held_to_a_shaped_link_ipv4_and_ipv6() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("cr", 14) else {
        return;
    };
    h.add_ipv6("fd00:201:14");
    // 1 Mbit/s out of the sender with a one-packet burst: a connection costs the sender
    // at least its SYN, its ACK and its reset (3 x 54 bytes on the wire at the least),
    // so no more than 125,000 / 162 = 771 connections a second fit.
    h.exec(
        &h.a,
        &format!(
            "tc qdisc add dev {} root tbf rate 1mbit burst 1600 latency 50ms",
            h.dev_a
        ),
    );
    for (target, bind, six, k) in [
        (h.ip_b.clone(), h.ip_b.clone(), "", 1),
        (
            "fd00:201:14::2".to_string(),
            "[fd00:201:14::2]".to_string(),
            "-6",
            5,
        ),
    ] {
        let m = ports_in(&format!("-P 1 -p @{k} -t 3 {six} --format json"));
        let r = Launch::new("receiver", &format!("-r {bind} {m}"))
            .in_netns(&h.b)
            .spawn();
        let so = Launch::new("sender", &format!("-s {target} -n 2 {m} --connect-rate"))
            .in_netns(&h.a)
            .spawn()
            .wait(LIMIT);
        let ro = r.wait(LIMIT);
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
        let (s, r) = (json(&so), json(&ro));
        assert_connect_rate(&s, &r);
        let rate = per_second(&s);
        assert!(rate > 20.0 && rate <= 771.0, "{six} connections/s: {rate}");
        assert_close(connections(&s), connections(&r), 2.0, "across veth");
    }
}
