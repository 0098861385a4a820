//! Wire conformance with ntttcp-for-linux 1.4.3: the test plays a stock peer byte for byte
//! (ntttcp-for-linux's observed exchange) against our receiver and our sender.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::util::{Ports, assert_close, json, parse_tables, port, ports_in, spawn};

pub(crate) const X: [u8; 4] = [0, 0, 0, 0x58];
pub(crate) const R: [u8; 4] = [0, 0, 0, 0x52];
pub(crate) const E: [u8; 4] = [0, 0, 0, 0x45];
pub(crate) const NOT_STARTED: [u8; 4] = [0, 0, 0, 0x0b];
pub(crate) const RUNNING: [u8; 4] = [0, 0, 0, 0x0c];
pub(crate) const FINISHED: [u8; 4] = [0, 0, 0, 0x0d];
pub(crate) const IO: Duration = Duration::from_secs(10);

pub(crate) fn int(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

pub(crate) fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + IO;
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => {
                s.set_read_timeout(Some(IO)).unwrap();
                s.set_write_timeout(Some(IO)).unwrap();
                return s;
            }
            Err(e) => {
                assert!(Instant::now() < deadline, "connect to {port}: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

pub(crate) fn accept(l: &TcpListener) -> TcpStream {
    l.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + IO;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(IO)).unwrap();
                s.set_write_timeout(Some(IO)).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "nobody connected");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

pub(crate) fn read4(s: &mut TcpStream) -> [u8; 4] {
    let mut b = [0u8; 4];
    s.read_exact(&mut b).expect("read a 4-byte sync message");
    b
}

/// One step of a stock ntttcp-for-linux peer's part of the sync exchange: a message it
/// says, or the message it must hear next (and what that message means).
pub(crate) enum Step {
    Say([u8; 4]),
    Hear([u8; 4], &'static str),
}

pub(crate) use Step::{Hear, Say};

/// Plays a stock peer's script on the sync connection `s`, step by step; fails at the
/// first message that differs, naming the step.
pub(crate) fn play(s: &mut TcpStream, script: &[Step]) {
    for (i, step) in script.iter().enumerate() {
        match step {
            Say(m) => s
                .write_all(m)
                .unwrap_or_else(|e| panic!("step {i}: say {m:?}: {e}")),
            Hear(m, what) => assert_eq!(read4(s), *m, "step {i}: {what}"),
        }
    }
}

/// A stock sender's opening: it asks the receiver's state, hears "not started", proposes
/// its cycle (W + t + C) and hears the negotiated one.
pub(crate) fn sender_opening(proposal: u32, negotiated: u32) -> [Step; 4] {
    [
        Say(X),
        Hear(NOT_STARTED, "a fresh receiver has not started"),
        Say(int(proposal)),
        Hear(int(negotiated), "the negotiated cycle"),
    ]
}

/// A stock receiver's answers to a sender's opening that proposes `cycle`: "not
/// started", then the same cycle back.
pub(crate) fn receiver_opening(cycle: u32) -> [Step; 4] {
    [
        Hear(X, "the sender first asks the state"),
        Say(NOT_STARTED),
        Hear(int(cycle), "proposal = W + t + C"),
        Say(int(cycle)),
    ]
}

/// Our extension's probe, which our sender sends where the proposal would be.
pub(crate) const PROBE: [u8; 4] = [0xA7, b'N', b'T', 1];

/// Plays a stock receiver (whose own `-t` is `own_t`) on our sender's first session: it
/// takes the probe for a proposal shorter than its `-t` and answers that, and the sender
/// closes the session, saying nothing more, to start over on a new one.
pub(crate) fn accept_probe(l: &TcpListener, own_t: u32) {
    let mut s = accept(l);
    let script = [
        Hear(X, "the state query"),
        Say(NOT_STARTED),
        Hear(PROBE, "our extension's probe, where the proposal would be"),
        Say(int(own_t)),
    ];
    play(&mut s, &script);
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .expect("the sender closes the probe session");
    assert!(rest.is_empty(), "bytes after the probe: {rest:?}");
}

/// Plays a stock receiver against our sender on `l`: the probe session, then, on the
/// second session, the stock opening for `cycle`, byte for byte.
pub(crate) fn accept_opening(l: &TcpListener, cycle: u32) -> TcpStream {
    accept_probe(l, cycle);
    let mut sync = accept(l);
    play(&mut sync, &receiver_opening(cycle));
    sync
}

/// Writes 'A's on `s` until `stop` (bounded by a 30 s guard); returns bytes written.
pub(crate) fn blast(s: TcpStream, stop: Arc<AtomicBool>) -> JoinHandle<u64> {
    std::thread::spawn(move || pour(s, &stop, |_| {}))
}

/// As `blast`, returning when each write returned (seconds on the wall clock) and the
/// bytes written by then: what was sent within any stretch of the wall clock.
pub(crate) fn blast_logged(s: TcpStream, stop: Arc<AtomicBool>) -> JoinHandle<Vec<(f64, u64)>> {
    std::thread::spawn(move || {
        let mut log = Vec::with_capacity(1 << 16);
        pour(s, &stop, |n| log.push((unix_now(), n)));
        log
    })
}

fn pour(mut s: TcpStream, stop: &AtomicBool, mut wrote: impl FnMut(u64)) -> u64 {
    let buf = vec![b'A'; 128 * 1024];
    let mut n = 0u64;
    let guard = Instant::now() + Duration::from_secs(30);
    s.set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while !stop.load(Ordering::Relaxed) && Instant::now() < guard {
        match s.write(&buf) {
            Ok(k) => {
                n += k as u64;
                wrote(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
    n
}

fn unix_now() -> f64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.unwrap_or_default().as_secs_f64()
}

/// Bytes a `blast_logged` log says were written from `from` to `to` (wall clock, s).
fn written_between(log: &[(f64, u64)], from: f64, to: f64) -> u64 {
    let by = |t: f64| match log.partition_point(|&(at, _)| at <= t) {
        0 => 0,
        i => log[i - 1].1,
    };
    by(to) - by(from)
}

/// The most bytes one connection can hold between a write's return and the peer's
/// count: the largest send buffer and receive buffer the kernel's autotuning may grow to.
fn most_in_flight() -> u64 {
    let max = |name: &str| -> u64 {
        let text = std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}")).unwrap();
        text.split_whitespace().last().unwrap().parse().unwrap()
    };
    max("tcp_wmem") + max("tcp_rmem")
}

/// Reads `s` until EOF (bounded); returns bytes read.
pub(crate) fn drain(mut s: TcpStream, total: Arc<AtomicU64>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let guard = Instant::now() + Duration::from_secs(30);
        while Instant::now() < guard {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => {
                    total.fetch_add(k as u64, Ordering::Relaxed);
                }
            }
        }
    })
}

#[test]
fn stock_sender_against_our_receiver_normal_run() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 2 -p @1 -t 2 --format json");
    // Equal proposals: the negotiated cycle is the proposal.
    let mut sync = stock_handshake(port(0), 2, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let blasters: Vec<_> = [port(1), port(2)]
        .map(|p| blast_logged(connect(p), stop.clone()))
        .into();
    play(&mut sync, &[Say(R), Hear(R, "started")]);
    std::thread::sleep(Duration::from_millis(2300));
    // Equal -t and no W/C: the stock sender sends no 'E', it just closes.
    sync.shutdown(Shutdown::Write).unwrap();
    stop.store(true, Ordering::Relaxed);
    let logs: Vec<_> = blasters.into_iter().map(|b| b.join().unwrap()).collect();
    let o = r.wait(IO);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let rx = &json(&o)["reports"][0];
    assert_eq!(rx["threads"].as_array().unwrap().len(), 2, "one per port");
    let window = rx["duration_s"].as_f64().unwrap();
    assert_close(window, 2.0, 5.0, "receiver measured the negotiated 2 s");
    // The receiver counted what was written within its window, give or take what the
    // connections held at its two edges (whatever the machine's load did to the rates).
    let (from, to) = (
        rx["window_start_unix_s"].as_f64().unwrap(),
        rx["window_end_unix_s"].as_f64().unwrap(),
    );
    let sent: u64 = logs.iter().map(|l| written_between(l, from, to)).sum();
    let got = rx["totals"]["bytes"].as_u64().unwrap();
    let slack = logs.len() as u64 * most_in_flight();
    assert!(
        got.abs_diff(sent) <= slack,
        "received {got} in its window, {sent} were written within it (slack {slack})"
    );
}

#[test]
fn stock_sender_with_warmup_cooldown_gets_finished_after_e() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -W 1 -t 2 -C 1");
    let mut sync = stock_handshake(port(0), 4, 4);
    let stop = Arc::new(AtomicBool::new(false));
    let b = blast(connect(port(1)), stop.clone());
    play(&mut sync, &[Say(R), Hear(R, "started")]);
    std::thread::sleep(Duration::from_secs(4));
    play(&mut sync, &[Say(E), Hear(FINISHED, "the end of the test")]);
    stop.store(true, Ordering::Relaxed);
    b.join().unwrap();
    drop(sync);
    let o = r.wait(IO);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_close(parse_tables(&o.stdout)[0].realtime, 2.0, 5.0, "measured");
}

#[test]
fn colliding_cycle_times_are_read_as_cycle_times() {
    let _ports = Ports::take(1);
    // A stock C receiver reads 88 as 'X' and 82 as 'R'; ours decodes by phase.
    let _r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 90");
    // 88 is a proposal: the larger cycle wins.
    let mut sync = stock_handshake(port(0), 88, 90);
    play(
        &mut sync,
        &[Say(X), Hear(NOT_STARTED, "still waiting for a start")],
    );
    drop(sync);
    // A dropped session changes nothing.
    stock_handshake(port(0), 82, 90);
}

#[test]
fn second_stock_sender_sees_running_state() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2");
    let mut a = stock_handshake(port(0), 2, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let b = blast(connect(port(1)), stop.clone());
    play(&mut a, &[Say(R), Hear(R, "started")]);
    let mut late = connect(port(0));
    play(&mut late, &[Say(X), Hear(RUNNING, "a second sender")]);
    // Our receiver also answers a query on the running session.
    play(&mut a, &[Say(X), Hear(RUNNING, "the running session")]);
    std::thread::sleep(Duration::from_millis(2300));
    stop.store(true, Ordering::Relaxed);
    b.join().unwrap();
    drop(a);
    let ro = r.wait(IO);
    assert_eq!(ro.code(), Some(0), "{ro:?}");
}

/// Plays a stock receiver on `port` (sync `port - 1`) for a sender proposing `cycle`.
pub(crate) fn stock_receiver(port: u16, args: &str, cycle: u32, expect_end: bool) {
    let sync_l = TcpListener::bind(("127.0.0.1", port - 1)).unwrap();
    let data_l = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let s = spawn("sender", args);
    let mut sync = accept_opening(&sync_l, cycle);
    let total = Arc::new(AtomicU64::new(0));
    let d = drain(accept(&data_l), total.clone());
    play(
        &mut sync,
        &[Hear(R, "start request after the data connection"), Say(R)],
    );
    let mut rest = Vec::new();
    if expect_end {
        play(&mut sync, &[Hear(E, "an early end"), Say(FINISHED)]);
    }
    sync.read_to_end(&mut rest)
        .expect("sender closes the sync connection");
    assert!(rest.is_empty(), "unexpected sync bytes {rest:?}");
    let o = s.wait(IO);
    d.join().unwrap();
    assert_eq!(o.code(), Some(0), "{o:?}");
    let said = o.stderr.matches("its figures are not available").count();
    assert_eq!(said, 1, "the stock receiver is named once: {}", o.stderr);
    let t = &parse_tables(&o.stdout)[0];
    assert!(t.meg > 1.0);
    assert!(t.meg * 1048576.0 <= total.load(Ordering::Relaxed) as f64 * 1.01);
}

#[test]
fn our_sender_against_stock_receiver_normal_run() {
    let _ports = Ports::take(1);
    stock_receiver(port(1), "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", 2, false);
}

#[test]
fn our_sender_against_stock_receiver_with_warmup_cooldown_sends_e() {
    let _ports = Ports::take(1);
    stock_receiver(
        port(1),
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -W 1 -t 2 -C 1",
        4,
        true,
    );
}

#[test]
fn our_sender_refuses_a_busy_stock_receiver() {
    let _ports = Ports::take(1);
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2");
    let mut sync = accept(&sync_l);
    play(&mut sync, &[Hear(X, "the state query"), Say(RUNNING)]);
    let o = s.wait(IO);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("busy"), "{}", o.stderr);
}

#[test]
fn our_sender_rejects_a_stale_start_reply() {
    let _ports = Ports::take(1);
    // ntttcp-for-linux answers 'L' without -M with a stale value; any non-start reply
    // must fail cleanly.
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let _data_l = TcpListener::bind(ports_in("127.0.0.1:@1")).unwrap();
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2");
    let mut sync = accept_opening(&sync_l, 2);
    play(&mut sync, &[Hear(R, "the start request"), Say(int(2))]);
    let o = s.wait(IO);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains("unexpected sync message 2"),
        "{}",
        o.stderr
    );
}

pub(crate) const W: [u8; 4] = [0, 0, 0, 0x57];
pub(crate) const L: [u8; 4] = [0, 0, 0, 0x4c];

/// A stock sender's handshake up to (not including) its start request.
pub(crate) fn stock_handshake(sync_port: u16, proposal: u32, expect: u32) -> TcpStream {
    let mut s = connect(sync_port);
    play(&mut s, &sender_opening(proposal, expect));
    s
}

#[test]
fn stock_multi_client_senders_against_our_receiver() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 -M");
    // -M: every sender is told the receiver's own duration, whatever it proposed.
    let mut a = stock_handshake(port(0), 5, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let da = blast(connect(port(1)), stop.clone());
    play(&mut a, &[Say(R), Hear(W, "a non-last client waits")]);
    let mut b = stock_handshake(port(0), 2, 2);
    let db = blast(connect(port(1)), stop.clone());
    play(&mut b, &[Say(L), Hear(R, "the last client starts")]);
    play(&mut a, &[Hear(R, "and releases the waiting one")]);
    std::thread::sleep(Duration::from_millis(2300));
    stop.store(true, Ordering::Relaxed);
    let sent = da.join().unwrap() + db.join().unwrap();
    for s in [&mut a, &mut b] {
        s.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "no second 'R' or other bytes: {rest:?}");
    }
    let o = r.wait(IO);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let t = &parse_tables(&o.stdout)[0];
    assert!(t.meg * 1048576.0 <= sent as f64 && t.meg > 1.0, "{t:?}");
}

#[test]
fn eighth_waiting_client_is_rejected() {
    let _ports = Ports::take(1);
    let _r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 -M");
    let mut waiting = Vec::new();
    for _ in 0..7 {
        let mut s = stock_handshake(port(0), 2, 2);
        play(&mut s, &[Say(R), Hear(W, "a waiting client")]);
        waiting.push(s);
    }
    let mut eighth = stock_handshake(port(0), 2, 2);
    play(
        &mut eighth,
        &[Say(R), Hear(E, "a clear reject beyond the client limit")],
    );
}

#[test]
fn our_clients_against_a_stock_multi_client_receiver() {
    let _ports = Ports::take(1);
    // Non-last client: 'W', then 'R' when the last one arrives.
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let data_l = TcpListener::bind(ports_in("127.0.0.1:@1")).unwrap();
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2");
    let mut sync = accept_opening(&sync_l, 2);
    let total = Arc::new(AtomicU64::new(0));
    let d = drain(accept(&data_l), total.clone());
    play(&mut sync, &[Hear(R, "the start request"), Say(W)]);
    std::thread::sleep(Duration::from_millis(500));
    play(&mut sync, &[Say(R)]);
    let mut rest = Vec::new();
    sync.read_to_end(&mut rest).unwrap();
    let o = s.wait(IO);
    d.join().unwrap();
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(
        o.stderr.contains("waiting for the last client"),
        "{}",
        o.stderr
    );

    // Last client with warm-up: the stock receiver's duplicate 'R' must not be taken for
    // the answer to 'E'.
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@10")).unwrap();
    let data_l = TcpListener::bind(ports_in("127.0.0.1:@11")).unwrap();
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @11 -W 1 -t 2 -L -V");
    let mut sync = accept_opening(&sync_l, 3);
    let d = drain(accept(&data_l), Arc::new(AtomicU64::new(0)));
    // ntttcp-for-linux answers the last client's 'L' with 'R' twice.
    let script = [
        Hear(L, "the last client's start"),
        Say(R),
        Say(R),
        Hear(E, "measured 2 s of a 3 s cycle"),
        Say(FINISHED),
    ];
    play(&mut sync, &script);
    let o = s.wait(IO);
    d.join().unwrap();
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(
        o.stderr.contains("receiver exited from current test"),
        "{}",
        o.stderr
    );
}

#[test]
fn colliding_cycle_is_proposed_one_second_longer() {
    let _ports = Ports::take(1);
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -W 1 -t 80 -C 1");
    accept_probe(&sync_l, 80);
    let mut sync = accept(&sync_l);
    let script = [
        Hear(X, "the state query"),
        Say(NOT_STARTED),
        Hear(int(83), "82 ('R' on the wire) becomes 83"),
    ];
    play(&mut sync, &script);
    drop(sync);
    let o = s.wait(IO);
    assert!(o.stderr.contains("would be misread"), "{}", o.stderr);
}
