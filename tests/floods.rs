//! Hostile peers: idle and flooding connections on the sync and data ports, and bounded
//! connects.

use std::io::Read;
use std::time::Duration;

use crate::faults::{sync_read, sync_send};
use crate::util::{Launch, Ports, parse_tables, port, ports_in, run, spawn, wait_listening};

/// One hostile sync session: connects, queries, proposes, then only queries.
struct Idler(Option<std::net::TcpStream>);

impl Idler {
    /// One round: (re)connect and handshake if needed, else one more query. A session
    /// the receiver closed is opened again next round.
    fn round(&mut self, sync_port: u16) {
        let io = |s: &mut Option<std::net::TcpStream>| -> std::io::Result<()> {
            use std::io::{Read, Write};
            let mut b = [0u8; 4];
            if s.is_none() {
                let c = std::net::TcpStream::connect(("127.0.0.1", sync_port))?;
                c.set_read_timeout(Some(Duration::from_secs(2)))?;
                c.set_write_timeout(Some(Duration::from_secs(2)))?;
                let mut c = Some(c);
                let t = c.as_mut().unwrap();
                t.write_all(&u32::from(b'X').to_be_bytes())?;
                t.read_exact(&mut b)?;
                t.write_all(&5u32.to_be_bytes())?;
                t.read_exact(&mut b)?;
                *s = c;
                return Ok(());
            }
            let t = s.as_mut().unwrap();
            t.write_all(&u32::from(b'X').to_be_bytes())?;
            t.read_exact(&mut b)
        };
        if io(&mut self.0).is_err() {
            self.0 = None;
        }
    }
}

/// 300 sessions that query once a second (reconnecting whenever they are closed) never
/// starve the sync port: a real sender 25 s in is served and completes.
#[test]
fn idle_sync_sessions_cannot_starve_a_real_sender() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2");
    wait_listening(port(0), Duration::from_secs(20));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let begin = std::time::Instant::now();
    let attackers: Vec<_> = (0..6)
        .map(|_| {
            let stop = stop.clone();
            let sync = port(0);
            std::thread::spawn(move || {
                let mut idlers: Vec<Idler> = (0..50).map(|_| Idler(None)).collect();
                let mut next = std::time::Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && begin.elapsed() < Duration::from_secs(40)
                {
                    for i in &mut idlers {
                        i.round(sync);
                    }
                    next += Duration::from_secs(1);
                    std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
                }
            })
        })
        .collect();
    while begin.elapsed() < Duration::from_secs(25) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", Duration::from_secs(40));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for a in attackers {
        a.join().unwrap();
    }
    let ro = r.wait(Duration::from_secs(30));
    eprintln!(
        "FAULT 300 idle sync sessions: real sender exit {:?} in {:.1?}",
        s.code(),
        s.elapsed
    );
    assert_eq!(s.code(), Some(0), "{s:?}");
    assert_eq!(ro.code(), Some(0), "{ro:?}");
    assert!(parse_tables(&ro.stdout)[0].meg > 1.0);
}

/// Opens `n` connections to the receiver's data ports (alternating) and holds them.
fn connect_many(first_port: u16, n: usize) -> Vec<std::net::TcpStream> {
    (0..n)
        .filter_map(|i| {
            std::net::TcpStream::connect(("127.0.0.1", first_port + (i % 2) as u16)).ok()
        })
        .collect()
}

/// 20,000 idle connects (held 5,000 at a time) outside a test, and 2,000 during one: each
/// is closed at once, the receiver stays small, serves the real sender, counts exactly
/// its connections, and gives its memory back.
#[test]
fn a_flood_of_idle_data_connections_is_closed_at_once() {
    let _ports = Ports::take(1);
    let _quiet = crate::util::exclusive();
    crate::util::raise_own_nofile(6_000);
    let r = spawn("receiver", "-r 127.0.0.1 -P 2 -p @1 -t 3 -H --format jsonl");
    wait_listening(port(0), Duration::from_secs(20));
    wait_listening(port(2), Duration::from_secs(20));
    let base = crate::util::rss_kib(r.pid());
    let mut peak = base;
    let mut made = 0;
    for _ in 0..4 {
        let held = connect_many(port(1), 5_000);
        made += held.len();
        peak = peak.max(crate::util::rss_kib(r.pid()));
        drop(held);
    }
    eprintln!("FLOOD {made} idle connects: receiver RSS {base} KiB before, peak {peak} KiB");
    assert!(made >= 19_000, "{made} connects");
    assert!(peak < 100 * 1024, "peak RSS {peak} KiB");

    let s = spawn("sender", "-s 127.0.0.1 -P 2 -n 1 -p @1 -t 3");
    r.wait_for_stdout("\"type\":\"interval\"", Duration::from_secs(30));
    let during = connect_many(port(1), 2_000);
    let so = s.wait(Duration::from_secs(30));
    drop(during);
    assert_eq!(so.code(), Some(0), "{so:?}");
    r.wait_for_stdout("\"type\":\"summary\"", Duration::from_secs(30));
    let after = crate::util::rss_kib(r.pid());
    r.signal(15);
    let ro = r.wait(Duration::from_secs(20));
    assert_eq!(ro.code(), Some(0), "{ro:?}");
    let summary = ro
        .stdout
        .lines()
        .find(|l| l.contains("\"type\":\"summary\""))
        .expect("a summary line");
    let doc: serde_json::Value = serde_json::from_str(summary).unwrap();
    assert_eq!(
        doc["report"]["connections"], 2,
        "only the sender's connections count"
    );
    assert!(doc["report"]["totals"]["bytes"].as_u64().unwrap() > 0);
    assert!(
        after < base + 20 * 1024,
        "RSS {after} KiB after, {base} KiB before"
    );
}

/// While a handshake keeps the data ports open, a flood stops at the descriptor budget:
/// the sync port still answers (its descriptors are reserved).
#[test]
fn a_flood_during_a_handshake_leaves_descriptors_for_the_sync_port() {
    let _ports = Ports::take(1);
    crate::util::raise_own_nofile(2_000);
    let r = Launch::new("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2")
        .nofile(400)
        .spawn();
    wait_listening(port(0), Duration::from_secs(20));
    let mut attacker = std::net::TcpStream::connect(ports_in("127.0.0.1:@0")).expect("sync");
    attacker
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sync_send(&mut attacker, u32::from(b'X'));
    assert_eq!(sync_read(&mut attacker), 11);
    sync_send(&mut attacker, 2);
    assert_eq!(sync_read(&mut attacker), 2);
    let flood: Vec<_> = (0..500)
        .filter_map(|_| std::net::TcpStream::connect(ports_in("127.0.0.1:@1")).ok())
        .collect();
    assert!(flood.len() > 400, "{} connects", flood.len());
    // Each of these needs a descriptor on the receiver: still there.
    for _ in 0..20 {
        let mut s = std::net::TcpStream::connect(ports_in("127.0.0.1:@0")).expect("sync port");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        sync_send(&mut s, u32::from(b'X'));
        assert_eq!(
            sync_read(&mut s),
            11,
            "the sync port answers during the flood"
        );
    }
    let fds = std::fs::read_dir(format!("/proc/{}/fd", r.pid()))
        .unwrap()
        .count();
    assert!(fds < 400, "{fds} descriptors open");
    drop(flood);
    drop(attacker);
    r.signal(2);
    let _ = r.wait(Duration::from_secs(20));
}

/// Windows `-to` (milliseconds) is the connect deadline: with nobody listening, a sender
/// gives up after it, and within the product's 1.5 s more.
#[test]
fn windows_to_bounds_the_connect() {
    let _ports = Ports::take(1);
    let o = run(
        "-s -m 1,*,127.0.0.1 -ns -p @71 -t 2 -to 1500",
        Duration::from_secs(30),
    );
    eprintln!(
        "FAULT no receiver with -to 1500: exit {:?} after {:.1?}",
        o.code(),
        o.elapsed
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("data connections"), "{}", o.stderr);
    assert!(
        o.elapsed >= Duration::from_millis(1500) && o.within(Duration::from_millis(1500 + 1500)),
        "{:?}",
        o.elapsed
    );
}

/// At most 256 handshakes are held at once: the 257th and later make room by closing
/// the sessions idle longest (here the first 44 opened), the rest stay open.
#[test]
fn the_sync_port_holds_at_most_256_sessions() {
    let _ports = Ports::take(1);
    crate::util::raise_own_nofile(1_000);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @81 -t 2");
    wait_listening(port(80), Duration::from_secs(20));
    let sessions: Vec<std::net::TcpStream> = (0..300)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(ports_in("127.0.0.1:@80")).expect("sync port");
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            sync_send(&mut s, u32::from(b'X'));
            assert_eq!(sync_read(&mut s), 11);
            sync_send(&mut s, 2);
            assert_eq!(sync_read(&mut s), 2);
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    let closed = |s: &std::net::TcpStream| {
        let mut b = [0u8; 4];
        match (&*s).read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        }
    };
    let start = std::time::Instant::now();
    let gone = loop {
        let gone: Vec<usize> = (0..sessions.len())
            .filter(|&i| closed(&sessions[i]))
            .collect();
        if gone.len() >= 44 || start.elapsed() > Duration::from_secs(10) {
            break gone;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        gone,
        (0..44).collect::<Vec<_>>(),
        "the oldest idle sessions made room"
    );
    drop(sessions);
    r.signal(9);
}
