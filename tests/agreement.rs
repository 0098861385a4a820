//! The two sides agree: the sender's delivered bytes against the receiver's within 0.1 %,
//! the other way round and after a warm-up, and a Windows sender's whole buffers.

use std::time::Duration;

use crate::util::{
    Attempt, Ports, Scratch, apart_s, assert_valid, attempt_at, parse_tables, port, ports_in,
    promise, run, spawn, starved, validator, windows_apart,
};

/// The sender's bytes are those its connections delivered (TCP_INFO), with the bytes it
/// wrote into its send buffers beside them; with the defaults' 64 connections the
/// delivered figure matches the receiver's within 0.1 % (what sat queued at the
/// window's end is written, not delivered) on a machine that lets the run keep it.
#[test]
fn the_sender_counts_delivered_bytes_and_keeps_written_ones_beside_them() {
    let _ports = Ports::take(1);
    promise("delivered vs received within 0.1 %", |i| {
        let doc = loopback_json(&format!("-p @{} -t 3", 1 + 50 * i));
        let (s, r) = (&doc["reports"][0], &doc["reports"][1]);
        assert_eq!(
            (s["side"].as_str(), s["connections"].as_u64()),
            (Some("sender"), Some(64))
        );
        let delivered = s["totals"]["bytes"].as_u64().unwrap();
        let written = s["totals"]["bytes_written"].as_u64().unwrap();
        let received = r["totals"]["bytes"].as_u64().unwrap();
        assert!(
            written + 64 * 131_072 >= delivered,
            "written {written} < delivered {delivered}"
        );
        assert!(
            r["totals"]["bytes_written"].is_null(),
            "the receiver writes nothing"
        );
        // Per thread, a buffer partly written at the edge counts as written only once it
        // is finished, but may be partly delivered already: at most one 128 KiB buffer
        // more than was counted as written.
        for t in s["threads"].as_array().unwrap() {
            let (d, w) = (
                t["bytes"].as_u64().unwrap(),
                t["bytes_written"].as_u64().unwrap(),
            );
            assert!(
                d > 0 && w + 131_072 >= d,
                "thread {}: delivered {d}, written {w}",
                t["index"]
            );
        }
        // The receiver's connections send the ACKs they owe up to its last edge, so what
        // the sender saw acknowledged at its edge is what the receiver took in at its
        // own: the two agree within 0.1 %.
        within_tenth(delivered, received, [s, r])
    });
}

/// `--loopback ARGS --format json` run to completion (exit 0), its document checked
/// against the schema.
fn loopback_json(args: &str) -> serde_json::Value {
    let o = run(
        &ports_in(&format!("--loopback {args} --format json")),
        Duration::from_secs(60),
    );
    assert_eq!(o.code(), Some(0), "{args}: {o:?}");
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_valid(&validator(), &doc);
    doc
}

/// Whether the two sides' totals agree within 0.1 % (the promise), with the run's word on
/// whether it was starved (the sender's report for the process, both for whether their
/// windows lay apart); never more than 5 % apart beyond what the windows' spread explains.
fn within_tenth(a: u64, b: u64, sides: [&serde_json::Value; 2]) -> Attempt {
    let gap = (a as f64 - b as f64) / b as f64 * 100.0;
    let window = sides[0]["duration_s"].as_f64().unwrap();
    let spread = apart_s(&sides) / window * 100.0;
    assert!(
        gap.abs() <= 5.0 + 2.0 * spread,
        "{a} vs {b} ({gap:+.3} %, windows {spread:.2} % apart): no load explains that"
    );
    if gap.abs() <= 0.1 {
        return Ok(());
    }
    let why = starved(&[sides[0]]).or_else(|| windows_apart(&sides));
    Err((format!("{a} vs {b} ({gap:+.3} %)"), why))
}

/// The same agreement the other way round and after a warm-up: with `-R` the sender's
/// side reads and sends the ACKs it owes before its edges; with `-W 1` both edges fall
/// while data flows, and the first is kept current as the last is.
#[test]
fn sides_agree_within_a_tenth_of_a_percent_reversed_and_after_a_warm_up() {
    let _ports = Ports::take(1);
    for (k, (flags, what)) in [("-R", "reverse"), ("-W 1", "warm-up")]
        .into_iter()
        .enumerate()
    {
        promise(what, |i| {
            let doc = loopback_json(&format!("-p @{} -t 3 {flags}", attempt_at(k, i)));
            let (s, r) = (&doc["reports"][0], &doc["reports"][1]);
            assert_eq!(s["connections"].as_u64(), Some(64), "{what}");
            let bytes = |r: &serde_json::Value| r["totals"]["bytes"].as_u64().unwrap();
            within_tenth(bytes(s), bytes(r), [s, r])
        });
    }
}

/// A Windows-dialect sender sends NTttcp's 64 KiB buffers, and a buffer is one completion
/// however many calls it took: `Avg B / Compl` is the buffer length exactly.
#[test]
fn windows_dialect_senders_complete_whole_64k_buffers() {
    let _ports = Ports::take(1);
    let dir = Scratch::new("winbuf");
    let r = spawn("receiver", "-r -m 2,*,127.0.0.1 -ns -p @11 -t 2");
    crate::util::wait_listening(port(12), Duration::from_secs(20));
    let s = run(
        &ports_in(&format!(
            "-s -m 2,*,127.0.0.1 -ns -p @11 -t 2 -xml {}",
            dir.file("s.xml").display()
        )),
        Duration::from_secs(30),
    );
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!((s.code(), ro.code()), (Some(0), Some(0)), "{s:?} {ro:?}");
    let t = &parse_tables(&s.stdout)[0];
    for row in &t.threads {
        assert_eq!(row.3, 65536.0, "Avg B / Compl: {row:?}");
    }
    assert!(
        dir.read("s.xml").contains("<bufferLen>65536</bufferLen>"),
        "{}",
        dir.read("s.xml")
    );
}
