//! Faults and hostile input: descriptor budgets, signals, partial tests, output paths,
//! loopback start-up, sizes, the daemon, and floods of the sync and data ports.
//! PORTS: 30000-31999, 100 per test.

use std::net::TcpListener;
use std::time::Duration;

use crate::util::{run, spawn, wait_listening};

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
