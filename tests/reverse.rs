//! Reverse tests (`-R`) between two processes of the built binary and between two
//! network namespaces: the sender opens the connections, the receiver sends on them, and
//! both sides count the same bytes and say which way they went.

use std::time::Duration;

use crate::netns::TwoHosts;
use crate::util::{
    Launch, Ports, Scratch, assert_close, assert_usage_errors, assert_valid, attempt_at,
    close_or_starved, json, json_pair, json_pair_at, multi_client_at, ports_in, promise, report,
    run, spawn, validator,
};

const LIMIT: Duration = Duration::from_secs(30);

fn bytes(d: &serde_json::Value) -> f64 {
    report(d)["totals"]["bytes"].as_u64().unwrap() as f64
}

/// Both reports say the test was reversed, and each which way its own bytes went.
fn assert_reversed(s: &serde_json::Value, r: &serde_json::Value) {
    assert_eq!(report(s)["direction"], "receive", "{s}");
    assert_eq!(report(r)["direction"], "send", "{r}");
    for d in [s, r] {
        assert_eq!(report(d)["params"]["workload"]["kind"], "reverse", "{d}");
        assert_valid(&validator(), d);
    }
    // The receiver's figure is what its connections delivered (TCP_INFO), with what it
    // wrote beside it, as a sender's; the sender's is what it read.
    assert!(
        report(r)["totals"]["bytes_written"].as_u64().is_some(),
        "{r}"
    );
    assert!(report(s)["totals"]["bytes_written"].is_null(), "{s}");
}

#[test]
fn reverse_over_loopback_both_sides_count_the_same_bytes() {
    let _ports = Ports::take(1);
    for (k, (rx, tx)) in [
        ("-P 2 -t 2", "-P 2 -n 1 -t 2 -R"),
        ("-P 1 -t 2", "-P 1 -n 2 -l 3 -t 2 --reverse"),
    ]
    .into_iter()
    .enumerate()
    {
        promise(
            "reverse: sender read vs receiver delivered within 0.5 %",
            |i| {
                let (s, r) = json_pair_at(attempt_at(k, i), rx, tx);
                assert_reversed(&s, &r);
                assert!(bytes(&r) > 1e8, "loopback moves far more in 2 s: {r}");
                close_or_starved(bytes(&s), bytes(&r), 0.5, &[report(&s), report(&r)])
            },
        );
    }
}

#[test]
fn reverse_without_sync_and_in_both_layouts() {
    let _ports = Ports::take(1);
    let (s, r) = json_pair("-P 1 -t 2 -N", "-P 1 -n 1 -t 2 -N -R");
    assert_reversed(&s, &r);
    // Without sync each side times itself from its own start: rates agree, not edges.
    let rate = |d: &serde_json::Value| report(d)["totals"]["bits_per_second"].as_f64().unwrap();
    assert_close(rate(&s), rate(&r), 10.0, "reverse without sync: rates");

    let d = Scratch::new("reverse");
    let x = |n: &str| d.file(n).display().to_string();
    let r = spawn(
        "receiver",
        &ports_in(&format!("-r 127.0.0.1 -P 1 -p @11 -t 1 -x {}", x("r.xml"))),
    );
    let so = run(
        &ports_in(&format!(
            "-s 127.0.0.1 -P 1 -n 1 -p @11 -t 1 -R --format linux -x {}",
            x("s.xml")
        )),
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    // The XML files say which way their bytes went.
    for (name, way) in [("s.xml", "receive"), ("r.xml", "send")] {
        let text = d.read(name);
        let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
        let el = doc
            .root_element()
            .children()
            .find(|n| n.has_tag_name("direction"))
            .and_then(|n| n.text());
        assert_eq!(el, Some(way), "{name}:\n{text}");
    }
    assert!(
        so.stdout
            .contains("INFO: Direction: receive (reverse test, -R"),
        "{}",
        so.stdout
    );
    assert!(
        ro.stdout.contains("\nDirection: send (reverse test, -R"),
        "{}",
        ro.stdout
    );
    // The Linux layout's Totals block is unchanged for the parsers that read it.
    assert!(so.stdout.contains("#####  Totals:  #####"), "{}", so.stdout);
}

#[test]
fn a_held_receiver_turns_around_for_one_test_only() {
    let _ports = Ports::take(1);
    let h = spawn(
        "held receiver",
        &ports_in("-r 127.0.0.1 -P 1 -p @1 -t 1 -H --format jsonl"),
    );
    for extra in ["", "-R", ""] {
        let o = run(
            &ports_in(&format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 1 {extra}")),
            LIMIT,
        );
        assert_eq!(o.code(), Some(0), "{extra}: {o:?}");
    }
    let reports = h.summaries(3, LIMIT);
    let ways: Vec<&serde_json::Value> = reports.iter().map(|r| &r["direction"]).collect();
    assert_eq!(ways, ["receive", "send", "receive"], "{reports:?}");
}

/// The receiver sent to both senders: its total is theirs together within 1 % (a promise:
/// a starved run says so), over its four connections.
#[test]
fn a_multi_client_receiver_sends_to_two_senders_at_once() {
    let _ports = Ports::take(1);
    promise("two senders vs the receiver within 1 %", |i| {
        let (ao, b, ro) = multi_client_at(attempt_at(0, i), "-R");
        let (ad, bd, rd) = (json(&ao), json(&b), json(&ro));
        assert_reversed(&ad, &rd);
        assert_reversed(&bd, &rd);
        assert_eq!(report(&rd)["connections"], 4, "{rd}");
        let reports = [report(&ad), report(&bd), report(&rd)];
        close_or_starved(bytes(&ad) + bytes(&bd), bytes(&rd), 1.0, &reports)
    });
}

#[test]
fn reverse_is_a_sender_option_for_tcp() {
    assert_usage_errors(&[
        ("-r 127.0.0.1 -R", "-R/--reverse applies to the sender"),
        (
            "-s 127.0.0.1 -R -u",
            "-R/--reverse cannot be combined with -u",
        ),
        (
            "-s 127.0.0.1 -R -Z",
            "-R/--reverse cannot be combined with -Z",
        ),
        ("-s 127.0.0.1 -R --rr", "'--rr"),
        (
            "-s -m 1,*,127.0.0.1 -to 2000 --reverse",
            "--reverse needs ntttcp-for-linux's sync",
        ),
    ]);
}

#[test]
fn reverse_between_namespaces_flows_from_the_receiver_ipv4_and_ipv6() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("rv", 12) else {
        return;
    };
    h.add_ipv6("fd00:201:12");
    // Only the receiver's way out is shaped: a test whose data flowed the usual way
    // would not be held to it.
    h.exec(
        &h.b,
        &format!(
            "tc qdisc add dev {} root tbf rate 200mbit burst 64kb latency 50ms",
            h.dev_b
        ),
    );
    for (target, bind, six, k) in [
        (h.ip_b.clone(), h.ip_b.clone(), "", 1),
        (
            "fd00:201:12::2".to_string(),
            "[fd00:201:12::2]".to_string(),
            "-6",
            5,
        ),
    ] {
        let m = ports_in(&format!("-P 1 -p @{k} -t 2 {six} --format json"));
        let r = Launch::new("receiver", &format!("-r {bind} {m}"))
            .in_netns(&h.b)
            .spawn();
        let so = Launch::new("sender", &format!("-s {target} -n 2 {m} -R"))
            .in_netns(&h.a)
            .spawn()
            .wait(LIMIT);
        let ro = r.wait(LIMIT);
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
        let (s, r) = (json(&so), json(&ro));
        assert_reversed(&s, &r);
        let gbit = report(&s)["totals"]["bits_per_second"].as_f64().unwrap() / 1e9;
        assert!(
            gbit > 0.1 && gbit <= 0.21,
            "{six} the receiver's shaped way out: {gbit} Gbit/s"
        );
        assert_close(bytes(&s), bytes(&r), 1.0, "reverse across veth: both sides");
    }
}
