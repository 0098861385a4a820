//! Request/response (`--rr`) between two processes of the built binary: transactions
//! counted on both sides, latency percentiles, every output format, and a receiver that
//! serves several senders (`-M`/`-L`) and several tests (`-H`), and between two
//! network namespaces over a shaped link, IPv4 and IPv6.

use std::time::Duration;

use crate::netns::TwoHosts;
use crate::util::{
    Launch, Ports, Scratch, assert_usage_errors, assert_valid, attempt_at, json, json_pair,
    multi_client_at, port, ports_in, promise, report, run, shifted, socket_flags_at, spawn,
    starved, validator,
};

const LIMIT: Duration = Duration::from_secs(30);

/// The `rr` object of a one-report document.
fn rr(d: &serde_json::Value) -> &serde_json::Value {
    &d["reports"][0]["rr"]
}

/// Percentiles must rise from min to max, and the mean lie between them.
fn assert_ordered(l: &serde_json::Value) {
    let v = |k: &str| {
        l[k].as_f64()
            .unwrap_or_else(|| panic!("latency_us.{k} in {l}"))
    };
    let chain = [v("min"), v("p50"), v("p90"), v("p99"), v("p999"), v("max")];
    assert!(chain.windows(2).all(|w| w[0] <= w[1]), "{l}");
    assert!(v("min") <= v("mean") && v("mean") <= v("max"), "{l}");
    assert!(v("min") > 0.0, "{l}");
}

/// Both sides count the transactions independently (the sender its completed round
/// trips, the receiver the request bytes it read / size); they differ by what was in
/// flight at the two windows' edges, at most one request per connection each way and
/// what moved while only one window was open.
fn assert_both_count(s: &serde_json::Value, r: &serde_json::Value, conns: u64) {
    let n = |d: &serde_json::Value| rr(d)["transactions"].as_u64().unwrap();
    let (sn, rn) = (n(s), n(r));
    assert!(sn > 0, "no transaction completed");
    let slack = conns + sn / 100;
    assert!(
        sn.abs_diff(rn) <= slack,
        "sender {sn} vs receiver {rn} transactions"
    );
    assert_eq!(
        r["reports"][0]["params"]["workload"]["kind"],
        "request_response"
    );
    assert!(
        rr(r)["latency_us"].is_null(),
        "the receiver does not time them"
    );
    assert_ordered(&rr(s)["latency_us"]);
    let v = validator();
    assert_valid(&v, s);
    assert_valid(&v, r);
}

#[test]
fn one_connection_per_thread_blocking_round_trips() {
    let _ports = Ports::take(1);
    let (s, r) = json_pair("-P 2 -t 2", "-P 2 -n 1 -t 2 --rr 64");
    assert_both_count(&s, &r, 2);
    let n = rr(&s)["transactions"].as_u64().unwrap();
    assert!(
        n > 1000,
        "a loopback round trip takes far less than a millisecond: {n}"
    );
    assert_eq!(rr(&s)["size"], 64);
    // Each thread's row has its own count and percentiles.
    for t in s["reports"][0]["threads"].as_array().unwrap() {
        assert!(t["rr"]["transactions"].as_u64().unwrap() > 0, "{t}");
        assert_ordered(&t["rr"]["latency_us"]);
    }
}

#[test]
fn a_sole_connection_is_answered_with_blocking_calls_two_on_a_port_by_its_runtime() {
    let _ports = Ports::take(1);
    let blocking = |flags: &[u32]| {
        let nb = libc::O_NONBLOCK as u32;
        flags.iter().filter(|&&f| f & nb == 0).count()
    };
    for (conns, answered_blocking) in [(1, 1), (2, 0)] {
        let r = spawn("receiver", &ports_in("-r -m 1,*,127.0.0.1 -p @1 -t 3"));
        let s = spawn(
            "sender",
            &ports_in(&format!(
                "-s -m 1,*,127.0.0.1 -p @1 -n {conns} -t 3 --rr 64"
            )),
        );
        // The receiver's data sockets over their life (the answer is chosen at the first
        // request, once the test's connections are in): until one answers blocking, or
        // they are gone.
        let (mut most, mut samples) = (0, 0);
        loop {
            let wait = if samples == 0 {
                LIMIT
            } else {
                Duration::from_secs(1)
            };
            let flags = socket_flags_at(r.pid(), port(1), wait);
            if flags.is_empty() {
                break;
            }
            samples += 1;
            most = most.max(blocking(&flags));
            if most > 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
        assert!(samples > 0, "-n {conns}: no data connection seen");
        assert_eq!(most, answered_blocking, "-n {conns}: {samples} samples");
    }
}

#[test]
fn several_connections_per_thread_and_a_large_request() {
    let _ports = Ports::take(1);
    let (s, r) = json_pair("-P 1 -t 2", "-P 1 -n 2 -l 3 -t 2 --rr 256K");
    assert_both_count(&s, &r, 6);
    assert_eq!(s["reports"][0]["connections"], 6);
    // A response is as large as its request: the receiver read 256 KiB per transaction.
    let bytes = r["reports"][0]["totals"]["bytes"].as_u64().unwrap();
    let n = rr(&r)["transactions"].as_u64().unwrap();
    assert_eq!(bytes / (256 * 1024), n);
}

#[test]
fn every_human_and_file_format_carries_the_figures() {
    let _ports = Ports::take(1);
    let d = Scratch::new("rr");
    let f = |n: &str| d.file(n).display().to_string();
    let r = spawn(
        "receiver",
        &ports_in(&format!("-r 127.0.0.1 -P 1 -p @1 -t 2 -x {}", f("r.xml"))),
    );
    let so = run(
        &ports_in(&format!(
            "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 --rr 100 --format linux -x {}",
            f("s.xml")
        )),
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    // Linux layout: the sender's lines.
    assert!(so.stdout.contains("transactions\t:"), "{}", so.stdout);
    assert!(so.stdout.contains("latency\t:p50 "), "{}", so.stdout);
    // Windows tables: the receiver's table, latency left to the sender.
    let row = ro
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Total "))
        .unwrap_or_else(|| panic!("no Total row:\n{}", ro.stdout));
    assert!(row.contains("n/a"), "{row}");
    // XML files parse; the sender's has percentiles, the receiver's leaves them out.
    for (name, timed) in [("s.xml", true), ("r.xml", false)] {
        let text = d.read(name);
        let x = roxmltree::Document::parse(&text).expect("well-formed XML");
        let block = x
            .root_element()
            .children()
            .find(|n| n.has_tag_name("request_response"))
            .unwrap_or_else(|| panic!("no <request_response> in {name}:\n{text}"));
        let get = |tag: &str| {
            block
                .children()
                .find(|n| n.has_tag_name(tag))
                .and_then(|n| n.text())
        };
        assert_eq!(get("request_size"), Some("100"));
        assert!(get("transactions").unwrap().parse::<u64>().unwrap() > 0);
        assert_eq!(get("latency_p50").is_some(), timed, "{name}:\n{text}");
    }
}

#[test]
fn jsonl_intervals_add_up_to_the_transactions() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", &ports_in("-r 127.0.0.1 -P 1 -p @1 -t 3"));
    let so = run(
        &ports_in("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 3 --rr 512 --interval 1 --format jsonl"),
        LIMIT,
    );
    assert_eq!(r.wait(LIMIT).code(), Some(0));
    assert_eq!(so.code(), Some(0), "{so:?}");
    let lines: Vec<serde_json::Value> = so
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let intervals: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "interval").collect();
    assert!(intervals.len() >= 3, "{}", so.stdout);
    let mut sum = 0;
    for iv in &intervals {
        sum += iv["rr"]["transactions"].as_u64().unwrap();
        let l = &iv["rr"]["latency_us"];
        let v = |k: &str| l[k].as_f64().unwrap();
        assert!(v("p50") <= v("p99") && v("p99") <= v("max"), "{iv}");
    }
    let summary = lines.iter().find(|l| l["type"] == "summary").unwrap();
    let total = summary["report"]["rr"]["transactions"].as_u64().unwrap();
    // The last interval ends with the window, a sampling apart from its edge.
    assert!(
        sum.abs_diff(total) <= 2 + total / 100,
        "intervals {sum} vs total {total}"
    );
}

#[test]
fn a_multi_client_receiver_echoes_two_senders_and_a_held_one_serves_again() {
    let _ports = Ports::take(1);
    // The senders' transactions together are the receiver's within 1 % and the four in
    // flight (a promise: a starved run says so).
    promise("two senders' transactions vs the receiver's", |i| {
        let (ao, b, ro) = multi_client_at(attempt_at(0, i), "--rr 32");
        let (ad, bd, rd) = (json(&ao), json(&b), json(&ro));
        let n = |d: &serde_json::Value| rr(d)["transactions"].as_u64().unwrap();
        let (both, got) = (n(&ad) + n(&bd), n(&rd));
        if both.abs_diff(got) <= 4 + both / 100 {
            return Ok(());
        }
        let reports = [report(&ad), report(&bd), report(&rd)];
        Err((
            format!("senders {both} vs receiver {got}"),
            starved(&reports),
        ))
    });

    // -H: the same receiver process answers a plain test and then a --rr one.
    let h = spawn(
        "held receiver",
        &ports_in("-r 127.0.0.1 -P 1 -p @11 -t 1 -H --format jsonl"),
    );
    for extra in ["", "--rr 8"] {
        let o = run(
            &ports_in(&format!("-s 127.0.0.1 -P 1 -n 1 -p @11 -t 1 {extra}")),
            LIMIT,
        );
        assert_eq!(o.code(), Some(0), "{extra}: {o:?}");
    }
    let reports = h.summaries(2, LIMIT);
    assert!(reports[0]["rr"].is_null(), "the plain test: {reports:?}");
    assert_eq!(reports[1]["rr"]["size"], 8, "{reports:?}");
}

#[test]
fn rr_is_a_sender_option_for_tcp_bulk_flags_are_refused() {
    assert_usage_errors(&[
        ("-r 127.0.0.1 --rr", "--rr applies to the sender"),
        ("-s 127.0.0.1 --rr 0", "invalid value '0' for '--rr'"),
        ("-s 127.0.0.1 --rr 17M", "for '--rr'"),
        ("-s 127.0.0.1 --rr -u", "--rr cannot be combined with -u"),
        ("-s 127.0.0.1 --rr -Z", "--rr cannot be combined with -Z"),
        ("-s 127.0.0.1 --rr -B 1G", "--rr cannot be combined with -B"),
        (
            "-s -m 1,*,127.0.0.1 -to 2000 --rr",
            "--rr needs ntttcp-for-linux's sync",
        ),
    ]);
}

#[test]
fn windows_dialect_lines_without_sync_run_request_response() {
    let _ports = Ports::take(1);
    let r = spawn(
        "receiver",
        &ports_in("-r -m 1,*,127.0.0.1 -p @1 -ns -t 2 --format json"),
    );
    let so = run(
        &ports_in("-s -m 1,*,127.0.0.1 -p @1 -ns -t 2 --rr 10 --format json"),
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let (s, r) = (json(&so), json(&ro));
    assert!(rr(&s)["transactions"].as_u64().unwrap() > 100, "{s}");
    assert_eq!(rr(&r)["size"], 10, "{r}");
    assert_ordered(&rr(&s)["latency_us"]);
}

#[test]
fn without_sync_the_header_alone_tells_our_receiver_to_echo() {
    let _ports = Ports::take(1);
    let (s, r) = json_pair("-P 1 -t 2 -N", "-P 1 -n 1 -t 2 -N --rr 10");
    let n = |d: &serde_json::Value| rr(d)["transactions"].as_u64().unwrap();
    assert!(n(&s) > 1000, "{s}");
    // Without sync each side runs its own clock from its own start: the counts agree
    // by rate, not by edge.
    let rate = |d: &serde_json::Value| rr(d)["transactions_per_second"].as_f64().unwrap();
    let (sr, rr_) = (rate(&s), rate(&r));
    assert!(
        (sr - rr_).abs() <= 0.25 * sr,
        "sender {sr}/s vs receiver {rr_}/s"
    );
}

#[test]
fn bulk_tests_report_tcp_round_trip_times_on_both_sides_and_udp_none() {
    let _ports = Ports::take(1);
    let (s, r) = json_pair("-P 2 -t 2", "-P 2 -n 1 -t 2");
    for d in [&s, &r] {
        let rtt = &d["reports"][0]["rtt_us"];
        let v = |k: &str| rtt[k].as_f64().unwrap_or_else(|| panic!("rtt_us.{k}: {d}"));
        // Two connections, looked at half a second in and then every second.
        assert!(rtt["samples"].as_u64().unwrap() >= 2, "{rtt}");
        assert!(v("p50") <= v("p99") && v("p99") <= v("max"), "{rtt}");
        assert!(v("p50") > 0.0 && v("p50") < 10_000.0, "loopback: {rtt}");
        assert_valid(&validator(), d);
    }
    let (s, r) = json_pair("-P 1 -t 1 -u", "-P 1 -n 1 -t 1 -u");
    for d in [&s, &r] {
        assert!(d["reports"][0]["rtt_us"].is_null(), "{d}");
    }
}

/// The round trip of one `size`-byte request and its response, each way through a
/// token bucket of `rate` bits/s with a `burst` of bytes let through at once, counting
/// each segment's 66 bytes of Ethernet, IPv4 and TCP headers (1448-byte payloads).
fn shaped_round_trip_ms(size: f64, rate: f64, burst: f64) -> f64 {
    let wire = size + (size / 1448.0).ceil() * 66.0;
    2.0 * (wire - burst).max(0.0) * 8.0 / rate * 1000.0
}

#[test]
fn latency_between_namespaces_follows_a_shaped_link_ipv4_and_ipv6() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("rr", 11) else {
        return;
    };
    h.add_ipv6("fd00:201:11");
    // 100 Mbit/s both ways, an 8 KiB burst: a 64 KiB request and its response take
    // about 10 ms; a 1-byte one passes within the burst.
    for (ns, dev) in [(&h.a, &h.dev_a), (&h.b, &h.dev_b)] {
        h.exec(
            ns,
            &format!("tc qdisc add dev {dev} root tbf rate 100mbit burst 8kb latency 200ms"),
        );
    }
    let want = shaped_round_trip_ms(65536.0, 100e6, 8192.0);
    for (target, bind, six, k) in [
        (h.ip_b.clone(), h.ip_b.clone(), "", 1),
        (
            "fd00:201:11::2".into(),
            "[fd00:201:11::2]".to_string(),
            "-6",
            5,
        ),
    ] {
        for (size, far) in [("64K", true), ("1", false)] {
            let m = ports_in(&format!("-P 1 -p @{k} -t 2 {six} --format json"));
            let r = Launch::new("receiver", &format!("-r {bind} {m}"))
                .in_netns(&h.b)
                .spawn();
            let so = Launch::new("sender", &format!("-s {target} -n 1 {m} --rr {size}"))
                .in_netns(&h.a)
                .spawn()
                .wait(LIMIT);
            let ro = r.wait(LIMIT);
            assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
            let (sd, rd) = (json(&so), json(&ro));
            assert_both_count(&sd, &rd, 1);
            let p50_ms = rr(&sd)["latency_us"]["p50"].as_f64().unwrap() / 1000.0;
            eprintln!("{six} --rr {size}: p50 {p50_ms:.3} ms (shaped: {want:.3} ms)");
            if far {
                // Shaping only adds: a busy machine may add a little more, never less.
                assert!(
                    p50_ms >= 0.85 * want && p50_ms <= 1.6 * want,
                    "{six} --rr 64K p50 {p50_ms:.2} ms, the shaped link gives {want:.2} ms"
                );
            } else {
                assert!(p50_ms < 0.2 * want, "{six} --rr 1 p50 {p50_ms:.2} ms");
            }
        }
        bulk_round_trips_are_the_links(&h, &target, &bind, six, k);
    }
}

/// A bulk test over the shaped link: with the link full its queue holds milliseconds of
/// data (about 3 ms measured on an idle machine, where the unshaped path's round trip is
/// tens of microseconds), so the round trips TCP_INFO reports are a millisecond or more,
/// and the queue tbf allows (200 ms) bounds them. A promise: a sender that did not keep
/// the link full (under 90 % of its 100 Mbit/s) left the queue short, and its round
/// trips with it: such a run was starved, not wrong.
fn bulk_round_trips_are_the_links(h: &TwoHosts, target: &str, bind: &str, six: &str, k: u16) {
    let what = format!("{six} bulk round trips over the shaped link");
    promise(&what, |i| {
        let args = format!("-P 1 -p @{k} -t 2 {six} --format json");
        let m = ports_in(&shifted(&args, 50 * i as u16));
        let r = Launch::new("receiver", &format!("-r {bind} {m}"))
            .in_netns(&h.b)
            .spawn();
        let so = Launch::new("sender", &format!("-s {target} -n 1 {m}"))
            .in_netns(&h.a)
            .spawn()
            .wait(LIMIT);
        let ro = r.wait(LIMIT);
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
        let sd = json(&so);
        let rtt = &report(&sd)["rtt_us"];
        let p50_ms = rtt["p50"].as_f64().unwrap() / 1000.0;
        let mbits = report(&sd)["totals"]["bits_per_second"].as_f64().unwrap() / 1e6;
        eprintln!("{six} bulk: RTT {rtt} at {mbits:.1} Mbit/s");
        if (1.0..=250.0).contains(&p50_ms) {
            return Ok(());
        }
        let short = (mbits < 90.0).then(|| format!("the link not kept full: {mbits:.1} Mbit/s"));
        Err((format!("bulk RTT {rtt}"), short))
    });
}

/// A latency test without -m, -P or -n runs one connection, as netperf, neper and
/// sockperf run one flow, and says so; against a default receiver (16 ports) too.
#[test]
fn a_latency_test_without_a_layout_runs_one_connection_and_says_so() {
    let _ports = Ports::take(1);
    let (s, r) = json_pair("-t 2", "-t 2 --rr");
    assert_both_count(&s, &r, 1);
    let params = &s["reports"][0]["params"];
    assert_eq!(params["latency_default"], true, "{params}");
    assert_eq!(s["reports"][0]["threads"].as_array().unwrap().len(), 1);
    let o = run(&ports_in("--loopback -p @1 -t 1 --rr 64"), LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(
        o.stdout
            .contains("1 connection: a latency test's default without -m, -P or -n"),
        "{}",
        o.stdout
    );
    // Any layout flag keeps its meaning: -P 2 -n 1 is two connections, and no line.
    let o = run(
        &ports_in("--loopback -p @1 -t 1 --rr -P 2 -n 1 --format json"),
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let d = json(&o);
    assert_eq!(d["reports"][0]["connections"], 2, "{d}");
    assert_eq!(d["reports"][0]["params"]["latency_default"], false);
}
