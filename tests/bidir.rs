//! Both-ways tests (`--bidir`) between two processes of the built binary, in one process
//! (`--loopback`) and between two network namespaces: every connection carries data
//! each way, each side reports each way on its own, and the two sides agree on both.

use std::time::Duration;

use crate::netns::TwoHosts;
use crate::util::{
    Attempt, Launch, Ports, Scratch, assert_close, assert_usage_errors, assert_valid, attempt_at,
    close_or_starved, covered, json, json_pair, json_pair_at, multi_client_at, parse_tables,
    ports_in, promise, report, rss_kib, run, spawn, starved, validator,
};

const LIMIT: Duration = Duration::from_secs(30);

/// A side's report of the way `dir` ("send" or "receive").
fn way<'a>(d: &'a serde_json::Value, dir: &str) -> &'a serde_json::Value {
    d["reports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["direction"] == dir)
        .unwrap_or_else(|| panic!("no {dir} report in {d}"))
}

fn bytes(r: &serde_json::Value) -> f64 {
    r["totals"]["bytes"].as_u64().unwrap() as f64
}

fn gbit(r: &serde_json::Value) -> f64 {
    r["totals"]["bits_per_second"].as_f64().unwrap() / 1e9
}

/// Each side has a report of each way, in order (its usual way first), that says it was
/// a both-ways test; the sending ways count what was delivered, with what was written
/// beside it, the receiving ways what was read.
fn assert_both_ways(s: &serde_json::Value, r: &serde_json::Value) {
    for (d, order, side) in [
        (s, ["send", "receive"], "sender"),
        (r, ["receive", "send"], "receiver"),
    ] {
        // A sender's document also holds the reports its receiver sent back, after its own.
        let own: Vec<&serde_json::Value> = d["reports"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["side"] == side)
            .collect();
        let ways: Vec<&serde_json::Value> = own.iter().map(|r| &r["direction"]).collect();
        assert_eq!(ways, order, "{d}");
        for rep in d["reports"].as_array().unwrap() {
            assert_eq!(rep["params"]["workload"]["kind"], "bidir", "{rep}");
            assert_eq!(rep["end"]["kind"], "completed", "{rep}");
        }
        assert_valid(&validator(), d);
        assert!(way(d, "send")["totals"]["bytes_written"].as_u64().is_some());
        assert!(way(d, "receive")["totals"]["bytes_written"].is_null());
    }
}

/// Whether both ways agree within `pct` between the two sides (the promise), with the run's
/// own word on whether it was starved when they do not.
fn agree(s: &serde_json::Value, r: &serde_json::Value, pct: f64) -> Attempt {
    let gap = |a: f64, b: f64| (a - b).abs() / a.max(b) * 100.0;
    let out = gap(bytes(way(s, "send")), bytes(way(r, "receive")));
    let back = gap(bytes(way(r, "send")), bytes(way(s, "receive")));
    if out <= pct && back <= pct {
        return Ok(());
    }
    let reports = [&s["reports"][0], &r["reports"][0]];
    Err((
        format!("apart by {out:.3} % and {back:.3} %"),
        starved(&reports),
    ))
}

#[test]
fn bidir_over_loopback_both_ways_agree() {
    let _ports = Ports::take(1);
    for (k, (rx, tx)) in [
        ("-P 2 -t 2", "-P 2 -n 1 -t 2 --bidir"),
        ("-P 1 -t 2", "-P 1 -n 2 -l 2 -t 2 --bidir"),
    ]
    .into_iter()
    .enumerate()
    {
        promise("both ways within 0.5 %", |i| {
            let (s, r) = json_pair_at(attempt_at(k, i), rx, tx);
            assert_both_ways(&s, &r);
            let conns = way(&r, "receive")["connections"].as_u64().unwrap();
            assert_eq!(way(&r, "send")["connections"], conns, "{r}");
            // Loopback moves far more than 100 MB each way, unless the run was starved.
            let least = [&s, &r]
                .iter()
                .flat_map(|d| ["send", "receive"].map(|dir| bytes(way(d, dir))))
                .fold(f64::MAX, f64::min);
            if least <= 1e8 {
                let reports = [report(&s), report(&r)];
                return Err((format!("{least} bytes one way"), starved(&reports)));
            }
            agree(&s, &r, 0.5)
        });
    }
}

#[test]
fn bidir_without_sync_and_in_the_windows_dialect() {
    let _ports = Ports::take(1);
    let (s, r) = json_pair("-P 1 -t 2 -N", "-P 1 -n 1 -t 2 -N --bidir");
    assert_both_ways(&s, &r);
    // Without sync each side times itself from its own start: rates agree, not edges.
    for (a, b) in [("send", "receive"), ("receive", "send")] {
        assert_close(gbit(way(&s, a)), gbit(way(&r, b)), 10.0, a);
    }
    let r = spawn("receiver", &ports_in("-r -m 1,*,127.0.0.1 -p @11 -ns -t 1"));
    let so = run(
        &ports_in("-s -m 1,*,127.0.0.1 -p @11 -ns -t 1 --bidir"),
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    for o in [&so, &ro] {
        let tables = parse_tables(&o.stdout);
        assert_eq!(tables.len(), 2, "{}", o.stdout);
        assert!(tables.iter().all(|t| t.meg > 10.0), "{}", o.stdout);
        assert_eq!(o.stdout.matches("(both ways at once, --bidir").count(), 2);
    }
}

#[test]
fn loopback_bidir_prints_four_reports_in_every_layout() {
    let line = "--loopback -P 1 -n 1 -p @1 -t 1 --bidir";
    let _ports = Ports::take(1);
    let o = run(&ports_in(&format!("{line} --format json")), LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let d = json(&o);
    let seen: Vec<(String, String)> = d["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["side"].to_string(), r["direction"].to_string()))
        .collect();
    let q = |a: &str, b: &str| (format!("\"{a}\""), format!("\"{b}\""));
    assert_eq!(
        seen,
        [
            q("sender", "send"),
            q("sender", "receive"),
            q("receiver", "receive"),
            q("receiver", "send"),
        ]
    );
    assert_valid(&validator(), &d);

    let o = run(&ports_in(line), LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(parse_tables(&o.stdout).len(), 4, "{}", o.stdout);
    for heading in [
        "Direction: send (both ways at once, --bidir: this host sent to the receiver)",
        "Direction: receive (both ways at once, --bidir: the receiver sent to this host)",
        "Direction: receive (both ways at once, --bidir: the sender sent to this host)",
        "Direction: send (both ways at once, --bidir: this host sent to the sender)",
    ] {
        assert_eq!(
            o.stdout.matches(heading).count(),
            1,
            "{heading}\n{}",
            o.stdout
        );
    }

    let o = run(&ports_in(&format!("{line} --format linux")), LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(o.stdout.matches("#####  Totals:  #####").count(), 4);
    assert_eq!(o.stdout.matches("INFO: Direction: ").count(), 4);
}

#[test]
fn files_hold_the_usual_way_and_intervals_both() {
    let _ports = Ports::take(1);
    let d = Scratch::new("bidir");
    let f = |n: &str| d.file(n).display().to_string();
    let r = spawn("receiver", &ports_in("-r 127.0.0.1 -P 1 -p @1 -t 2"));
    let so = run(
        &ports_in(&format!(
            "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 --bidir --interval 1 --format jsonl -x {} -j {} \
             --xml-windows {}",
            f("s.xml"),
            f("s.json"),
            f("w.xml")
        )),
        LIMIT,
    );
    assert_eq!(r.wait(LIMIT).code(), Some(0));
    assert_eq!(so.code(), Some(0), "{so:?}");
    let lines: Vec<serde_json::Value> = so
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let of = |kind: &str, dir: &str| -> Vec<&serde_json::Value> {
        // The sender's own lines (its receiver's summaries follow them).
        lines
            .iter()
            .filter(|l| l["type"] == kind)
            .filter(|l| l["side"] == "sender" || l["report"]["side"] == "sender")
            .filter(|l| l["direction"] == dir || l["report"]["direction"] == dir)
            .collect()
    };
    for dir in ["send", "receive"] {
        let ivs = of("interval", dir);
        assert!(ivs.len() >= 2, "{dir}: {}", so.stdout);
        let summed: f64 = ivs
            .iter()
            .flat_map(|l| l["thread_bytes"].as_array().unwrap())
            .map(|b| b.as_u64().unwrap() as f64)
            .sum();
        let summary = of("summary", dir);
        assert_eq!(summary.len(), 1, "{dir}: {}", so.stdout);
        // The intervals tile the window up to the last one's end (`covered`).
        let report = &summary[0]["report"];
        assert_close(summed, bytes(report) * covered(&ivs, report), 1.0, dir);
    }
    // ntttcp-for-linux's files: one document each, of the sender's usual way, saying so.
    let x = d.read("s.xml");
    let doc = roxmltree::Document::parse(&x).expect("well-formed XML");
    let el = |tag: &str| {
        doc.root_element()
            .children()
            .find(|n| n.has_tag_name(tag))
            .and_then(|n| n.text().map(str::to_string))
    };
    assert_eq!(el("direction").as_deref(), Some("send"), "{x}");
    let j: serde_json::Value = serde_json::from_str(&d.read("s.json")).expect("valid JSON");
    assert_eq!(j["ntttcps"]["direction"], "send", "{j}");
    // NTttcp's XML is appended to: both ways, each document on its own.
    let w = d.read("w.xml");
    let docs: Vec<_> = w.split_inclusive("</ntttcps>\n").collect();
    assert_eq!(docs.len(), 2, "{w}");
    let dirs: Vec<String> = docs
        .iter()
        .map(|t| {
            let doc = roxmltree::Document::parse(t).expect("well-formed XML");
            let n = doc
                .root_element()
                .children()
                .find(|n| n.has_tag_name("direction"));
            n.and_then(|n| n.text()).unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(dirs, ["send", "receive"]);
}

#[test]
fn a_held_receiver_serves_both_ways_for_one_test_only() {
    let _ports = Ports::take(1);
    let h = spawn(
        "held receiver",
        &ports_in("-r 127.0.0.1 -P 1 -p @1 -t 1 -H --format jsonl"),
    );
    for extra in ["", "--bidir", ""] {
        let o = run(
            &ports_in(&format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 1 {extra}")),
            LIMIT,
        );
        assert_eq!(o.code(), Some(0), "{extra}: {o:?}");
    }
    let reports = h.summaries(4, LIMIT);
    let ways: Vec<String> = reports
        .iter()
        .map(|r| format!("{} {}", r["direction"], r["params"]["workload"]["kind"]))
        .collect();
    assert_eq!(
        ways,
        [
            r#""receive" "stream""#,
            r#""receive" "bidir""#,
            r#""send" "bidir""#,
            r#""receive" "stream""#
        ],
        "{reports:?}"
    );
}

/// Both ways agree within 1 % between the receiver and the two senders together (a
/// promise: a starved run says so), over the receiver's four connections.
#[test]
fn a_multi_client_receiver_exchanges_with_two_senders_at_once() {
    let _ports = Ports::take(1);
    promise("two senders' ways within 1 %", |i| {
        let (ao, b, ro) = multi_client_at(attempt_at(0, i), "--bidir");
        let (ad, bd, rd) = (json(&ao), json(&b), json(&ro));
        assert_both_ways(&ad, &rd);
        assert_both_ways(&bd, &rd);
        assert_eq!(way(&rd, "send")["connections"], 4, "{rd}");
        let both = |dir: &str| bytes(way(&ad, dir)) + bytes(way(&bd, dir));
        let reports = [report(&ad), report(&bd), report(&rd)];
        let into = bytes(way(&rd, "receive"));
        close_or_starved(both("send"), into, 1.0, &reports).and_then(|()| {
            close_or_starved(bytes(way(&rd, "send")), both("receive"), 1.0, &reports)
        })
    });
}

#[test]
fn a_thousand_connections_share_one_receive_buffer_per_thread() {
    let _ports = Ports::take(1);
    let r = Launch::new("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 3")
        .nofile(4096)
        .spawn();
    let s = Launch::new(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -l 1000 -p @1 -t 3 --bidir --interval 1 --format jsonl",
    )
    .nofile(4096)
    .spawn();
    // Measured while both ways move on every connection.
    s.wait_for_stdout("\"type\":\"interval\"", LIMIT);
    let kib = rss_kib(s.pid());
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    // A 64 KiB buffer per connection would be 64 MiB.
    assert!(kib < 24 * 1024, "the sender holds {kib} KiB");
}

#[test]
fn bidir_is_a_sender_option_for_tcp() {
    assert_usage_errors(&[
        ("-r 127.0.0.1 --bidir", "--bidir applies to the sender"),
        (
            "-s 127.0.0.1 --bidir -u",
            "--bidir cannot be combined with -u",
        ),
        (
            "-s 127.0.0.1 --bidir -B 1G",
            "--bidir cannot be combined with -B",
        ),
        ("-s 127.0.0.1 --bidir -R", "cannot be used with '-R'"),
        ("-s 127.0.0.1 --bidir --rr", "'--rr"),
        (
            "-s -m 1,*,127.0.0.1 -to 2000 --bidir",
            "--bidir needs ntttcp-for-linux's sync",
        ),
    ]);
}

#[test]
fn bidir_between_namespaces_measures_each_way_ipv4_and_ipv6() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("bd", 13) else {
        return;
    };
    h.add_ipv6("fd00:201:13");
    // Each way shaped to its own rate, eight times apart: a report of one way that
    // counted the other would be held to the wrong one. Short queues, since each way's
    // ACKs wait in the other way's queue.
    for (ns, dev, rate) in [(&h.a, &h.dev_a, 400), (&h.b, &h.dev_b, 50)] {
        h.exec(
            ns,
            &format!("tc qdisc add dev {dev} root tbf rate {rate}mbit burst 64kb latency 20ms"),
        );
    }
    for (k, (target, bind, six)) in [
        (h.ip_b.clone(), h.ip_b.clone(), ""),
        (
            "fd00:201:13::2".to_string(),
            "[fd00:201:13::2]".to_string(),
            "-6",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        promise(&format!("{six} both ways within 1 %"), |i| {
            let at = attempt_at(k, i);
            let m = ports_in(&format!("-P 1 -p @{at} -t 3 {six} --format json"));
            let r = Launch::new("receiver", &format!("-r {bind} {m}"))
                .in_netns(&h.b)
                .spawn();
            let so = Launch::new("sender", &format!("-s {target} -n 2 {m} --bidir"))
                .in_netns(&h.a)
                .spawn()
                .wait(LIMIT);
            let ro = r.wait(LIMIT);
            assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
            let (s, r) = (json(&so), json(&ro));
            assert_both_ways(&s, &r);
            let (out, back) = (gbit(way(&s, "send")), gbit(way(&s, "receive")));
            // Within each way's own cap. Neither is held to a floor near its cap: each
            // way's ACKs queue behind the other way's data, and a busy machine measured
            // the 400 Mbit/s way as low as 0.045 Gbit/s.
            assert!(out > 0.005 && out <= 0.42, "{six} out at 400 Mbit/s: {out}");
            assert!(
                back > 0.005 && back <= 0.0525,
                "{six} back at 50 Mbit/s: {back}"
            );
            agree(&s, &r, 1.0)
        });
    }
}
