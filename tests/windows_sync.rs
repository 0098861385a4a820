//! Windows NTttcp's sync (a token on a port 1000 above each data port, and the -sp port
//! hand-out), played byte for byte against our receiver and our sender, and a mismatch
//! of sync modes said as such.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::conformance::{IO, accept, blast, connect, drain, read4};
use crate::util::{Ports, assert_close, parse_tables, port, ports_in, spawn};

/// Windows NTttcp's per-thread token: one byte 'X' each way on data port + 1000.
pub(crate) fn swap_token(s: &mut TcpStream) {
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

/// The guide's likeliest mistake: `-ns` on the sender and nothing on the receiver. The
/// receiver says within a second of the first data connection that it came without the
/// handshake, names the flag that fixes it and keeps waiting; the sender's error names
/// the likely cause and the flag.
#[test]
fn a_sender_without_sync_against_a_syncing_receiver_is_named_on_both_sides() {
    let _ports = Ports::take(1);
    let limit = Duration::from_secs(20);
    let r = spawn("receiver", "-r -m 2,*,127.0.0.1 -p @1 -t 3");
    crate::util::wait_listening(port(0), limit);
    let s = spawn("sender", "-s -m 2,*,127.0.0.1 -p @1 -ns -t 3");
    // Said while the receiver still waits: long before any deadline of its own.
    r.wait_for_stderr("came without the sync handshake", Duration::from_secs(10));
    let so = s.wait(limit);
    assert_eq!(so.code(), Some(1), "{so:?}");
    assert!(
        so.stderr
            .contains("a receiver that syncs closes data connections")
            && so
                .stderr
                .contains("give it -N (-ns in Windows NTttcp's spelling)"),
        "{}",
        so.stderr
    );
    // Still waiting for a real sender: one that syncs gets its test.
    let ok = crate::util::run("-s -m 2,*,127.0.0.1 -p @1 -t 1", limit);
    assert_eq!(ok.code(), Some(0), "{ok:?}");
    let ro = r.wait(limit);
    assert_eq!(ro.code(), Some(0), "{ro:?}");
    let said = ro.stderr.matches("came without the sync handshake").count();
    assert_eq!(said, 1, "said once: {}", ro.stderr);
    assert!(ro.stderr.contains("give this receiver -N"), "{}", ro.stderr);
}

/// A peer on the sync port that is not ntttcp (an HTTP server answers with text) is named
/// as such, not as a sync message number.
#[test]
fn an_http_server_on_the_sync_port_is_named_as_not_ntttcp() {
    let _ports = Ports::take(1);
    let http = TcpListener::bind(ports_in("127.0.0.1:@0")).unwrap();
    let server = std::thread::spawn(move || {
        let (mut c, _) = http.accept().unwrap();
        let mut asked = [0u8; 4];
        c.read_exact(&mut asked).unwrap();
        c.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap();
        // Held open until the sender has read and gone.
        let _ = c.read(&mut asked);
    });
    let o = crate::util::run("-s -m 1,*,127.0.0.1 -p @1 -t 1", IO);
    server.join().unwrap();
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains(
            "the peer on the sync port is not ntttcp: it sent text \"HTTP\" (an HTTP server)"
        ),
        "{}",
        o.stderr
    );
}
