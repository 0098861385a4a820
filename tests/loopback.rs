//! Receiver and sender as two real processes on 127.0.0.1: normal runs in both sync modes
//! and both dialects, the one-process loopback mode, and the ways a test can end early.

use std::net::TcpListener;
use std::time::Duration;

use crate::util::{
    Ports, Tables, assert_close, parse_tables, port, ports_in, promise, run, shifted,
    socket_flags_towards, spawn, tables_close_or_starved,
};

const LIMIT: Duration = Duration::from_secs(30);

/// Two `--interval 1` lines: a side has measured two seconds.
fn two_seconds_in(p: &crate::util::Proc) {
    p.wait_for_stdout_count("Gbit/s", 2, LIMIT);
}

fn one_table(stdout: &str) -> Tables {
    let t = parse_tables(stdout);
    assert_eq!(t.len(), 1, "expected one set of tables:\n{stdout}");
    t.into_iter().next().unwrap()
}

/// A receiver and a sender, each printing its one set of tables over about `seconds`;
/// their bytes agree within 1 % (a promise: a starved run says so, and a second attempt
/// runs on ports 50 above).
fn check_pair(receiver_args: &str, sender_args: &str, seconds: f64) {
    promise("sender vs receiver bytes within 1 %", |i| {
        let by = 50 * i as u16;
        let r = spawn("receiver", &shifted(receiver_args, by));
        let s = spawn("sender", &shifted(sender_args, by));
        let so = s.wait(LIMIT);
        let ro = r.wait(LIMIT);
        assert_eq!(so.code(), Some(0), "sender: {so:?}");
        assert_eq!(ro.code(), Some(0), "receiver: {ro:?}");
        for o in [&so, &ro] {
            assert!(
                o.stdout.contains("Network activity progressing...\n"),
                "{o:?}"
            );
        }
        let (st, rt) = (one_table(&so.stdout), one_table(&ro.stdout));
        assert!(rt.meg > 1.0, "receiver measured almost nothing: {rt:?}");
        for t in [&st, &rt] {
            assert_close(t.realtime, seconds, 5.0, "measured seconds");
            assert!(
                t.threads.iter().all(|r| r.2 > 0.0),
                "every thread moved bytes: {t:?}"
            );
        }
        tables_close_or_starved(&st, &rt, 1.0, &[&so.stderr, &ro.stderr])
    });
}

#[test]
fn sync_mode_linux_dialect() {
    let _ports = Ports::take(1);
    check_pair(
        "-r 127.0.0.1 -m 2,*,127.0.0.1 -p @1 -W 1 -t 2 -C 1",
        "-s 127.0.0.1 -m 2,*,127.0.0.1 -p @1 -W 1 -t 2 -C 1",
        2.0,
    );
}

#[test]
fn sync_mode_ports_threads_connections() {
    let _ports = Ports::take(1);
    // 2 ports x 2 threads x 2 connections, blocking writers round-robin.
    check_pair(
        "-r127.0.0.1 -P 2 -p @1 -W 1 -t 2",
        "-s127.0.0.1 -P 2 -n 2 -l 2 -p @1 -W 1 -t 2 --io blocking",
        2.0,
    );
}

/// A sender's data connection is non-blocking by default, its sole one too (writes wait
/// in poll(), docs/benchmarks.md), and blocking with `--io blocking`.
#[test]
fn a_sole_connection_writes_non_blocking_unless_io_blocking_says_so() {
    let _ports = Ports::take(1);
    for io in ["", "--io blocking"] {
        let r = spawn("receiver", &ports_in("-r -m 1,*,127.0.0.1 -p @1 -t 3"));
        let s = spawn(
            "sender",
            &ports_in(&format!("-s -m 1,*,127.0.0.1 -p @1 -t 3 {io}")),
        );
        // The flags over the connection's life (the writer sets them once the test
        // starts): until non-blocking shows, or the connection is gone.
        let non_blocking = libc::O_NONBLOCK as u32;
        let mut seen: Option<u32> = None;
        let wait = |seen: Option<u32>| seen.map_or(LIMIT, |_| Duration::from_secs(1));
        while let Some(f) = socket_flags_towards(s.pid(), port(1), wait(seen)) {
            seen = Some(seen.unwrap_or(0) | f);
            if f & non_blocking != 0 {
                break;
            }
        }
        let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
        let flags = seen.unwrap_or_else(|| panic!("{io}: no data connection seen"));
        assert_eq!(
            flags & non_blocking != 0,
            io.is_empty(),
            "{io}: flags {flags:o}"
        );
    }
}

#[test]
fn no_sync_mode_linux_receiver_windows_sender() {
    let _ports = Ports::take(1);
    check_pair(
        "-r -m 2,*,127.0.0.1 -N -p @1 -W 1 -t 2 -C 1",
        "-s -m 2,*,127.0.0.1 -ns -p @1 -wu 1 -t 2 -cd 1",
        2.0,
    );
}

/// A `--loopback` run (`args` on ports from `@1`): the sender's tables, then the
/// receiver's, whose bytes agree within 1 % (a promise: a starved run says so, and a
/// second attempt runs on ports 50 above).
fn one_process_agrees(args: &str) {
    promise("loopback sender vs receiver within 1 %", |i| {
        let o = run(&shifted(args, 50 * i as u16), LIMIT);
        assert_eq!(o.code(), Some(0), "{o:?}");
        let t = parse_tables(&o.stdout);
        assert_eq!(t.len(), 2, "{}", o.stdout);
        assert!(o.stdout.contains("\n\nSender:\n") && o.stdout.contains("\n\nReceiver:\n"));
        assert!(t[1].meg > 1.0, "{t:?}");
        tables_close_or_starved(&t[0], &t[1], 1.0, &[&o.stderr])
    });
}

#[test]
fn one_process_loopback_mode() {
    let _ports = Ports::take(1);
    one_process_agrees("--loopback -m 2,*,127.0.0.1 -p @1 -W 1 -t 2");
}

#[test]
fn sender_killed_mid_test_receiver_reports_time_measured() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 2 -p @1 -t 20");
    let s = spawn("sender", "-s 127.0.0.1 -P 2 -n 1 -p @1 -t 20 --interval 1");
    two_seconds_in(&s);
    s.signal(9);
    let ro = r.wait(Duration::from_secs(8));
    eprintln!(
        "FAULT sender SIGKILL: receiver ended {:.1?} after, exit {:?}",
        ro.elapsed,
        ro.code()
    );
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    assert!(
        ro.within(Duration::from_secs(2)),
        "{:?} (waiter late {:?})",
        ro.elapsed,
        ro.late
    );
    assert!(ro.stderr.contains("test ended early"), "{}", ro.stderr);
    let t = one_table(&ro.stdout);
    assert!(t.realtime > 1.0 && t.realtime < 5.0, "{t:?}");
    assert!(t.meg > 1.0);
}

#[test]
fn receiver_killed_mid_test_sender_notices_within_2s() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 20");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 20 --interval 1");
    two_seconds_in(&s);
    r.signal(9);
    let so = s.wait(Duration::from_secs(8));
    eprintln!(
        "FAULT receiver SIGKILL: sender ended {:.1?} after, exit {:?}",
        so.elapsed,
        so.code()
    );
    assert_eq!(so.code(), Some(1), "{so:?}");
    assert!(so.within(Duration::from_secs(2)), "took {:?}", so.elapsed);
    // The sync channel and the data connection die together; either may be seen first.
    assert!(
        so.stderr.contains("test ended early: receiver")
            || so
                .stderr
                .contains(&ports_in("test ended early: send to receiver 127.0.0.1:@1")),
        "{}",
        so.stderr
    );
    let t = one_table(&so.stdout);
    assert!(t.realtime > 1.0 && t.realtime < 5.0, "{t:?}");
}

#[test]
fn ctrl_c_on_sender_prints_results_and_ends_receiver() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 20");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 20 --interval 1");
    two_seconds_in(&s);
    s.signal(2);
    let so = s.wait(Duration::from_secs(5));
    let ro = r.wait(Duration::from_secs(5));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(
        ro.code(),
        Some(1),
        "a test the sender cut short failed: {ro:?}"
    );
    let (st, rt) = (one_table(&so.stdout), one_table(&ro.stdout));
    assert!(st.realtime < 5.0 && rt.realtime < 5.0, "{st:?} {rt:?}");
    assert_close(st.meg, rt.meg, 2.0, "bytes after Ctrl+C");
}

#[test]
fn second_sender_is_told_the_receiver_is_busy() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 5");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 5");
    r.wait_for_stdout("Network activity progressing...", LIMIT);
    let busy = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 5", Duration::from_secs(5));
    eprintln!(
        "FAULT busy receiver: second sender ended {:.1?}",
        busy.elapsed
    );
    assert_eq!(busy.code(), Some(1), "{busy:?}");
    assert!(busy.stderr.contains("busy"), "{}", busy.stderr);
    assert_eq!(s.wait(LIMIT).code(), Some(0));
    assert_eq!(r.wait(LIMIT).code(), Some(0));
}

#[test]
fn data_port_in_use_is_named() {
    let _ports = Ports::take(1);
    let _held = TcpListener::bind(ports_in("127.0.0.1:@2"))
        .unwrap_or_else(|_| panic!("{}", ports_in("hold port @2")));
    let o = run("-r 127.0.0.1 -P 2 -p @1 -t 5", Duration::from_secs(5));
    eprintln!(
        "FAULT data port in use: receiver ended {:.1?}, exit {:?}",
        o.elapsed,
        o.code()
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains(&ports_in("data port @2")), "{}", o.stderr);
}

#[test]
fn sender_expecting_more_ports_fails_within_the_connect_deadline() {
    let _ports = Ports::take(1);
    let _r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 5");
    // The deadline is --timeout (3 s here): connecting plus one second of grace.
    let o = run(
        "-s 127.0.0.1 -P 2 -n 1 -p @1 -t 5 --timeout 3",
        Duration::from_secs(20),
    );
    eprintln!(
        "FAULT -P mismatch: sender ended {:.1?}, exit {:?}",
        o.elapsed,
        o.code()
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.within(Duration::from_secs(5)),
        "{:?} (waiter late {:?})",
        o.elapsed,
        o.late
    );
    assert!(
        o.stderr.contains("only 1 of 2 data connections"),
        "{}",
        o.stderr
    );
}

#[test]
fn sender_ends_on_time_when_the_receiver_stops_reading() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 3");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 3 --interval 0.5");
    s.wait_for_stdout("Gbit/s", Duration::from_secs(20)); // data is moving
    r.signal(19); // SIGSTOP: the receiver's windows fill up and stay full
    let so = s.wait(Duration::from_secs(10));
    r.signal(18);
    assert!(
        so.within(Duration::from_millis(5500)),
        "took {:?}",
        so.elapsed
    );
    let t = one_table(&so.stdout);
    assert_close(t.realtime, 3.0, 5.0, "sender measured its whole duration");
}

#[test]
fn receiver_ends_on_time_when_the_sender_stops_sending() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 3");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 3 --interval 0.5");
    s.wait_for_stdout("Gbit/s", Duration::from_secs(20)); // data is moving
    s.signal(19); // SIGSTOP: connections stay open but silent
    let ro = r.wait(Duration::from_secs(10));
    s.signal(18);
    assert_eq!(ro.code(), Some(0), "{ro:?}");
    assert!(
        ro.within(Duration::from_millis(5500)),
        "took {:?}",
        ro.elapsed
    );
    let t = one_table(&ro.stdout);
    assert_close(t.realtime, 3.0, 5.0, "receiver measured its whole duration");
}

#[test]
fn verbose_prints_the_settings_block_first() {
    let _ports = Ports::take(1);
    let o = run("-r 127.0.0.1 -P 3 -p @1 -t 1 -V -Z", LIMIT);
    assert_eq!(
        o.code(),
        Some(2),
        "usage errors come before the settings: {o:?}"
    );
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 1 -V");
    let so = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 1 -V", LIMIT);
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    assert!(
        so.stdout
            .contains("*** sender role\nconnections:\t\t\t 1 X 1 X 1\n"),
        "{}",
        so.stdout
    );
    assert!(
        ro.stdout.contains("*** receiver role\nports:\t\t\t\t 1\n"),
        "{}",
        ro.stdout
    );
    assert!(
        so.stderr.contains("1 connections created in"),
        "{}",
        so.stderr
    );
    one_table(&so.stdout);
}

#[test]
fn ipv6_loopback_both_spellings() {
    let _ports = Ports::take(1);
    check_pair(
        "-r ::1 -6 -P 1 -p @1 -W 1 -t 2",
        "-s [::1] -6 -P 1 -n 1 -p @1 -W 1 -t 2",
        2.0,
    );
}

#[test]
fn one_process_loopback_no_sync() {
    let _ports = Ports::take(1);
    one_process_agrees("--loopback -N -P 2 -n 1 -p @1 -W 1 -t 2");
}

#[test]
fn ctrl_c_on_receiver_prints_results_and_the_sender_reports_the_loss() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 20");
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 20 --interval 0.5",
    );
    s.wait_for_stdout("Gbit/s", Duration::from_secs(20)); // data is moving
    r.signal(2);
    let ro = r.wait(Duration::from_secs(5));
    let so = s.wait(Duration::from_secs(5));
    assert_eq!(ro.code(), Some(130), "{ro:?}");
    assert_eq!(
        so.code(),
        Some(1),
        "the receiver went away mid-test: {so:?}"
    );
    assert!(
        so.stderr.contains("test ended early: receiver")
            || so
                .stderr
                .contains(&ports_in("test ended early: send to receiver 127.0.0.1:@1")),
        "{}",
        so.stderr
    );
    let (rt, st) = (one_table(&ro.stdout), one_table(&so.stdout));
    assert!(rt.realtime < 5.0 && st.realtime < 5.0, "{rt:?} {st:?}");
    assert!(rt.meg > 1.0 && st.meg > 1.0);
}

#[test]
fn windows_sync_between_our_own_processes() {
    let _ports = Ports::with_tokens();
    check_pair(
        "-r -m 2,*,127.0.0.1 -p @31 -wu 1 -t 2",
        "-s -m 2,*,127.0.0.1 -p @31 -wu 1 -t 2",
        2.0,
    );
    check_pair(
        "-r -m 2,*,127.0.0.1 -p @40 -sp -wu 1 -t 2",
        "-s -m 2,*,127.0.0.1 -p @40 -sp -wu 1 -t 2",
        2.0,
    );
}
