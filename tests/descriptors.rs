//! Too few descriptors for the run ends it before any connection, naming the number, in
//! every mode: never a raw EMFILE (os error 24) in the middle of a test.

use std::time::Duration;

use crate::util::{Launch, Ports, ports_in};

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn too_few_descriptors_end_every_mode_before_any_connection_naming_the_number() {
    let _ports = Ports::take(1);
    // 4 ports x 4 threads x 4 connections: 64 on each end of a loopback run.
    let modes = ["", "--rr", "--connect-rate", "-R", "--bidir", "-u -B 10M"];
    for (i, mode) in modes.into_iter().enumerate() {
        let line = format!("--loopback -P 4 -n 4 -l 4 -p @{} -t 1 {mode}", 1 + 10 * i);
        let o = Launch::new("loopback", &ports_in(&line))
            .nofile(48)
            .spawn()
            .wait(LIMIT);
        assert_eq!(o.code(), Some(1), "{line}: {o:?}");
        let first = o.stderr.lines().next().unwrap_or_default();
        assert!(
            first.contains("64 connections need") && first.contains("ulimit -n"),
            "{line}: {}",
            o.stderr
        );
        assert!(!o.stderr.contains("os error 24"), "{line}: {}", o.stderr);
        assert!(
            !o.stdout.contains("connections created") && !o.stdout.contains("Bytes(MEG)"),
            "{line}: nothing ran: {}",
            o.stdout
        );
    }
}
