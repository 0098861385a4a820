//! Wire conformance with ntttcp-for-linux 1.4.3: the test plays a stock peer byte for byte
//! (ntttcp-for-linux's observed exchange) against our receiver and our sender.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::util::{Ports, assert_close, parse_tables, port, ports_in, spawn};

const X: [u8; 4] = [0, 0, 0, 0x58];
const R: [u8; 4] = [0, 0, 0, 0x52];
const E: [u8; 4] = [0, 0, 0, 0x45];
const NOT_STARTED: [u8; 4] = [0, 0, 0, 0x0b];
const RUNNING: [u8; 4] = [0, 0, 0, 0x0c];
const FINISHED: [u8; 4] = [0, 0, 0, 0x0d];
const IO: Duration = Duration::from_secs(10);

fn int(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn connect(port: u16) -> TcpStream {
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

fn accept(l: &TcpListener) -> TcpStream {
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

fn read4(s: &mut TcpStream) -> [u8; 4] {
    let mut b = [0u8; 4];
    s.read_exact(&mut b).expect("read a 4-byte sync message");
    b
}

/// Writes 'A's on `s` until `stop` (bounded by a 30 s guard); returns bytes written.
fn blast(mut s: TcpStream, stop: Arc<AtomicBool>) -> JoinHandle<u64> {
    std::thread::spawn(move || {
        let buf = vec![b'A'; 128 * 1024];
        let mut n = 0u64;
        let guard = Instant::now() + Duration::from_secs(30);
        s.set_write_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        while !stop.load(Ordering::Relaxed) && Instant::now() < guard {
            match s.write(&buf) {
                Ok(k) => n += k as u64,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
        n
    })
}

/// Reads `s` until EOF (bounded); returns bytes read.
fn drain(mut s: TcpStream, total: Arc<AtomicU64>) -> JoinHandle<()> {
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
    let r = spawn("receiver", "-r 127.0.0.1 -P 2 -p @1 -t 2");
    let mut sync = connect(port(0));
    sync.write_all(&X).unwrap();
    assert_eq!(read4(&mut sync), NOT_STARTED);
    sync.write_all(&int(2)).unwrap();
    assert_eq!(read4(&mut sync), int(2), "negotiated = proposal when equal");
    let stop = Arc::new(AtomicBool::new(false));
    let blasters: Vec<_> = [port(1), port(2)]
        .map(|p| blast(connect(p), stop.clone()))
        .into();
    sync.write_all(&R).unwrap();
    assert_eq!(read4(&mut sync), R);
    std::thread::sleep(Duration::from_millis(2300));
    // Equal -t and no W/C: the stock sender sends no 'E', it just closes.
    sync.shutdown(Shutdown::Write).unwrap();
    stop.store(true, Ordering::Relaxed);
    let sent: u64 = blasters.into_iter().map(|b| b.join().unwrap()).sum();
    let o = r.wait(IO);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let t = &parse_tables(&o.stdout)[0];
    assert_eq!(t.threads.len(), 2, "one row per port");
    assert_close(t.realtime, 2.0, 5.0, "receiver measured the negotiated 2 s");
    // The receiver counted at most what was sent, and most of it: its 2 s window covers
    // most of the ~2.3 s the stock sender blasted.
    let got = t.meg * 1048576.0;
    assert!(
        got <= sent as f64 && got >= 0.7 * sent as f64,
        "{t:?} sent {sent}"
    );
}

#[test]
fn stock_sender_with_warmup_cooldown_gets_finished_after_e() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -W 1 -t 2 -C 1");
    let mut sync = connect(port(0));
    sync.write_all(&X).unwrap();
    assert_eq!(read4(&mut sync), NOT_STARTED);
    sync.write_all(&int(4)).unwrap(); // W + t + C
    assert_eq!(read4(&mut sync), int(4));
    let stop = Arc::new(AtomicBool::new(false));
    let b = blast(connect(port(1)), stop.clone());
    sync.write_all(&R).unwrap();
    assert_eq!(read4(&mut sync), R);
    std::thread::sleep(Duration::from_secs(4));
    sync.write_all(&E).unwrap();
    assert_eq!(read4(&mut sync), FINISHED);
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
    let mut sync = connect(port(0));
    sync.write_all(&X).unwrap();
    assert_eq!(read4(&mut sync), NOT_STARTED);
    sync.write_all(&int(88)).unwrap();
    assert_eq!(
        read4(&mut sync),
        int(90),
        "88 is a proposal, the larger wins"
    );
    sync.write_all(&X).unwrap();
    assert_eq!(read4(&mut sync), NOT_STARTED, "still waiting for a start");
    drop(sync);
    let mut sync = connect(port(0));
    sync.write_all(&X).unwrap();
    assert_eq!(
        read4(&mut sync),
        NOT_STARTED,
        "a dropped session changes nothing"
    );
    sync.write_all(&int(82)).unwrap();
    assert_eq!(read4(&mut sync), int(90));
}

#[test]
fn second_stock_sender_sees_running_state() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2");
    let mut a = connect(port(0));
    a.write_all(&X).unwrap();
    assert_eq!(read4(&mut a), NOT_STARTED);
    a.write_all(&int(2)).unwrap();
    assert_eq!(read4(&mut a), int(2));
    let stop = Arc::new(AtomicBool::new(false));
    let b = blast(connect(port(1)), stop.clone());
    a.write_all(&R).unwrap();
    assert_eq!(read4(&mut a), R);
    let mut late = connect(port(0));
    late.write_all(&X).unwrap();
    assert_eq!(read4(&mut late), RUNNING);
    // Our receiver also answers a query on the running session.
    a.write_all(&X).unwrap();
    assert_eq!(read4(&mut a), RUNNING);
    std::thread::sleep(Duration::from_millis(2300));
    stop.store(true, Ordering::Relaxed);
    b.join().unwrap();
    drop(a);
    let ro = r.wait(IO);
    assert_eq!(ro.code(), Some(0), "{ro:?}");
}

/// Plays a stock receiver on `port` (sync `port - 1`) for a sender proposing `cycle`.
fn stock_receiver(port: u16, args: &str, cycle: u32, expect_end: bool) {
    let sync_l = TcpListener::bind(("127.0.0.1", port - 1)).unwrap();
    let data_l = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let s = spawn("sender", args);
    let mut sync = accept(&sync_l);
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(read4(&mut sync), int(cycle), "proposal = W + t + C");
    sync.write_all(&int(cycle)).unwrap();
    let total = Arc::new(AtomicU64::new(0));
    let d = drain(accept(&data_l), total.clone());
    assert_eq!(
        read4(&mut sync),
        R,
        "start request after the data connection"
    );
    sync.write_all(&R).unwrap();
    let mut rest = Vec::new();
    if expect_end {
        assert_eq!(read4(&mut sync), E);
        sync.write_all(&FINISHED).unwrap();
    }
    sync.read_to_end(&mut rest)
        .expect("sender closes the sync connection");
    assert!(rest.is_empty(), "unexpected sync bytes {rest:?}");
    let o = s.wait(IO);
    d.join().unwrap();
    assert_eq!(o.code(), Some(0), "{o:?}");
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
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&RUNNING).unwrap();
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
    let mut sync = accept(&sync_l);
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(read4(&mut sync), int(2));
    sync.write_all(&int(2)).unwrap();
    assert_eq!(read4(&mut sync), R);
    sync.write_all(&int(2)).unwrap();
    let o = s.wait(IO);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains("unexpected sync message 2"),
        "{}",
        o.stderr
    );
}

const W: [u8; 4] = [0, 0, 0, 0x57];
const L: [u8; 4] = [0, 0, 0, 0x4c];

/// A stock sender's handshake up to (not including) its start request.
fn stock_handshake(sync_port: u16, proposal: u32, expect: u32) -> TcpStream {
    let mut s = connect(sync_port);
    s.write_all(&X).unwrap();
    assert_eq!(read4(&mut s), NOT_STARTED);
    s.write_all(&int(proposal)).unwrap();
    assert_eq!(read4(&mut s), int(expect));
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
    a.write_all(&R).unwrap();
    assert_eq!(read4(&mut a), W, "a non-last client waits");
    let mut b = stock_handshake(port(0), 2, 2);
    let db = blast(connect(port(1)), stop.clone());
    b.write_all(&L).unwrap();
    assert_eq!(read4(&mut b), R, "the last client starts");
    assert_eq!(read4(&mut a), R, "and releases the waiting one");
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
        s.write_all(&R).unwrap();
        assert_eq!(read4(&mut s), W);
        waiting.push(s);
    }
    let mut eighth = stock_handshake(port(0), 2, 2);
    eighth.write_all(&R).unwrap();
    assert_eq!(
        read4(&mut eighth),
        E,
        "a clear reject beyond the client limit"
    );
}

#[test]
fn our_clients_against_a_stock_multi_client_receiver() {
    let _ports = Ports::take(1);
    // Non-last client: 'W', then 'R' when the last one arrives.
    let sync_l = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let data_l = TcpListener::bind(ports_in("127.0.0.1:@1")).unwrap();
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2");
    let mut sync = accept(&sync_l);
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(read4(&mut sync), int(2));
    sync.write_all(&int(2)).unwrap();
    let total = Arc::new(AtomicU64::new(0));
    let d = drain(accept(&data_l), total.clone());
    assert_eq!(read4(&mut sync), R);
    sync.write_all(&W).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    sync.write_all(&R).unwrap();
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
    let mut sync = accept(&sync_l);
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(read4(&mut sync), int(3));
    sync.write_all(&int(3)).unwrap();
    let d = drain(accept(&data_l), Arc::new(AtomicU64::new(0)));
    assert_eq!(read4(&mut sync), L);
    sync.write_all(&R).unwrap();
    sync.write_all(&R).unwrap(); // ntttcp-for-linux's duplicate
    assert_eq!(read4(&mut sync), E, "measured 2 s of a 3 s cycle");
    sync.write_all(&FINISHED).unwrap();
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
    let mut sync = accept(&sync_l);
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(read4(&mut sync), int(83), "82 ('R' on the wire) becomes 83");
    drop(sync);
    let o = s.wait(IO);
    assert!(o.stderr.contains("would be misread"), "{}", o.stderr);
}

/// Windows NTttcp's per-thread token: one byte 'X' each way on data port + 1000.
fn swap_token(s: &mut TcpStream) {
    let mut b = [0u8; 1];
    s.write_all(b"X").unwrap();
    s.read_exact(&mut b).expect("a token byte");
    assert_eq!(&b, b"X");
}

#[test]
fn windows_sync_stock_sender_against_our_receiver() {
    let _ports = Ports::with_tokens();
    // A Windows-only spelling (-wu) makes this a Windows line: tokens, not the Linux
    // handshake, and each side times itself.
    let r = spawn("receiver", "-r -m 2,*,127.0.0.1 -p @1 -wu 0 -t 2");
    let stop = Arc::new(AtomicBool::new(false));
    let mut blasters = Vec::new();
    for port in [port(1), port(2)] {
        let data = connect(port);
        let mut token = connect(port + 1000);
        swap_token(&mut token);
        blasters.push((data, token));
    }
    let sent: Vec<_> = blasters
        .into_iter()
        .map(|(d, _t)| blast(d, stop.clone()))
        .collect();
    std::thread::sleep(Duration::from_millis(2300));
    stop.store(true, Ordering::Relaxed);
    let sent: u64 = sent.into_iter().map(|b| b.join().unwrap()).sum();
    let o = r.wait(IO);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let t = &parse_tables(&o.stdout)[0];
    assert_close(t.realtime, 2.0, 5.0, "receiver's own clock");
    assert!(t.meg > 1.0 && t.meg * 1048576.0 <= sent as f64, "{t:?}");
    // No ntttcp-for-linux sync port is opened on a Windows line.
    assert!(TcpStream::connect(ports_in("127.0.0.1:@0")).is_err());
}

#[test]
fn windows_sync_our_sender_against_a_stock_receiver_with_port_handout() {
    let _ports = Ports::with_tokens();
    // -sp: the receiver hands out base+1 over the base port (4 bytes, little-endian).
    let base = TcpListener::bind(ports_in("127.0.0.1:@10")).unwrap();
    let data_l = TcpListener::bind(ports_in("127.0.0.1:@11")).unwrap();
    let token_l = TcpListener::bind(ports_in("127.0.0.1:@1011")).unwrap();
    let s = spawn("sender", "-s -m 1,*,127.0.0.1 -p @10 -sp -t 2");
    let mut ask = accept(&base);
    ask.write_all(&u32::from(port(11)).to_le_bytes()).unwrap();
    drop(ask);
    let total = Arc::new(AtomicU64::new(0));
    let d = drain(accept(&data_l), total.clone());
    let mut token = accept(&token_l);
    let mut b = [0u8; 1];
    token.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"X");
    token.write_all(b"X").unwrap();
    let o = s.wait(IO);
    d.join().unwrap();
    assert_eq!(o.code(), Some(0), "{o:?}");
    let t = &parse_tables(&o.stdout)[0];
    assert_close(t.realtime, 2.0, 5.0, "sender's own clock");
    assert!(t.meg > 1.0 && t.meg * 1048576.0 <= total.load(Ordering::Relaxed) as f64 * 1.01);
}

#[test]
fn windows_sync_port_handout_from_our_receiver() {
    let _ports = Ports::with_tokens();
    let r = spawn("receiver", "-r -m 2,*,127.0.0.1 -p @20 -sp -t 1");
    let mut ports = Vec::new();
    for _ in 0..2 {
        let mut s = connect(port(20));
        ports.push(u32::from_le_bytes(read4(&mut s)));
    }
    assert_eq!(
        ports,
        [u32::from(port(21)), u32::from(port(22))],
        "base+1, base+2 in arrival order"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let mut pairs = Vec::new();
    for p in &ports {
        let data = connect(*p as u16);
        let mut token = connect(*p as u16 + 1000);
        swap_token(&mut token);
        pairs.push(data);
    }
    let b: Vec<_> = pairs.into_iter().map(|d| blast(d, stop.clone())).collect();
    std::thread::sleep(Duration::from_millis(1300));
    stop.store(true, Ordering::Relaxed);
    for x in b {
        x.join().unwrap();
    }
    let o = r.wait(IO);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(parse_tables(&o.stdout)[0].threads.len(), 2);
}

#[test]
fn mismatched_sync_says_so_and_suggests_running_without_it() {
    let _ports = Ports::with_tokens();
    // The receiver (once its `listening` port is up), then the sender: exit 1 and
    // an error containing `says`.
    let mismatch = |receiver: &str, listening: u16, sender: &str, says: &str| {
        let limit = Duration::from_secs(20);
        let r = spawn("receiver", receiver);
        crate::util::wait_listening(listening, limit);
        let s = spawn("sender", sender).wait(limit);
        assert_eq!(s.code(), Some(1), "{s:?}");
        assert!(s.stderr.contains(says), "{}", s.stderr);
        drop(r);
    };
    // A Windows-sync sender (a Windows line without -ns) against an ntttcp-for-linux
    // receiver: no token port answers, or the receiver resets the unannounced data
    // connections; either way the error says what is wrong and what to do.
    mismatch(
        "-r -m 1,*,127.0.0.1 -p @1 -t 5",
        port(0),
        "-s -m 1,*,127.0.0.1 -p @1 -wu 0 -t 3 --timeout 2",
        "run both sides without sync (-ns here",
    );
    // An ntttcp-for-linux sender against a Windows-sync receiver, which has no sync port.
    mismatch(
        "-r -m 1,*,127.0.0.1 -p @11 -wu 0 -t 5",
        port(11),
        "-s -m 1,*,127.0.0.1 -p @11 -t 3 --timeout 2",
        "run both sides without sync: -N here",
    );
}

/// Our extension's probe: a negative proposal, which no stock sender sends.
const PROBE: [u8; 4] = [0xA7, b'N', b'T', 1];

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
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(
        read4(&mut sync),
        PROBE,
        "the probe comes where the proposal would"
    );
    // A stock receiver takes it for a proposal shorter than its own -t: it answers that.
    sync.write_all(&int(2)).unwrap();
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
    stock_receiver(port(1), "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", 2, false);
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
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(read4(&mut sync), PROBE);
    sync.write_all(&[0xA8, b'N', b'T', features]).unwrap();
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
    assert_eq!(read4(&mut sync), [0xA9, b'N', b'T', 1]);
    sync.write_all(&[0xA9, b'N', b'T', 1]).unwrap();
    assert_eq!(read4(&mut sync), int(2), "then the plain proposal");
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
    assert_eq!(read4(&mut sync), X);
    sync.write_all(&NOT_STARTED).unwrap();
    assert_eq!(read4(&mut sync), PROBE);
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
