//! Two hosts on one machine: network namespaces joined by a veth pair, created and
//! removed by each test (needs root, as CI runs). Each test uses its own namespace
//! names, veth names and /24 subnet (10.201.N.0/24), so tests run in parallel; ports are
//! per namespace.

use serde_json::json;
use std::process::Command;
use std::time::Duration;

use crate::util::{
    Launch, Output, Ports, Proc, Tables, assert_close, is_root, parse_tables, port, ports_in,
};

/// Two namespaces `a` (sender side, .1) and `b` (receiver side, .2) on a veth pair;
/// deleted again on drop, also when the test fails.
pub(crate) struct TwoHosts {
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) ip_a: String,
    pub(crate) ip_b: String,
    /// The veth end inside namespace `a`.
    pub(crate) dev_a: String,
    /// The veth end inside namespace `b`.
    pub(crate) dev_b: String,
}

pub(crate) fn ip(args: &str) {
    let out = Command::new("ip")
        .args(args.split_whitespace())
        .output()
        .expect("run ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl TwoHosts {
    /// Creates namespaces `nt{tag}a`/`nt{tag}b` with 10.201.{net}.1/.2; None (the test
    /// is skipped, said on one line) without root, unless `NTTTCP_REQUIRE_NETNS` is set, as
    /// CI sets it, which makes that a failure.
    pub(crate) fn new(tag: &str, net: u8) -> Option<Self> {
        if !is_root() {
            assert!(
                std::env::var_os("NTTTCP_REQUIRE_NETNS").is_none(),
                "network-namespace tests need root (CAP_NET_ADMIN), and NTTTCP_REQUIRE_NETNS \
                 says they must run"
            );
            // Straight to stderr: the test harness would swallow a captured line.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "skipped: network-namespace test '{tag}' needs root (CAP_NET_ADMIN)"
            );
            return None;
        }
        let h = Self {
            a: format!("nt{tag}a"),
            b: format!("nt{tag}b"),
            ip_a: format!("10.201.{net}.1"),
            ip_b: format!("10.201.{net}.2"),
            dev_a: format!("v{tag}a"),
            dev_b: format!("v{tag}b"),
        };
        h.cleanup();
        ip(&format!("netns add {}", h.a));
        ip(&format!("netns add {}", h.b));
        let (va, vb) = (format!("v{tag}a"), format!("v{tag}b"));
        ip(&format!("link add {va} type veth peer name {vb}"));
        ip(&format!("link set {va} netns {}", h.a));
        ip(&format!("link set {vb} netns {}", h.b));
        ip(&format!("-n {} addr add {}/24 dev {va}", h.a, h.ip_a));
        ip(&format!("-n {} addr add {}/24 dev {vb}", h.b, h.ip_b));
        for (ns, dev) in [(&h.a, &va), (&h.b, &vb)] {
            ip(&format!("-n {ns} link set {dev} up"));
            ip(&format!("-n {ns} link set lo up"));
        }
        Some(h)
    }

    /// Runs a command inside namespace `ns` (must succeed).
    pub(crate) fn exec(&self, ns: &str, cmd: &str) {
        let out = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(cmd.split_whitespace())
            .output()
            .expect("run ip netns exec");
        assert!(
            out.status.success(),
            "{cmd} in {ns}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Drops `percent` % of the packets from `a` arriving in `b` (nftables `numgen`).
    pub(crate) fn drop_in_b(&self, percent: u32) {
        self.exec(&self.b, "nft add table inet ntt");
        self.exec(
            &self.b,
            "nft add chain inet ntt in { type filter hook input priority 0 ; }",
        );
        let rule = if percent >= 100 {
            format!("nft add rule inet ntt in ip saddr {} drop", self.ip_a)
        } else {
            format!(
                "nft add rule inet ntt in ip saddr {} numgen random mod 100 < {percent} drop",
                self.ip_a
            )
        };
        self.exec(&self.b, &rule);
    }

    /// Drops `percent` % of the UDP datagrams arriving in `b`, both address families
    /// (the sync channel, TCP, is left alone).
    pub(crate) fn drop_udp_in_b(&self, percent: u32) {
        self.exec(&self.b, "nft add table inet nttu");
        self.exec(
            &self.b,
            "nft add chain inet nttu in { type filter hook input priority 0 ; }",
        );
        self.exec(
            &self.b,
            &format!(
                "nft add rule inet nttu in meta l4proto udp numgen random mod 100 < {percent} \
                 counter drop"
            ),
        );
    }

    /// Gives both ends an IPv6 address too, `PREFIX::1` in `a` and `PREFIX::2` in `b`
    /// (/64, no duplicate-address-detection delay).
    pub(crate) fn add_ipv6(&self, prefix: &str) {
        for (ns, dev, host) in [(&self.a, &self.dev_a, 1), (&self.b, &self.dev_b, 2)] {
            self.exec(
                ns,
                &format!("ip -6 addr add {prefix}::{host}/64 dev {dev} nodad"),
            );
        }
    }

    /// Gives namespace `ns` its own /etc/hosts (`ip netns exec` bind-mounts
    /// /etc/netns/NS/hosts over /etc/hosts for the commands it runs).
    pub(crate) fn hosts_file(&self, ns: &str, text: &str) {
        let dir = format!("/etc/netns/{ns}");
        std::fs::create_dir_all(&dir).expect("create /etc/netns/NS");
        std::fs::write(format!("{dir}/hosts"), text).expect("write the namespace's hosts");
    }

    fn cleanup(&self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            let _ = std::fs::remove_dir_all(format!("/etc/netns/{ns}"));
        }
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        self.cleanup();
    }
}

pub(crate) fn finish(p: Proc) -> (i32, Tables, String) {
    let o = p.wait(Duration::from_secs(30));
    let t = parse_tables(&o.stdout);
    assert_eq!(t.len(), 1, "{o:?}");
    (o.code().unwrap_or(-1), t[0].clone(), o.stderr)
}

#[test]
fn two_hosts_sync_run_across_veth() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("s1", 1) else {
        return;
    };
    let m = ports_in(&format!("-m 2,*,{} -p @1 -W 1 -t 2", h.ip_b));
    let r = Launch::new("receiver", &format!("-r {m}"))
        .in_netns(&h.b)
        .spawn();
    let s = Launch::new("sender", &format!("-s {m}"))
        .in_netns(&h.a)
        .spawn();
    let (sc, st, se) = finish(s);
    let (rc, rt, re) = finish(r);
    assert_eq!((sc, rc), (0, 0), "sender: {se}\nreceiver: {re}");
    assert!(rt.meg > 1.0, "{rt:?}");
    assert_close(st.meg, rt.meg, 1.0, "sender vs receiver bytes across veth");
}

#[test]
fn two_hosts_windows_sender_linux_receiver_no_sync() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("n1", 2) else {
        return;
    };
    let r = Launch::new(
        "receiver",
        &ports_in(&format!("-r -m 2,*,{} -N -p @1 -W 1 -t 2", h.ip_b)),
    )
    .in_netns(&h.b)
    .spawn();
    let s = Launch::new(
        "sender",
        &ports_in(&format!("-s -m 2,*,{} -ns -p @1 -wu 1 -t 2", h.ip_b)),
    )
    .in_netns(&h.a)
    .spawn();
    let (sc, st, se) = finish(s);
    let (rc, rt, re) = finish(r);
    assert_eq!((sc, rc), (0, 0), "sender: {se}\nreceiver: {re}");
    assert_close(st.meg, rt.meg, 1.0, "sender vs receiver bytes (no sync)");
}

#[test]
fn receiver_address_of_another_host_is_a_usage_error() {
    let Some(h) = TwoHosts::new("u1", 3) else {
        return;
    };
    // 10.201.3.1 belongs to namespace a, not b.
    let o = Launch::new("receiver", &format!("-r {} -t 1", h.ip_a))
        .in_netns(&h.b)
        .spawn()
        .wait(Duration::from_secs(10));
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(
        o.stderr.contains("not an address of this host"),
        "{}",
        o.stderr
    );
}

/// Runs a 10 s test across the veth pair with a 2 s deadline, applies `fault` 3 s in, and
/// checks that both sides end by themselves within --timeout + 1.5 s of the fault, exit 1
/// and print what they measured before it.
fn fault_mid_test(tag: &str, net: u8, port: u16, fault: impl FnOnce(&TwoHosts)) {
    let Some(h) = TwoHosts::new(tag, net) else {
        return;
    };
    let m = format!("-m 1,*,{} -p {port} -t 10 --timeout 2", h.ip_b);
    let r = Launch::new("receiver", &format!("-r {m}"))
        .in_netns(&h.b)
        .spawn();
    // The sender gives up connecting after --timeout (2 s): it starts once the receiver
    // listens.
    crate::util::wait_listening_in(&h.b, port - 1, Duration::from_secs(20));
    let s = Launch::new("sender", &format!("-s {m} --interval 1"))
        .in_netns(&h.a)
        .spawn();
    // Two seconds measured (two interval lines; their ends are the real sample times, so
    // not always exactly 2.000): what each side prints must cover them.
    s.wait_for_stdout_count(" Gbit/s", 2, Duration::from_secs(20));
    fault(&h);
    let at = std::time::Instant::now();
    let limit = Duration::from_secs(10 + 5);
    let so: Output = s.wait(limit);
    let sender_end = at.elapsed();
    let ro: Output = r.wait(limit);
    let receiver_end = at.elapsed();
    for (who, o, end) in [("sender", &so, sender_end), ("receiver", &ro, receiver_end)] {
        assert_eq!(o.code(), Some(1), "{who}: {o:?}");
        assert!(o.stderr.contains("test ended early"), "{who}: {}", o.stderr);
        let t = parse_tables(&o.stdout);
        assert_eq!(t.len(), 1, "{who} printed its results: {}", o.stdout);
        assert!(
            t[0].realtime > 2.0 && t[0].realtime < 9.0,
            "{who}: {:?}",
            t[0]
        );
        assert!(t[0].meg > 1.0, "{who}: {:?}", t[0]);
        // The product's promise: no data for --timeout (2 s), then the results within
        // 1.5 s more (the end-of-test exchange and the workers' join are bounded).
        assert!(
            end <= Duration::from_millis(2000 + 1500),
            "{who} took {end:?} after the fault"
        );
        eprintln!(
            "FAULT {tag}: {who} ended {end:.1?} after the fault, exit {:?}",
            o.code()
        );
    }
}

#[test]
fn link_down_mid_test_both_sides_detect_the_silence() {
    let _ports = Ports::take(1);
    fault_mid_test("ld", 4, port(1), |h| {
        h.exec(&h.a, &format!("ip link set {} down", h.dev_a));
    });
}

#[test]
fn total_loss_mid_test_both_sides_detect_the_silence() {
    let _ports = Ports::take(1);
    fault_mid_test("tl", 5, port(1), |h| h.drop_in_b(100));
}

#[test]
fn two_percent_loss_at_one_gigabit_completes_and_totals_agree() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("lr", 6) else {
        return;
    };
    h.exec(
        &h.a,
        &format!(
            "tc qdisc add dev {} root tbf rate 1gbit burst 256kb latency 50ms",
            h.dev_a
        ),
    );
    h.drop_in_b(2);
    let m = ports_in(&format!("-m 2,*,{} -p @1 -W 1 -t 4", h.ip_b));
    let r = Launch::new("receiver", &format!("-r {m}"))
        .in_netns(&h.b)
        .spawn();
    let s = Launch::new("sender", &format!("-s {m}"))
        .in_netns(&h.a)
        .spawn();
    let (sc, st, se) = finish(s);
    let (rc, rt, re) = finish(r);
    assert_eq!((sc, rc), (0, 0), "sender: {se}\nreceiver: {re}");
    assert_close(rt.realtime, 4.0, 5.0, "on time");
    let gbit = rt.mb_per_s * 8.0 * 1.048576 / 1000.0;
    assert!(gbit > 0.3 && gbit < 1.05, "shaped to 1 Gbit/s: {gbit}");
    assert_close(st.meg, rt.meg, 1.0, "sender vs receiver under loss");
}

#[test]
fn ipv6_between_namespaces_with_source_address() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("v6", 7) else {
        return;
    };
    // Each side also gets an IPv6 address (no duplicate-address detection delay).
    h.add_ipv6("fd00:201:7");
    let r = Launch::new(
        "receiver",
        "-r [fd00:201:7::2] -6 -P 1 -p @1 -W 1 -t 2 --format json",
    )
    .in_netns(&h.b)
    .spawn();
    let s = Launch::new(
        "sender",
        "-s fd00:201:7::2 -6 -P 1 -n 2 -p @1 -W 1 -t 2 -a fd00:201:7::1 --format json",
    )
    .in_netns(&h.a)
    .spawn();
    let so = s.wait(Duration::from_secs(30));
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    let doc = |o: &Output| -> serde_json::Value { serde_json::from_str(&o.stdout).expect("JSON") };
    let (sd, rd) = (doc(&so), doc(&ro));
    let bytes = |d: &serde_json::Value| d["reports"][0]["totals"]["bytes"].as_u64().unwrap() as f64;
    assert!(bytes(&rd) > 1e6);
    assert_close(bytes(&sd), bytes(&rd), 1.0, "IPv6 sender vs receiver");
    // The receiver saw both connections come from the -a address.
    let peers = rd["reports"][0]["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 2);
    assert!(
        peers
            .iter()
            .all(|p| p.as_str().unwrap().starts_with("[fd00:201:7::1]:")),
        "{peers:?}"
    );
}

/// Runs a receiver and then a sender, each `(namespace, flags)` (ports as `ports_in`
/// reads them), waits for both (30 s each) and asserts both exited 0: (sender's output,
/// receiver's).
pub(crate) fn pair_in(rx: (&str, &str), tx: (&str, &str)) -> (Output, Output) {
    let r = Launch::new("receiver", &ports_in(rx.1))
        .in_netns(rx.0)
        .spawn();
    let s = Launch::new("sender", &ports_in(tx.1))
        .in_netns(tx.0)
        .spawn();
    let so = s.wait(Duration::from_secs(30));
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    (so, ro)
}

#[test]
fn sendfile_across_namespaces_and_copies_to_an_own_address() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("zc", 15) else {
        return;
    };
    let dir = crate::util::Scratch::new("sendfile-netns");
    let x = dir.file("s.xml");
    // Across the veth pair -Z sends with sendfile(), and every report says so.
    let (so, ro) = pair_in(
        (
            &h.b,
            &format!("-r {} -P 1 -p @1 -t 2 --format json", h.ip_b),
        ),
        (
            &h.a,
            &format!(
                "-s {} -P 1 -p @1 -t 2 -Z --format json -x {}",
                h.ip_b,
                x.display()
            ),
        ),
    );
    assert!(!so.stderr.contains("sending with copies"), "{}", so.stderr);
    let doc = |o: &Output| -> serde_json::Value { serde_json::from_str(&o.stdout).expect("JSON") };
    let (sd, rd) = (doc(&so), doc(&ro));
    let bytes = |d: &serde_json::Value| d["reports"][0]["totals"]["bytes"].as_u64().unwrap() as f64;
    assert!(bytes(&rd) > 1e7, "{}", bytes(&rd));
    assert_close(bytes(&sd), bytes(&rd), 1.0, "sendfile sender vs receiver");
    assert_eq!(sd["reports"][0]["params"]["zero_copy"]["sendfile"], true);
    assert_eq!(rd["reports"][0]["params"]["zero_copy"]["sendfile"], false);
    // sendfile() keeps the kernel's TCP_NOTSENT_LOWAT (a limit cost it a third).
    let lowat =
        |d: &serde_json::Value| d["reports"][0]["socket"]["requested"]["notsent_lowat"].clone();
    assert_eq!(lowat(&sd), "kernel");
    assert!(
        dir.read("s.xml")
            .contains("<zero_copy_sendfile>True</zero_copy_sendfile>")
    );

    // A sender beside its receiver, towards the namespace's own veth address: that
    // connection stays on the loopback device, so the sender copies and says so.
    let (so, _) = pair_in(
        (&h.b, &format!("-r {} -P 1 -p @3 -t 1", h.ip_b)),
        (
            &h.b,
            &format!("-s {} -P 1 -p @3 -t 1 -Z --format json", h.ip_b),
        ),
    );
    let own = format!("-Z: the receiver ({}) is on this host", h.ip_b);
    assert!(so.stderr.contains(&own), "{}", so.stderr);
    assert_eq!(
        doc(&so)["reports"][0]["params"]["zero_copy"]["sendfile"],
        false
    );
    assert_eq!(lowat(&doc(&so)), "by-path", "copying keeps the limit");
}

/// Without -b a receiver reads as each connection's path wants: 128 KiB across the veth
/// pair (1500-byte MTU, NIC-sized segments), 64 KiB towards the namespace's own address
/// (the loopback device's 64 KiB segments); -b is kept on either path. Every report
/// gives the size that was read with.
#[test]
fn reads_and_their_low_water_mark_follow_the_path() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("rd", 4) else {
        return;
    };
    // (sender's namespace, receiver's options, port): the read size every report must
    // give, and the SO_RCVLOWAT its streams read back (null: the kernel's, never set).
    let runs = [
        (&h.a, "", 1, 131_072, json!(196_608)),
        (&h.b, "", 3, 65_536, json!(null)),
        (&h.a, "-b 32K", 5, 32_768, json!(196_608)),
        (&h.a, "--rcvlowat 64K", 7, 131_072, json!(65_536)),
        (&h.a, "--rcvlowat -1", 9, 131_072, json!(null)),
    ];
    for (from, opts, p, want, lowat) in runs {
        let (_, ro) = pair_in(
            (
                &h.b,
                &format!("-r {} -P 1 -p @{p} -t 2 {opts} --format json", h.ip_b),
            ),
            (from, &format!("-s {} -P 1 -p @{p} -t 2", h.ip_b)),
        );
        let d: serde_json::Value = serde_json::from_str(&ro.stdout).expect("JSON");
        let rep = &d["reports"][0];
        assert_eq!(rep["params"]["recv_size"], want, "{opts} {}", ro.stdout);
        assert_eq!(rep["buffer_len"], want, "{opts}");
        assert_eq!(rep["socket"]["applied"]["rcvlowat"], lowat, "{opts}");
        let t = &rep["threads"][0];
        let (bytes, calls) = (t["bytes"].as_f64().unwrap(), t["calls"].as_f64().unwrap());
        assert!(bytes > 1e7 && calls > 0.0, "{t}");
        // Across the veth pair (the first run) reads averaged more than 64 KiB, which only
        // reads of more than 64 KiB can. (No upper bound: a receiver's window bytes also
        // count what its sockets held unread at the window's edges, which no read
        // returned; on a busy machine bytes per read came to 3 % over -b 32K.)
        if p == 1 {
            assert!(bytes / calls > 65_536.0, "reads across the veth pair: {t}");
        }
    }
}

/// Starts a receiver in each pair's `b` and, once all listen, a sender in each `a` with
/// `--start-at at`; returns each sender's document (its receiver's report included),
/// also written to `dir` as pair{i}.json.
fn run_pairs_at(hosts: &[TwoHosts], at: f64, dir: &crate::util::Scratch) -> Vec<serde_json::Value> {
    let p = port(1);
    let m = |h: &TwoHosts| format!("-m 1,*,{} -p {p} -t 2 --format json", h.ip_b);
    let receivers: Vec<Proc> = hosts
        .iter()
        .map(|h| {
            Launch::new("receiver", &format!("-r {}", m(h)))
                .in_netns(&h.b)
                .spawn()
        })
        .collect();
    for h in hosts {
        crate::util::wait_listening_in(&h.b, p - 1, Duration::from_secs(20));
    }
    let senders: Vec<Proc> = hosts
        .iter()
        .map(|h| {
            let args = format!("-s {} --start-at {at:.3}", m(h));
            Launch::new("sender", &args).in_netns(&h.a).spawn()
        })
        .collect();
    let mut docs = Vec::new();
    for (i, s) in senders.into_iter().enumerate() {
        let o = s.wait(Duration::from_secs(30));
        assert_eq!(o.code(), Some(0), "pair {i}: {o:?}");
        std::fs::write(dir.file(&format!("pair{i}.json")), &o.stdout).unwrap();
        docs.push(crate::util::json(&o));
    }
    for r in receivers {
        assert_eq!(r.wait(Duration::from_secs(30)).code(), Some(0));
    }
    docs
}

/// The bytes of `side`'s reports in document `d`.
fn side_bytes(d: &serde_json::Value, side: &str) -> u64 {
    let reports = d["reports"].as_array().unwrap();
    let of_side = reports.iter().filter(|r| r["side"] == side);
    of_side
        .map(|r| r["totals"]["bytes"].as_u64().unwrap())
        .sum()
}

/// Four pairs of hosts (each its own two namespaces) started with one `--start-at`: every
/// window, senders' and receivers', begins within 50 ms of the others and of the instant,
/// and `ntttcp merge` of the four senders' documents (each with its receiver's report)
/// sums them exactly.
#[test]
fn four_pairs_started_at_one_instant_measure_the_same_seconds_and_merge() {
    let _ports = Ports::take(1);
    let hosts: Vec<TwoHosts> = (0..4u8)
        .filter_map(|i| TwoHosts::new(&format!("f{i}"), 17 + i))
        .collect();
    if hosts.len() < 4 {
        return;
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let at = now.unwrap().as_secs_f64() + 3.0;
    let dir = crate::util::Scratch::new("four-pairs");
    let docs = run_pairs_at(&hosts, at, &dir);
    let starts: Vec<f64> = docs
        .iter()
        .flat_map(|d| d["reports"].as_array().unwrap())
        .map(|r| r["window_start_unix_s"].as_f64().unwrap())
        .collect();
    assert_eq!(
        starts.len(),
        8,
        "each sender's document has its receiver's report"
    );
    let first = starts.iter().copied().fold(f64::MAX, f64::min);
    let last = starts.iter().copied().fold(0.0, f64::max);
    let apart_ms = (last - first) * 1e3;
    assert!(
        apart_ms <= 50.0,
        "windows begin {apart_ms:.1} ms apart: {starts:?}"
    );
    assert!(
        (first - at).abs() <= 0.050,
        "they begin at --start-at: {first} vs {at}"
    );
    let files: Vec<String> = (0..4)
        .map(|i| dir.file(&format!("pair{i}.json")).display().to_string())
        .collect();
    let m = crate::util::run(
        &format!("merge --format json {}", files.join(" ")),
        Duration::from_secs(30),
    );
    assert_eq!(m.code(), Some(0), "{m:?}");
    let merged = crate::util::json(&m);
    for side in ["sender", "receiver"] {
        let sum: u64 = docs.iter().map(|d| side_bytes(d, side)).sum();
        assert_eq!(
            side_bytes(&merged, side),
            sum,
            "{side}: the merge sums exactly"
        );
    }
    assert_eq!(merged["merge"]["pairs"].as_array().unwrap().len(), 4);
    assert!(!m.stderr.contains("do not overlap"), "{}", m.stderr);
}
