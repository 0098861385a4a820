//! Faults: loopback start-up, sizes, signals and tests cut short, a receiver stopped
//! mid-test, and handshakes that start a test nobody runs.

use std::net::TcpListener;
use std::time::Duration;

use crate::util::{Launch, Ports, Proc, parse_tables, port, ports_in, run, spawn, wait_listening};

#[test]
fn loopback_with_a_data_port_held_fails_at_once_naming_it() {
    let _ports = Ports::take(1);
    let _held = TcpListener::bind(ports_in("127.0.0.1:@2"))
        .unwrap_or_else(|_| panic!("{}", ports_in("hold port @2")));
    // With the old behaviour the sender waited for its connect deadline (60 s here).
    let o = run(
        "--loopback -p @1 -P 2 -t 2 --timeout 60",
        Duration::from_secs(30),
    );
    eprintln!(
        "FAULT loopback port in use: exit {:?} after {:.1?}",
        o.code(),
        o.elapsed
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.within(Duration::from_secs(10)),
        "{:?} (waiter late {:?})",
        o.elapsed,
        o.late
    );
    assert!(o.stderr.contains(&ports_in("data port @2")), "{}", o.stderr);
    assert!(!o.stderr.contains("failed to connect"), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "one line: {}", o.stderr);
}

#[test]
fn loopback_never_tests_against_a_foreign_receiver() {
    let _ports = Ports::take(1);
    let foreign = spawn("foreign receiver", "-r 127.0.0.1 -p @1 -P 2 -t 30");
    wait_listening(port(0), Duration::from_secs(20));
    let o = run(
        "--loopback -p @1 -P 2 -t 2 --timeout 60",
        Duration::from_secs(30),
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    let held = |k| o.stderr.contains(&format!("port {}", port(k)));
    assert!(held(1) || held(2), "names a held data port: {}", o.stderr);
    assert!(
        o.within(Duration::from_secs(10)),
        "{:?} (waiter late {:?})",
        o.elapsed,
        o.late
    );
    foreign.signal(2);
    let fo = foreign.wait(Duration::from_secs(10));
    assert!(
        !fo.stdout.contains("Network activity progressing"),
        "the foreign receiver ran a test: {fo:?}"
    );
}

#[test]
fn sizes_beyond_their_bounds_are_usage_errors_naming_the_flag() {
    let _ports = Ports::take(1);
    for (args, flag, bound) in [
        ("-s 127.0.0.1 -p @1 -b 1024G -t 1", "'-b'", "1073741824"),
        (
            "-r 127.0.0.1 -p @1 --buffer 2G -t 1",
            "'--buffer'",
            "1073741824",
        ),
        ("-s 127.0.0.1 -p @1 -u -b 100K -t 1", "'-b'", "65507"),
        (
            "-s -m 1,*,127.0.0.1 -p @1 -u -l 70000 -ns -t 1",
            "'-l'",
            "65507",
        ),
        (&ports_in("-s ::1 -p @1 -u -b 65528 -t 1"), "'-b'", "65527"),
    ] {
        let o = run(args, Duration::from_secs(10));
        assert_eq!(o.code(), Some(2), "{args}: {o:?}");
        assert!(
            o.stderr.contains(flag) && o.stderr.contains(bound),
            "{args}: {}",
            o.stderr
        );
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    }
}

/// A size within bounds that this host cannot allocate (address space capped at 800 MB)
/// is an error, never an abort.
#[test]
fn a_buffer_that_cannot_be_allocated_is_an_error_not_an_abort() {
    let _ports = Ports::take(1);
    for args in [
        "-r 127.0.0.1 -P 1 -p @1 -b 1G -t 1",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -b 1G -t 1",
    ] {
        let o = Launch::new("ntttcp", args)
            .after("ulimit -v 800000")
            .spawn()
            .wait(Duration::from_secs(20));
        assert_eq!(o.code(), Some(1), "{args}: {o:?}");
        assert!(
            o.stderr.contains("cannot allocate a 1073741824-byte"),
            "{args}: {}",
            o.stderr
        );
    }
}

/// GNU `timeout` signals the process and then its whole group: both SIGTERMs are one
/// interruption, and the totals are printed every time. (`-k 10`: a sender that did not
/// end is killed rather than left behind.)
#[test]
fn timeout_stops_a_sender_and_the_totals_are_printed_every_time() {
    let _ports = Ports::take(1);
    for i in 0..30u16 {
        let port = port(1) + 3 * i;
        let r = spawn(
            "receiver",
            &format!("-r 127.0.0.1 -m 2,*,127.0.0.1 -p {port} -t 6"),
        );
        wait_listening(port - 1, Duration::from_secs(20));
        let s = Launch::new(
            "timeout 2 sender",
            &format!("-s -m 2,*,127.0.0.1 -p {port} -t 6 -B 2G"),
        )
        .wrapped(&["timeout", "-k", "10", "2"])
        .spawn()
        .wait(Duration::from_secs(30));
        assert_eq!(s.code(), Some(124), "run {i}: timeout's status: {s:?}");
        let t = parse_tables(&s.stdout);
        assert_eq!(t.len(), 1, "run {i}: no totals after SIGTERM: {s:?}");
        // A sender measures from its window's start to the SIGTERM: more than a
        // megabyte at the 2 Gbit/s asked, unless a machine that starved its start left
        // it under a second of its 2 s to measure.
        let t = &t[0];
        assert!(t.realtime < 5.0, "run {i}: {t:?}");
        assert!(t.meg > 1.0 || t.realtime < 1.0, "run {i}: {t:?}");
        assert!(!s.stderr.contains("exiting"), "run {i}: {}", s.stderr);
        r.signal(9);
        let _ = r.wait(Duration::from_secs(10));
    }
}

/// A receiver and a 1 Gbit/s sender on data port `port` (one stream, `-t secs`), each with
/// its extra flags, returned once the sender has reported its first interval (the test
/// is running).
fn running_pair(port: u16, secs: u32, receiver: &str, sender: &str) -> (Proc, Proc) {
    let r = spawn(
        "receiver",
        &format!("-r 127.0.0.1 -P 1 -p {port} -t {secs} {receiver}"),
    );
    wait_listening(port - 1, Duration::from_secs(20));
    let s = spawn(
        "sender",
        &format!("-s 127.0.0.1 -P 1 -n 1 -p {port} -t {secs} -B 1G --interval 0.2 {sender}"),
    );
    s.wait_for_stdout("Gbit/s", Duration::from_secs(20));
    (r, s)
}

#[test]
fn sighup_is_an_interruption_with_results() {
    let _ports = Ports::take(1);
    let (r, s) = running_pair(port(1), 10, "", "");
    // Hang up twice in a row.
    s.signal(1);
    s.signal(1);
    let so = s.wait(Duration::from_secs(10));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(parse_tables(&so.stdout).len(), 1, "{so:?}");
    r.signal(9);
}

/// One 4-byte big-endian sync message.
pub(crate) fn sync_send(s: &mut std::net::TcpStream, v: u32) {
    use std::io::Write;
    s.write_all(&v.to_be_bytes())
        .expect("write to the sync port");
}

pub(crate) fn sync_read(s: &mut std::net::TcpStream) -> u32 {
    use std::io::Read;
    let mut b = [0u8; 4];
    s.read_exact(&mut b).expect("read from the sync port");
    u32::from_be_bytes(b)
}

/// A sync session that asks for a test of `proposal` seconds and starts it, without ever
/// opening a data connection.
fn hostile_start(sync_port: u16, proposal: u32) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", sync_port)).expect("connect sync");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    sync_send(&mut s, u32::from(b'X'));
    assert_eq!(sync_read(&mut s), 11, "not started");
    sync_send(&mut s, proposal);
    sync_read(&mut s);
    sync_send(&mut s, u32::from(b'R'));
    assert_eq!(sync_read(&mut s), u32::from(b'R'), "go");
    s
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A sender stopped 2 s into a 6 s test: the receiver says its test ended early, by
/// whom, measured against planned, in every output, and exits 1.
#[test]
fn a_test_the_sender_cut_short_is_not_a_completed_test() {
    let _ports = Ports::take(1);
    let dir = crate::util::Scratch::new("early");
    let (xml, js, wxml) = (dir.file("r.xml"), dir.file("r.json"), dir.file("w.xml"));
    let files = format!(
        "--format json -x {} -j {} --xml-windows {}",
        xml.display(),
        js.display(),
        wxml.display()
    );
    let (r, s) = running_pair(port(1), 6, &files, "");
    s.signal(2);
    let so = s.wait(Duration::from_secs(20));
    let ro = r.wait(Duration::from_secs(20));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    assert!(
        ro.stderr
            .contains("test ended early: the sender stopped its test early"),
        "{}",
        ro.stderr
    );
    let doc = json(&ro.stdout);
    let end = &doc["reports"][0]["end"];
    assert_eq!(end["kind"], "peer_ended", "{end}");
    assert_eq!(end["early"]["by"], "sender", "{end}");
    assert_eq!(end["planned_s"], 6.0, "{end}");
    let measured = end["measured_s"].as_f64().unwrap();
    assert!(measured > 0.1 && measured < 5.5, "{end}");
    crate::util::assert_valid(&crate::util::validator(), &doc);
    for (file, needle) in [
        (&xml, "<ended_early by=\"sender\""),
        (&js, "\"endedEarly\""),
        (&wxml, "<ended_early by=\"sender\""),
    ] {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains(needle), "{}: {text}", file.display());
        assert!(text.contains("planned"), "{}: {text}", file.display());
    }
}

/// 'X', a 2 s proposal, 'R' and no data connection: a fault, not a 0-byte success.
#[test]
fn a_start_without_data_connections_is_a_fault() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 --format json");
    wait_listening(port(0), Duration::from_secs(20));
    let _s = hostile_start(port(0), 2);
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    let doc = json(&ro.stdout);
    assert_eq!(doc["reports"][0]["end"]["kind"], "fault", "{doc}");
    assert!(ro.stderr.contains("no data connection"), "{}", ro.stderr);
}

/// A huge proposal with no data connection holds a -H receiver for --timeout at most: it
/// logs the failed test and serves a real sender next.
#[test]
fn a_hold_receiver_drops_a_hostile_start_and_serves_the_next_sender() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 -H --timeout 2");
    wait_listening(port(0), Duration::from_secs(20));
    let _attacker = hostile_start(port(0), i32::MAX as u32);
    r.wait_for_stdout("#####  Totals:  #####", Duration::from_secs(30));
    let s = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", Duration::from_secs(30));
    assert_eq!(s.code(), Some(0), "{s:?}");
    r.signal(15);
    let ro = r.wait(Duration::from_secs(20));
    assert!(ro.stderr.contains("no data connection"), "{}", ro.stderr);
    assert_eq!(parse_tables(&ro.stdout).len(), 2, "{}", ro.stdout);
    assert_eq!(ro.code(), Some(1), "the worst test decides: {ro:?}");
}

/// A receiver stopped (SIGSTOP) mid-test: the sender faults on the silence and ends; the
/// receiver, continued, finds its test cut short and says so with exit 1. The test is
/// planned for 20 s so that the stop falls inside it even when a loaded machine shows
/// this test the first interval line seconds late; both sides end early.
#[test]
fn a_receiver_stopped_mid_test_reports_the_test_its_sender_abandoned() {
    let _ports = Ports::take(1);
    let (r, s) = running_pair(port(1), 20, "--format json", "--timeout 2");
    r.signal(19);
    let so = s.wait(Duration::from_secs(30));
    r.signal(18);
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!(so.code(), Some(1), "the sender faulted: {so:?}");
    assert!(so.stderr.contains("no data could be sent"), "{}", so.stderr);
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    let doc = json(&ro.stdout);
    let end = &doc["reports"][0]["end"];
    assert!(end["early"].is_object(), "{end}");
    assert!(end["measured_s"].as_f64().unwrap() < 20.0, "{end}");
}

/// SIGTERM is an interruption: the figures measured so far, exit 130.
#[test]
fn sigterm_prints_the_results_and_exits_130() {
    let _ports = Ports::take(1);
    let (r, s) = running_pair(port(1), 10, "", "");
    s.signal(15);
    let so = s.wait(Duration::from_secs(20));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(parse_tables(&so.stdout).len(), 1, "{}", so.stdout);
    r.signal(9);
}

/// A -H receiver stopped before it served any test exits 130 and prints no tables.
#[test]
fn a_hold_receiver_that_served_nothing_exits_130() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @51 -t 2 -H");
    wait_listening(port(50), Duration::from_secs(20));
    r.signal(2);
    let ro = r.wait(Duration::from_secs(20));
    assert_eq!(ro.code(), Some(130), "{ro:?}");
    assert!(parse_tables(&ro.stdout).is_empty(), "{}", ro.stdout);
    assert!(ro.stderr.contains("interrupted"), "{}", ro.stderr);
}

/// A signal more than a second after the first is not a new interruption: the process
/// says its results are on their way, then prints them and exits 130.
#[test]
fn a_later_signal_says_the_results_are_on_their_way() {
    let _ports = Ports::take(1);
    let _r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 60");
    wait_listening(port(0), Duration::from_secs(20));
    // Nobody reads the sender's stdout: once the pipe is full (200 threads' bytes in each
    // JSON interval line fill it in seconds), it blocks writing a line, and is still
    // there for a later signal.
    let mut s = Launch::new(
        "sender",
        "-s 127.0.0.1 -P 1 -n 200 -p @1 -t 60 --interval 0.1 --format jsonl",
    )
    .unread()
    .spawn();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !s.blocked_on_a_pipe() {
        assert!(
            std::time::Instant::now() < deadline,
            "the sender never filled its stdout"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.signal(2);
    // The scenario: later signals, each more than a second after the first.
    let said = "already stopping; the results measured so far follow";
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(1100));
        s.signal(2);
        if s.says_within(said, Duration::from_secs(1)) {
            break;
        }
    }
    s.read_stdout();
    let so = s.wait(Duration::from_secs(30));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(
        so.stderr.matches(said).count(),
        1,
        "said once: {}",
        so.stderr
    );
    let last = so.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("{\"type\":\"summary\""),
        "results printed last: {last}"
    );
}

/// A side that was itself stopped across its planned end measures a stretched window and
/// says by how much it overran (JSON `window_overrun_s`, a warning); with no stall limit
/// the test still completes.
#[test]
fn a_receiver_stopped_across_its_end_reports_the_overrun() {
    let _ports = Ports::take(1);
    let r = spawn(
        "receiver",
        "-r 127.0.0.1 -P 1 -p @1 -t 4 --timeout 30 --format json",
    );
    wait_listening(port(0), Duration::from_secs(20));
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 4 --timeout 30 --interval 0.5",
    );
    // Six half-second interval lines: three seconds measured.
    s.wait_for_stdout_count(" Gbit/s", 6, Duration::from_secs(20));
    r.signal(19);
    // The scenario: the receiver stays stopped for two seconds, past its planned end.
    std::thread::sleep(Duration::from_secs(2));
    r.signal(18);
    let (so, ro) = (
        s.wait(Duration::from_secs(30)),
        r.wait(Duration::from_secs(30)),
    );
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let rep = &json(&ro.stdout)["reports"][0];
    let overrun = rep["window_overrun_s"].as_f64().expect("an overrun");
    assert!((0.5..3.0).contains(&overrun), "{rep}");
    // The warning says the overrun (and, when the stop also left no byte moving for
    // half a second or more, that stall first).
    let said = ro.stderr.lines().find(|l| l.contains("test disturbed:"));
    assert!(
        said.is_some_and(|l| l.contains("the window ran") && l.contains("past its planned 4.00 s")),
        "{}",
        ro.stderr
    );
}
