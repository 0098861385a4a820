//! Our extensions (--rr, -R, --bidir, --connect-rate) against peers that lack them: a stock
//! receiver (played byte for byte), one that only drains, one that never answers the
//! probe; each fails at once naming the feature, or within the timeout, and leaves the
//! peer serving.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::conformance::{
    Hear, IO, NOT_STARTED, PROBE, Say, X, accept, drain, int, play, stock_receiver,
};
use crate::util::{Ports, port, ports_in, spawn};

/// A sender asking for one of our extension's features (`extra`, named `flag` in its
/// error) against a stock receiver: exit 1 at once, nothing but the query and the probe
/// said, no data connection, and the receiver serves the next (plain) sender.
fn extension_against_a_stock_receiver(extra: &str, flag: &str) {
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let data_l = TcpListener::bind(ports_in("127.0.0.1:@1")).unwrap();
    let s = spawn(
        "sender",
        &format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 {extra} --timeout 5"),
    );
    let mut sync = accept(&sync_l);
    // A stock receiver takes the probe for a proposal shorter than its own -t: it
    // answers that.
    let script = [
        Hear(X, "the state query"),
        Say(NOT_STARTED),
        Hear(PROBE, "the probe comes where the proposal would"),
        Say(int(2)),
    ];
    play(&mut sync, &script);
    let o = s.wait(IO);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains(&format!("does not support {flag}"))
            && o.stderr.contains("stock ntttcp-for-linux"),
        "{}",
        o.stderr
    );
    assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
    // Nothing else was said, and no data connection was tried: the stock receiver saw
    // a proposal and a close, as from a sender that gave up, and keeps its state.
    let mut rest = Vec::new();
    sync.read_to_end(&mut rest)
        .expect("the sender closed the session");
    assert!(rest.is_empty(), "unexpected sync bytes {rest:?}");
    data_l.set_nonblocking(true).unwrap();
    assert!(
        matches!(data_l.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a data connection was opened"
    );
    drop((sync_l, data_l));
    // The next (plain) sender runs its test with that receiver, byte for byte as before.
    // On ports of its own: a process another test forks at the moment the listeners
    // above close holds them open until it execs, so their ports may still listen.
    stock_receiver(port(11), "-s 127.0.0.1 -P 1 -n 1 -p @11 -t 2", 2, false);
}

#[test]
fn rr_against_a_stock_receiver_fails_naming_the_feature_and_leaves_it_serving() {
    let _ports = Ports::take(1);
    extension_against_a_stock_receiver("--rr", "--rr");
}

#[test]
fn reverse_against_a_stock_receiver_fails_naming_the_feature_and_leaves_it_serving() {
    let _ports = Ports::take(1);
    extension_against_a_stock_receiver("-R", "-R/--reverse");
}

#[test]
fn bidir_against_a_stock_receiver_fails_naming_the_feature_and_leaves_it_serving() {
    let _ports = Ports::take(1);
    extension_against_a_stock_receiver("--bidir", "--bidir");
}

#[test]
fn connect_rate_against_a_stock_receiver_fails_naming_the_feature_and_leaves_it_serving() {
    let _ports = Ports::take(1);
    extension_against_a_stock_receiver("--connect-rate", "--connect-rate");
}

/// A connection-rate sender's session up to its probe, answered with `features`.
fn connect_rate_probed(sync_l: &TcpListener, features: u8) -> (crate::util::Proc, TcpStream) {
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 --connect-rate --timeout 5",
    );
    let mut sync = accept(sync_l);
    let script = [
        Hear(X, "the state query"),
        Say(NOT_STARTED),
        Hear(PROBE, "the probe"),
        Say([0xA8, b'N', b'T', features]),
    ];
    play(&mut sync, &script);
    (s, sync)
}

#[test]
fn connect_rate_announces_itself_after_the_probe_and_an_earlier_build_is_told_to_upgrade() {
    let _ports = Ports::take(1);
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    // An extended receiver of an earlier build: request/response, reverse, both ways.
    let (s, _sync) = connect_rate_probed(&sync_l, 0x07);
    let o = s.wait(IO);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains("does not support --connect-rate")
            && o.stderr.contains("features 0x07")
            && o.stderr.contains("upgrade"),
        "{}",
        o.stderr
    );
    // One that serves it is told the test's kind, answers in kind, then the proposal.
    let (s, mut sync) = connect_rate_probed(&sync_l, 0x0f);
    let kind = [0xA9, b'N', b'T', 1];
    let script = [
        Hear(kind, "the test's kind"),
        Say(kind),
        Hear(int(2), "then the plain proposal"),
    ];
    play(&mut sync, &script);
    drop(sync);
    assert_eq!(s.wait(IO).code(), Some(1), "the receiver went away");
}

/// A sender without sync asking for `extra` against a stock receiver without sync, which
/// reads what comes and never answers or sends: exit 1 within --timeout + 1.5 s (the
/// product's promise for a silent peer), saying `why`, after a count of bytes in `sent`.
fn extension_against_a_draining_receiver(
    extra: &str,
    why: &str,
    sent: std::ops::RangeInclusive<u64>,
) {
    let data_l = TcpListener::bind(ports_in("127.0.0.1:@1")).unwrap();
    let s = spawn(
        "sender",
        &format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 10 -N {extra} --timeout 2"),
    );
    let total = Arc::new(AtomicU64::new(0));
    let conn = accept(&data_l);
    let began = Instant::now();
    let d = drain(conn, total.clone());
    let o = s.wait(IO);
    let took = began.elapsed();
    d.join().unwrap();
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains(why), "{}", o.stderr);
    assert!(took <= Duration::from_millis(3500), "{took:?}");
    let total = total.load(Ordering::Relaxed);
    assert!(sent.contains(&total), "{total} bytes sent, not {sent:?}");
}

#[test]
fn reverse_without_sync_against_a_receiver_that_only_drains_ends_within_the_timeout() {
    let _ports = Ports::take(1);
    // Our header, nothing more.
    extension_against_a_draining_receiver("-R", "no data came", 12..=12);
}

#[test]
fn bidir_without_sync_against_a_receiver_that_only_drains_ends_within_the_timeout() {
    let _ports = Ports::take(1);
    // Our header and data, drained; nothing ever comes back, and that way's silence ends
    // the test although the other way moves.
    extension_against_a_draining_receiver("--bidir", "no data came", 12 + (1 << 20)..=u64::MAX);
}

#[test]
fn rr_against_a_receiver_that_never_answers_the_probe_ends_within_the_timeout() {
    let _ports = Ports::take(1);
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 --rr --timeout 2",
    );
    let mut sync = accept(&sync_l);
    let script = [
        Hear(X, "the state query"),
        Say(NOT_STARTED),
        Hear(PROBE, "the probe"),
    ];
    play(&mut sync, &script);
    let asked = Instant::now();
    let o = s.wait(IO);
    let took = asked.elapsed();
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("--rr probe"), "{}", o.stderr);
    // The product's promise: a silent peer ends the run within --timeout + 1.5 s.
    assert!(took <= Duration::from_millis(3500), "{took:?}");
}

#[test]
fn rr_without_sync_against_a_receiver_that_only_drains_ends_within_the_timeout() {
    let _ports = Ports::take(1);
    // Our header and one 1-byte request, nothing more.
    extension_against_a_draining_receiver("--rr", "does not echo", 12 + 1..=12 + 1);
}

#[test]
fn start_at_against_a_stock_receiver_fails_naming_the_feature_and_leaves_it_serving() {
    let _ports = Ports::take(1);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let at = now.unwrap().as_secs() + 600;
    extension_against_a_stock_receiver(&format!("--start-at {at}"), "--start-at");
}

/// `--start-at` is the sender's, ahead on its clock by at most a day, as Unix seconds or
/// RFC 3339; anything else is one line naming the flag, exit 2.
#[test]
fn start_at_outside_the_next_day_is_a_usage_error() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let now = now.unwrap().as_secs();
    let (past, far, soon) = (now - 10, now + 90_000, now + 600);
    crate::util::assert_usage_errors(&[
        (&format!("-s 127.0.0.1 --start-at {past}"), "in the past"),
        (&format!("-s 127.0.0.1 --start-at {far}"), "more than a day"),
        (
            "-s 127.0.0.1 --start-at 2020-01-01T00:00:00Z",
            "in the past",
        ),
        ("-s 127.0.0.1 --start-at noon", "RFC 3339"),
        (&format!("-r --start-at {soon}"), "applies to the sender"),
        (
            &format!("-s -m 1,*,127.0.0.1 -to 1000 --start-at {soon}"),
            "ntttcp-for-linux's sync",
        ),
    ]);
}
