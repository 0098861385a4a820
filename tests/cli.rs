//! Black-box command-line behaviour: help, version, usage errors and their exit status.

use std::time::Duration;

use crate::util::{Ports, ports_in, run};

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn help_and_version_exit_zero() {
    let o = run("--help", LIMIT);
    assert_eq!(o.code(), Some(0));
    assert!(o.stdout.contains("Dialects:"), "{}", o.stdout);
    assert!(o.stdout.contains("--no-sync") && o.stdout.contains("--ns"));
    let o = run("-h", LIMIT);
    assert_eq!(o.code(), Some(0));
    let o = run("--version", LIMIT);
    assert_eq!(o.code(), Some(0));
    // One line, one name.
    let want = format!("ntttcp {} (NTttcp-compatible)\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(o.stdout, want);
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let rows = [
        ("-r -Y", "'-Y'"),
        ("-r -m 0,*,127.0.0.1", "'0,*,127.0.0.1'"),
        ("-r -m 8,99,127.0.0.1", "CPU 99"),
        ("-s 127.0.0.1 -t abc", "'-t'"),
        ("-s 127.0.0.1 -p 65536", "'65536'"),
        ("-r -s 127.0.0.1", "cannot be used with"),
        ("-r 203.0.113.9", "not an address of this host"),
        ("-s -m 1,*,127.0.0.1 -ns -X", "'-X'"),
    ];
    for (args, needle) in rows {
        let o = run(args, LIMIT);
        assert_eq!(o.code(), Some(2), "{args}: {o:?}");
        let lines: Vec<&str> = o.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args}: {:?}", o.stderr);
        assert!(
            lines[0].starts_with("ntttcp: error: "),
            "{args}: {}",
            lines[0]
        );
        assert!(
            lines[0].contains(needle),
            "{args}: {} lacks {needle}",
            lines[0]
        );
    }
}

#[test]
fn sender_with_no_receiver_fails_within_the_connect_deadline() {
    let _ports = Ports::take(1);
    let o = run("-s 127.0.0.1 -P 1 -p @1 -t 5", Duration::from_secs(20));
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.elapsed < Duration::from_secs(12), "{:?}", o.elapsed);
    assert!(
        o.stderr.contains(&ports_in(
            "failed to connect to receiver 127.0.0.1:@0 (sync port)"
        )),
        "{}",
        o.stderr
    );
}
