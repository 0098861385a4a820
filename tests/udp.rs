//! UDP (`-u`) on loopback: real sender and receiver processes, the receiver's loss,
//! duplicate, reordering and jitter accounting, datagram sizing, and datagrams from a
//! tool that does not stamp them. Loss across a lossy link is in `netns`.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{
    Ports, Scratch, assert_close, assert_valid, parse_tables, port, ports_in, promise, run, spawn,
    validator,
};

const LIMIT: Duration = Duration::from_secs(30);

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn udp_sender_and_receiver_processes_account_every_datagram() {
    let _ports = Ports::take(1);
    let _quiet = crate::util::exclusive();
    let dir = Scratch::new("udp-files");
    let (x, j, w) = (dir.file("r.xml"), dir.file("r.json"), dir.file("rw.xml"));
    // A deep receive buffer, so a receiver starved of CPU by parallel tests loses nothing.
    let r = spawn(
        "receiver",
        &ports_in(&format!(
            "-r 127.0.0.1 -u -P 2 -p @1 -t 2 -V --recv-buffer 4M --format json -x {} -j {} \
             --xml-windows {}",
            x.display(),
            j.display(),
            w.display()
        )),
    );
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -u -P 2 -n 1 -l 2 -p @1 -t 2 -b 1200 -B 40M --format json",
    );
    let so = s.wait(LIMIT);
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let (sd, rd) = (json(&so.stdout), json(&ro.stdout));
    let v = validator();
    assert_valid(&v, &sd);
    assert_valid(&v, &rd);
    let (s, r) = (&sd["reports"][0], &rd["reports"][0]);
    assert_eq!(s["params"]["protocol"], "udp");
    assert_eq!(s["buffer_len"], 1200, "-b sets the datagram size");
    assert!(s["udp"].is_null(), "the sender cannot know about loss");

    let lost = receiver_accounting(s, r);
    files_carry_the_accounting(&dir, lost);
}

/// The receiver's UDP accounting in its JSON report `r`, against the sender's `s`:
/// every datagram counted once, lost ones given as expected less received, nothing
/// lost on loopback with a deep buffer; returns the datagrams lost.
fn receiver_accounting(s: &Value, r: &Value) -> u64 {
    let total = &r["udp"];
    let (datagrams, expected, lost) = (
        u64_of(&total["datagrams"]),
        u64_of(&total["expected"]),
        u64_of(&total["lost"]),
    );
    // 40 Mbit/s of 1200-byte datagrams for 2 s is about 8300 of them.
    assert!(datagrams > 4000, "{total}");
    assert_eq!(u64_of(&r["totals"]["bytes"]), datagrams * 1200);
    assert!(
        expected + u64_of(&total["duplicates"]) >= datagrams,
        "{total}"
    );
    assert_eq!(
        expected - lost,
        datagrams - u64_of(&total["duplicates"]),
        "{total}"
    );
    let loss = total["loss_percent"].as_f64().expect("a loss figure");
    assert!(
        loss < 1.0,
        "loopback with a deep buffer loses nothing: {total}"
    );
    // Loopback delivers within microseconds: a jitter of milliseconds is a unit error.
    let jitter = total["jitter_ms"].as_f64().expect("jitter");
    assert!((0.0..20.0).contains(&jitter), "{total}");
    assert_eq!(total["unstamped"], 0);
    // What the sender sent in its window is what the receiver expected in its own.
    let sent = u64_of(&s["totals"]["calls"]) as f64;
    assert_close(sent, expected as f64, 3.0, "datagrams sent vs expected");
    // Per thread: both ports, and they add up.
    let threads = r["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    assert!(
        threads
            .iter()
            .all(|t| u64_of(&t["udp"]["datagrams"]) > 1000),
        "both ports carried datagrams: {threads:?}"
    );
    // Four sockets (2 threads x 2 connections) are four flows, seen from 127.0.0.1.
    assert_eq!(r["connections"], 4);
    let peers = r["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 4, "{peers:?}");
    assert!(
        peers
            .iter()
            .all(|p| p.as_str().unwrap().starts_with("127.0.0.1:"))
    );

    lost
}

/// The ntttcp-for-linux files say UDP and carry the same accounting (`lost`), and the
/// Windows XML has a UDP block per thread.
fn files_carry_the_accounting(dir: &Scratch, lost: u64) {
    let xml = dir.read("r.xml");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let el = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name(name) && n.parent().is_some_and(|p| p.has_tag_name("udp")))
            .and_then(|n| n.text())
            .unwrap_or_else(|| panic!("no <udp><{name}> in {xml}"))
            .to_string()
    };
    assert_eq!(el("datagrams_lost"), lost.to_string());
    assert!(xml.contains("<udp>True</udp>"), "{xml}");
    let lj: Value = serde_json::from_str(&dir.read("r.json")).expect("valid JSON");
    let lost_item = &lj["ntttcpr"]["udp"]["datagramsLost"];
    assert_eq!(lost_item["metric"], "count", "{lj}");
    assert_eq!(lost_item["value"], lost.to_string());
    assert_eq!(lj["ntttcpr"]["parameters"]["udp"], "True");
    let wx = dir.read("rw.xml");
    let wdoc = roxmltree::Document::parse(&wx).expect("well-formed Windows XML");
    let thread_udp = wdoc
        .descendants()
        .filter(|n| n.has_tag_name("thread"))
        .filter(|t| t.children().any(|c| c.has_tag_name("udp")))
        .count();
    assert_eq!(thread_udp, 2, "per-thread UDP blocks in the Windows XML");
}

#[test]
fn udp_over_ipv6_sizes_datagrams_to_the_path_mtu() {
    let _ports = Ports::take(1);
    let o = run(
        "--loopback -6 -u -P 1 -p @1 -t 1 -B 50M --recv-buffer 4M --format json",
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let d = json(&o.stdout);
    assert_valid(&validator(), &d);
    let reports = d["reports"].as_array().unwrap();
    let side = |name: &str| reports.iter().find(|r| r["side"] == name).unwrap();
    // No -b: the largest datagram the path carries, lo's MTU less 40 (IPv6) + 8 (UDP).
    let mtu: usize = std::fs::read_to_string("/sys/class/net/lo/mtu")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        side("sender")["buffer_len"].as_u64().unwrap() as usize,
        (mtu - 48).min(65_527)
    );
    let r = side("receiver");
    assert_eq!(r["params"]["ipv6"], true);
    assert!(u64_of(&r["udp"]["expected"]) > 50, "{}", r["udp"]);
    assert!(
        r["peers"][0].as_str().unwrap().starts_with("[::1]:"),
        "{}",
        r["peers"]
    );
}

#[test]
fn datagrams_without_our_stamp_are_counted_and_their_loss_is_unknown() {
    let _ports = Ports::take(1);
    // A stock ntttcp-for-linux or NTttcp sender fills datagrams with 'B' and nothing else;
    // a no-sync receiver starts its clock at the first one and ends on its own clock.
    let dir = Scratch::new("unstamped");
    let r = spawn(
        "receiver",
        &ports_in(&format!(
            "-r 127.0.0.1 -u -N -P 1 -p @1 -t 1 -x {} -j {}",
            dir.file("r.xml").display(),
            dir.file("r.json").display()
        )),
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sending = send_unstamped(ports_in("127.0.0.1:@1"), stop.clone());
    let o = r.wait(Duration::from_secs(10));
    let ended = Instant::now();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let first = sending.join().unwrap().expect("datagrams were sent");
    assert_eq!(o.code(), Some(0), "{o:?}");
    let lasted = ended - first;
    assert!(
        lasted < Duration::from_secs(4),
        "ended on its own clock: {lasted:?}"
    );
    assert!(
        o.stdout
            .contains("Thread    Datagrams         Lost  Loss(%)"),
        "{}",
        o.stdout
    );
    let total = o
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Total"))
        .expect("a Total row");
    let cols: Vec<&str> = total.split_whitespace().collect();
    assert!(cols[1].parse::<u64>().unwrap() > 100, "{total}");
    // Unknown is never printed as a number: n/a in the table, left out of the files.
    assert_eq!(
        &cols[2..6],
        ["n/a"; 4],
        "lost, loss, duplicates, order: {total}"
    );
    assert!(o.stdout.contains("carried no ntttcp stamp"), "{}", o.stdout);
    unknown_loss_is_left_out_of_the_files(&dir);
}

/// A stock sender's datagrams to `receiver`: 1470 bytes of 'B' every 500 us until `stop`
/// (bounded by 8 s); the thread returns when the first was sent.
fn send_unstamped(
    receiver: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Option<Instant>> {
    std::thread::spawn(move || {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(&receiver).unwrap();
        let payload = [b'B'; 1470];
        let start = Instant::now();
        let mut first = None;
        while !stop.load(std::sync::atomic::Ordering::Relaxed)
            && start.elapsed() < Duration::from_secs(8)
        {
            if sock.send(&payload).is_ok() && first.is_none() {
                first = Some(Instant::now());
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        first
    })
}

/// The files of a receiver that got only unstamped datagrams name what they know and
/// leave out what is unknown (the XML's snake_case, the JSON's camelCase).
fn unknown_loss_is_left_out_of_the_files(dir: &Scratch) {
    for (file, expected, unknown) in [
        (
            "r.xml",
            "datagrams_expected",
            [
                "<datagrams_lost",
                "<duplicates",
                "<out_of_order",
                "<jitter ",
            ],
        ),
        (
            "r.json",
            "\"datagramsExpected\"",
            [
                "\"datagramsLost\"",
                "\"duplicates\"",
                "\"outOfOrder\"",
                "\"jitter\"",
            ],
        ),
    ] {
        let text = dir.read(file);
        assert!(text.contains(expected), "{file}: {text}");
        for name in unknown {
            assert!(!text.contains(name), "{file} has {name}: {text}");
        }
    }
}

#[test]
fn holding_receiver_counts_each_tests_flows_once() {
    let _ports = Ports::take(1);
    let r = spawn(
        "receiver",
        "-r 127.0.0.1 -u -H -P 1 -p @1 -t 1 --format jsonl",
    );
    for _ in 0..2 {
        let s = run(
            "-s 127.0.0.1 -u -P 1 -n 1 -l 2 -p @1 -t 1 -b 500 -B 10M --format json",
            LIMIT,
        );
        assert_eq!(s.code(), Some(0), "{s:?}");
    }
    r.signal(2);
    let o = r.wait(LIMIT);
    let summaries: Vec<Value> = o
        .stdout
        .lines()
        .map(json)
        .filter(|l| l["type"] == "summary")
        .collect();
    assert_eq!(summaries.len(), 2, "{}", o.stdout);
    let mut seen = Vec::new();
    for s in &summaries {
        let rep = &s["report"];
        assert_eq!(rep["connections"], 2, "{rep}");
        let peers: Vec<String> = rep["peers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        assert_eq!(peers.len(), 2, "{peers:?}");
        assert!(
            peers.iter().all(|p| !seen.contains(p)),
            "a new test's flows"
        );
        seen.extend(peers);
        assert!(u64_of(&rep["udp"]["expected"]) > 100, "{}", rep["udp"]);
    }
}

#[test]
fn udp_offload_on_and_off_count_the_same_datagrams() {
    let _ports = Ports::take(1);
    let _quiet = crate::util::exclusive();
    // With GSO a send carries many datagrams and with GRO a receive may too; every
    // datagram must still be stamped, counted and accounted one by one.
    for (port, offload) in [(port(1), ""), (port(11), "--no-udp-offload")] {
        let o = run(
            &format!(
                "--loopback -u -P 1 -p {port} -t 1 -b 1400 -B 200M --recv-buffer 4M {offload} \
                 --format json"
            ),
            LIMIT,
        );
        assert_eq!(o.code(), Some(0), "{o:?}");
        let d = json(&o.stdout);
        let reports = d["reports"].as_array().unwrap();
        let side = |n: &str| reports.iter().find(|r| r["side"] == n).unwrap();
        let (s, r) = (side("sender"), side("receiver"));
        assert_eq!(r["params"]["udp_offload"], offload.is_empty());
        let udp = &r["udp"];
        let datagrams = u64_of(&udp["datagrams"]);
        assert!(datagrams > 5000, "{offload}: {udp}");
        assert_eq!(u64_of(&r["totals"]["bytes"]), datagrams * 1400, "{offload}");
        assert_eq!(
            u64_of(&s["totals"]["bytes"]),
            u64_of(&s["totals"]["calls"]) * 1400
        );
        assert_eq!(udp["duplicates"], 0, "{offload}: {udp}");
        let loss = udp["loss_percent"].as_f64().unwrap();
        assert!(loss < 1.0, "{offload}: {udp}");
        assert_close(
            u64_of(&s["totals"]["calls"]) as f64,
            u64_of(&udp["expected"]) as f64,
            3.0,
            "datagrams sent vs expected",
        );
    }
}

#[test]
fn receiver_intervals_carry_the_loss_of_each_interval() {
    let _ports = Ports::take(1);
    let o = run(
        "--loopback -u -P 1 -p @21 -t 2 -b 1000 -B 50M --interval 0.5 --format jsonl",
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let v = validator();
    let lines: Vec<Value> = o.stdout.lines().map(json).collect();
    for l in &lines {
        assert_valid(&v, l);
    }
    let intervals = |side: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| l["type"] == "interval" && l["side"] == side)
            .collect()
    };
    let rx = intervals("receiver");
    assert!(rx.len() >= 3, "{}", o.stdout);
    let expected: u64 = rx.iter().map(|l| u64_of(&l["udp_loss"]["expected"])).sum();
    // 50 Mbit/s of 1000-byte datagrams for 2 s: about 12,500 datagrams.
    assert!(expected > 8000, "{expected}");
    assert!(intervals("sender").iter().all(|l| l["udp_loss"].is_null()));
}

/// One stamped datagram as our sender writes it: magic, session, sequence, send time
/// (network byte order), then filler.
fn stamped(session: u32, seq: u64, sent_ns: u64) -> Vec<u8> {
    let mut d = Vec::with_capacity(200);
    d.extend_from_slice(b"nTu1");
    d.extend_from_slice(&session.to_be_bytes());
    d.extend_from_slice(&seq.to_be_bytes());
    d.extend_from_slice(&sent_ns.to_be_bytes());
    d.resize(200, b'B');
    d
}

/// The accounting end to end, from datagrams made by hand: 400 sequence numbers of which
/// 300..309 are never sent, 100 is sent twice and 201 goes before 200; pairs leave every
/// 6 ms while their stamps claim 3 ms apart, so the transit time alternates by 3 ms. The
/// sends take 1.2 s of the receiver's 2 s window, which opens at the first datagram, and
/// end in its last second (the jitter figure is of flows heard from in the last second).
/// A deep receive buffer keeps a starved receiver from losing any; an attempt that went
/// wrong was starved when its sends came late or its own figures say so
/// (`handmade_starved`): its worker may not have read the last datagrams by its edge.
#[test]
fn loss_duplicates_reordering_and_jitter_from_handmade_datagrams() {
    let _ports = Ports::take(1);
    promise("hand-made datagrams' accounting", |i| {
        let at = 31 + i as u16;
        let r = spawn(
            "receiver",
            &format!(
                "-r 127.0.0.1 -u -N -P 1 -p @{at} -t 2 --recv-buffer 4M --format jsonl --interval 0.1"
            ),
        );
        crate::util::wait_listening_udp(port(at), Duration::from_secs(20));
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(ports_in(&format!("127.0.0.1:@{at}"))).unwrap();
        // A datagram of another session starts the no-sync receiver's clock; ours follow
        // once its first interval says the test runs.
        let opened = Instant::now();
        sock.send(&stamped(0x0001, 0, 0)).unwrap();
        r.wait_for_stdout("\"type\":\"interval\"", Duration::from_secs(20));
        send_handmade(&sock);
        let late = opened.elapsed();
        let ro = r.wait(Duration::from_secs(20));
        assert_eq!(ro.code(), Some(0), "{ro:?}");
        let lines: Vec<Value> = ro.stdout.lines().map(json).collect();
        handmade_accounting(&lines, late)
    });
}

/// Whether the receiver's jsonl (`lines`) counted the hand-made session as sent, whose
/// last datagram left `late` into the window: 391 or 392 datagrams (with the other
/// session's one), 10 lost, 1 duplicate, 1 out of order, a jitter of milliseconds.
fn handmade_accounting(lines: &[Value], late: Duration) -> crate::util::Attempt {
    let summary = lines.iter().find(|l| l["type"] == "summary");
    let r = &summary.unwrap_or_else(|| panic!("no summary: {lines:?}"))["report"];
    let u = &r["udp"];
    let datagrams = u64_of(&u["datagrams"]);
    let counted = (
        u["lost"].as_u64(),
        u["duplicates"].as_u64(),
        u["out_of_order"].as_u64(),
    );
    let jitter = u["jitter_ms"].as_f64().unwrap_or(f64::NAN);
    if (391..=392).contains(&datagrams)
        && counted == (Some(10), Some(1), Some(1))
        && (1.0..50.0).contains(&jitter)
    {
        return Ok(());
    }
    Err((
        format!("{u} (sent by {late:?})"),
        handmade_starved(lines, r, late),
    ))
}

/// Why a hand-made attempt was starved, or None: its sends ended late (0.4 s to spare),
/// the host dropped datagrams for a full buffer, the hypervisor took 5 % or more, or the
/// receiver's worker read nothing for a whole 0.1 s interval while the datagrams came
/// (a pair every 6 ms, from 0.1 s until `late`).
fn handmade_starved(lines: &[Value], r: &Value, late: Duration) -> Option<String> {
    let dropped = u64_of(&r["network"]["udp"]["rcvbuf_errors"]);
    let steal = r["cpu"]["steal_percent"].as_f64().unwrap_or(0.0);
    let sending = 0.3..late.as_secs_f64() - 0.2;
    let idle = lines.iter().find(|l| {
        l["type"] == "interval"
            && sending.contains(&l["start_s"].as_f64().unwrap_or(0.0))
            && sending.contains(&l["end_s"].as_f64().unwrap_or(0.0))
            && l["thread_bytes"][0].as_u64() == Some(0)
    });
    if late > Duration::from_millis(1600) {
        Some(format!(
            "the last datagram left {:.2} s into the window",
            late.as_secs_f64()
        ))
    } else if dropped > 0 {
        Some(format!(
            "the host dropped {dropped} datagrams for full buffers"
        ))
    } else if steal >= 5.0 {
        Some(format!("steal {steal:.1} %"))
    } else {
        idle.map(|l| {
            format!(
                "the worker read nothing from {} to {} s",
                l["start_s"], l["end_s"]
            )
        })
    }
}

/// Sends the hand-made session: every sequence number below 400 but 300..309, 100 twice,
/// 201 before 200, a pair every 6 ms with stamps 3 ms apart.
fn send_handmade(sock: &std::net::UdpSocket) {
    let mut order: Vec<u64> = (0..400).filter(|s| !(300..310).contains(s)).collect();
    order.insert(order.iter().position(|&s| s == 100).unwrap(), 100);
    let (i200, i201) = (
        order.iter().position(|&s| s == 200).unwrap(),
        order.iter().position(|&s| s == 201).unwrap(),
    );
    order.swap(i200, i201);
    let start = Instant::now();
    for (i, seq) in order.iter().enumerate() {
        let due = start + Duration::from_millis(6 * (i as u64 / 2));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let sent_ns = 3_000_000 * i as u64;
        sock.send(&stamped(0x5eed, *seq, sent_ns)).unwrap();
    }
}

/// Two processes with sync: the receiver sends its report back over the sync connection,
/// so the sender's document holds it beside its own, the same report the receiver
/// printed, loss figures included; the sender's tables add the receiver's.
#[test]
fn the_senders_document_carries_the_receivers_loss_figures() {
    let _ports = Ports::take(1);
    let r = spawn(
        "receiver",
        "-r 127.0.0.1 -u -P 1 -p @1 -t 2 --recv-buffer 4M --format json",
    );
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -u -P 1 -n 1 -p @1 -t 2 -b 1200 -B 20M --format json",
    );
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let (sd, rd) = (json(&so.stdout), json(&ro.stdout));
    assert_valid(&validator(), &sd);
    let reports = sd["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "{sd}");
    assert_eq!(reports[0]["side"], "sender");
    let theirs = &reports[1];
    assert_eq!(
        *theirs, rd["reports"][0],
        "the receiver's own report, as it printed it"
    );
    let udp = &theirs["udp"];
    assert!(u64_of(&udp["expected"]) > 1000, "{udp}");
    assert!(
        udp["lost"].is_u64() && udp["loss_percent"].is_f64(),
        "{udp}"
    );
    // NTttcp's tables are the sender's alone (a parser of them finds those); the
    // receiver's totals follow in one line that names it, its loss included.
    let r = spawn("receiver", "-r 127.0.0.1 -u -P 1 -p @11 -t 1");
    let s = run(
        "-s 127.0.0.1 -u -P 1 -n 1 -p @11 -t 1 -b 1200 -B 20M",
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((s.code(), ro.code()), (Some(0), Some(0)), "{s:?}\n{ro:?}");
    assert_eq!(parse_tables(&s.stdout).len(), 1, "{}", s.stdout);
    let line = s
        .stdout
        .lines()
        .find(|l| l.starts_with("The receiver's figures"))
        .unwrap_or_else(|| panic!("no receiver line: {}", s.stdout));
    assert!(line.contains("Gbit/s") && line.contains(" lost "), "{line}");
}
