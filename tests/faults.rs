//! Faults and hostile input: descriptor budgets, signals, partial tests, output paths,
//! loopback start-up, sizes, the daemon, and floods of the sync and data ports.
//! PORTS: 30000-31999, 100 per test.

use std::net::TcpListener;
use std::time::Duration;

use crate::util::{parse_tables, run, spawn, spawn_after, spawn_wrapped, wait_listening};

#[test]
fn loopback_with_a_data_port_held_fails_at_once_naming_it() {
    let _held = TcpListener::bind("127.0.0.1:30002").expect("hold port 30002");
    // With the old behaviour the sender waited for its connect deadline (60 s here).
    let o = run(
        "--loopback -p 30001 -P 2 -t 2 --timeout 60",
        Duration::from_secs(30),
    );
    eprintln!(
        "FAULT loopback port in use: exit {:?} after {:.1?}",
        o.code(),
        o.elapsed
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.elapsed < Duration::from_secs(10), "{:?}", o.elapsed);
    assert!(o.stderr.contains("data port 30002"), "{}", o.stderr);
    assert!(!o.stderr.contains("failed to connect"), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "one line: {}", o.stderr);
}

#[test]
fn loopback_never_tests_against_a_foreign_receiver() {
    let foreign = spawn("foreign receiver", "-r 127.0.0.1 -p 30101 -P 2 -t 30");
    wait_listening(30100, Duration::from_secs(20));
    let o = run(
        "--loopback -p 30101 -P 2 -t 2 --timeout 60",
        Duration::from_secs(30),
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("port 3010"), "{}", o.stderr);
    assert!(o.elapsed < Duration::from_secs(10), "{:?}", o.elapsed);
    foreign.signal(2);
    let fo = foreign.wait(Duration::from_secs(10));
    assert!(
        !fo.stdout.contains("Network activity progressing"),
        "the foreign receiver ran a test: {fo:?}"
    );
}

#[test]
fn sizes_beyond_their_bounds_are_usage_errors_naming_the_flag() {
    for (args, flag, bound) in [
        ("-s 127.0.0.1 -p 30201 -b 1024G -t 1", "'-b'", "1073741824"),
        (
            "-r 127.0.0.1 -p 30201 --buffer 2G -t 1",
            "'--buffer'",
            "1073741824",
        ),
        ("-s 127.0.0.1 -p 30201 -u -b 100K -t 1", "'-b'", "65507"),
        (
            "-s -m 1,*,127.0.0.1 -p 30201 -u -l 70000 -ns -t 1",
            "'-l'",
            "65507",
        ),
        ("-s ::1 -p 30201 -u -b 65528 -t 1", "'-b'", "65527"),
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
    for args in [
        "-r 127.0.0.1 -P 1 -p 30301 -b 1G -t 1",
        "-s 127.0.0.1 -P 1 -n 1 -p 30301 -b 1G -t 1",
    ] {
        let o = spawn_after("ntttcp", "ulimit -v 800000", args).wait(Duration::from_secs(20));
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
    for i in 0..30u16 {
        let port = 30401 + 3 * i;
        let r = spawn(
            "receiver",
            &format!("-r 127.0.0.1 -m 2,*,127.0.0.1 -p {port} -t 6"),
        );
        wait_listening(port - 1, Duration::from_secs(20));
        let s = spawn_wrapped(
            "timeout 2 sender",
            &["timeout", "-k", "10", "2"],
            &format!("-s -m 2,*,127.0.0.1 -p {port} -t 6 -B 2G"),
        )
        .wait(Duration::from_secs(30));
        assert_eq!(s.code(), Some(124), "run {i}: timeout's status: {s:?}");
        let t = parse_tables(&s.stdout);
        assert_eq!(t.len(), 1, "run {i}: no totals after SIGTERM: {s:?}");
        assert!(t[0].meg > 1.0 && t[0].realtime < 5.0, "run {i}: {:?}", t[0]);
        assert!(!s.stderr.contains("exiting"), "run {i}: {}", s.stderr);
        r.signal(9);
        let _ = r.wait(Duration::from_secs(10));
    }
}

#[test]
fn sighup_is_an_interruption_with_results() {
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p 30501 -t 10");
    wait_listening(30500, Duration::from_secs(20));
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -p 30501 -t 10 -B 1G --interval 0.2",
    );
    // The first interval line says the test is running; then hang up, twice in a row.
    s.wait_for_stdout("Gbit/s", Duration::from_secs(20));
    s.signal(1);
    s.signal(1);
    let so = s.wait(Duration::from_secs(10));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(parse_tables(&so.stdout).len(), 1, "{so:?}");
    r.signal(9);
}
