//! Coordination between real processes: hold, multi-client, mismatched settings, ports in
//! use, and the sync listener under bad input.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::util::{
    Ports, assert_close, attempt_at, close_or_starved, json, multi_client_at, parse_tables, port,
    ports_in, promise, report, rss_kib, run, spawn,
};

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn hold_serves_one_sender_after_another_until_sigterm() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 -H");
    for n in 1..=2 {
        let s = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", LIMIT);
        assert_eq!(s.code(), Some(0), "{s:?}");
        // Its report is out, so the next sender finds the receiver free.
        r.wait_for_stdout_count("#####  Totals:  #####", n, LIMIT);
    }
    r.signal(15);
    let ro = r.wait(Duration::from_secs(5));
    assert_eq!(ro.code(), Some(0), "stopped between tests: {ro:?}");
    let t = parse_tables(&ro.stdout);
    assert_eq!(t.len(), 2, "one table set per test:\n{}", ro.stdout);
    assert_eq!(
        ro.stdout.matches("Network activity progressing...").count(),
        2
    );
    for x in &t {
        assert_close(x.realtime, 2.0, 5.0, "each test measured on its own");
        assert!(x.meg > 1.0);
    }
}

#[test]
fn hold_survives_a_killed_sender_and_serves_the_next() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 10 -H");
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 10 --interval 0.5",
    );
    s.wait_for_stdout("Gbit/s", LIMIT);
    s.signal(9);
    drop(s);
    // The killed test's report is out: the receiver is free for the next sender.
    r.wait_for_stdout("#####  Totals:  #####", LIMIT);
    let ok = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", LIMIT);
    assert_eq!(ok.code(), Some(0), "the next sender is served: {ok:?}");
    r.signal(2);
    let ro = r.wait(Duration::from_secs(5));
    let t = parse_tables(&ro.stdout);
    assert_eq!(t.len(), 2, "{}", ro.stdout);
    assert!(
        t[0].realtime < 4.0,
        "the killed test reports its own time: {:?}",
        t[0]
    );
    // A killed sender closes its sync and data connections at once; either is seen first.
    assert!(
        ro.stderr.contains("test ended early: sender")
            || ro
                .stderr
                .contains("test ended early: all data connections closed"),
        "{}",
        ro.stderr
    );
    // The worst test decides the status: one of them lost its sender.
    assert_eq!(ro.code(), Some(1), "{ro:?}");
}

/// A multi-client receiver (`-M`) waits for the last client (`-L`) and counts both
/// senders' bytes on its two ports: its total is theirs together within 1 % (a promise:
/// a starved run says so).
#[test]
fn multi_client_test_sums_all_senders() {
    let _ports = Ports::take(1);
    promise("the receiver's total vs both senders' within 1 %", |i| {
        let (ao, bo, ro) = multi_client_at(attempt_at(0, i), "");
        let (ad, bd, rd) = (json(&ao), json(&bo), json(&ro));
        let r = report(&rd);
        assert_eq!(
            r["threads"].as_array().map(Vec::len),
            Some(2),
            "one per port: {rd}"
        );
        let bytes = |d: &serde_json::Value| report(d)["totals"]["bytes"].as_f64().unwrap();
        let reports = [report(&ad), report(&bd), r];
        close_or_starved(bytes(&ad) + bytes(&bd), bytes(&rd), 1.0, &reports)
    });
}

#[test]
fn last_client_against_a_receiver_without_multi_client_mode() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2");
    let l = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 -L", LIMIT);
    eprintln!(
        "FAULT -L without -M: sender ended {:.1?}, exit {:?}",
        l.elapsed,
        l.code()
    );
    assert_eq!(l.code(), Some(1), "{l:?}");
    assert!(
        l.stderr.contains("not in multi-client mode (-M)"),
        "{}",
        l.stderr
    );
    assert!(
        l.within(Duration::from_secs(3)),
        "{:?} (waiter late {:?})",
        l.elapsed,
        l.late
    );
    // The receiver is not stuck: a normal sender runs its test.
    let s = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", LIMIT);
    assert_eq!(s.code(), Some(0), "{s:?}");
    assert_eq!(r.wait(LIMIT).code(), Some(0));
}

#[test]
fn sync_port_in_use_is_named() {
    let _ports = Ports::take(1);
    let _held = TcpListener::bind(ports_in("127.0.0.1:@0")).expect("hold the sync port");
    let o = run("-r 127.0.0.1 -P 1 -p @1 -t 2", Duration::from_secs(5));
    eprintln!(
        "FAULT sync port in use: receiver ended {:.1?}, exit {:?}",
        o.elapsed,
        o.code()
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains(&ports_in("sync port @0")), "{}", o.stderr);
    assert!(o.within(Duration::from_secs(2)), "{:?}", o.elapsed);
}

#[test]
fn durations_that_differ_run_the_longer_cycle() {
    let _ports = Ports::take(1);
    // Sender -t 2, receiver -t 4: both run 4 s; the sender measures 2 s and says 'E'.
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 4");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 -V");
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    assert!(
        so.stderr
            .contains("Test cycle time negotiated is: 4 seconds"),
        "{}",
        so.stderr
    );
    assert!(
        so.stderr.contains("receiver exited from current test"),
        "{}",
        so.stderr
    );
    assert_close(parse_tables(&so.stdout)[0].realtime, 2.0, 5.0, "sender");
    assert_close(parse_tables(&ro.stdout)[0].realtime, 4.0, 5.0, "receiver");
    assert!(
        so.elapsed > Duration::from_secs(4),
        "sender cooled down to the cycle end"
    );
    // Sender -t 4, receiver -t 2: the receiver measures its 2 s inside the 4 s cycle.
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @2 -t 2");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @2 -t 4");
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    assert_close(parse_tables(&so.stdout)[0].realtime, 4.0, 5.0, "sender");
    assert_close(parse_tables(&ro.stdout)[0].realtime, 2.0, 5.0, "receiver");
}

#[test]
fn warmup_and_cooldown_on_either_side() {
    let _ports = Ports::take(1);
    // Receiver warm-up only: its warm-up fits inside the sender's 3 s cycle.
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -W 1 -t 2");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 3");
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    assert_close(parse_tables(&ro.stdout)[0].realtime, 2.0, 5.0, "receiver");
    assert_close(parse_tables(&so.stdout)[0].realtime, 3.0, 5.0, "sender");
    // Sender warm-up and cool-down only: proposal 1+2+1 = 4 > receiver's 2.
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @2 -t 2");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @2 -W 1 -t 2 -C 1");
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    assert_close(parse_tables(&so.stdout)[0].realtime, 2.0, 5.0, "sender");
    assert_close(parse_tables(&ro.stdout)[0].realtime, 2.0, 5.0, "receiver");
}

/// A tiny deterministic generator, so a failing case can be replayed from its seed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn sync_listener_survives_garbage_and_keeps_serving() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 -H --timeout 2");
    let connect = || {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match TcpStream::connect(ports_in("127.0.0.1:@0")) {
                Ok(s) => break s,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("connect: {e}"),
            }
        }
    };
    let rss_before = rss_kib(r.pid());
    let mut rng = XorShift(0x5eed_1234_abcd_ef01);
    let mut slow = Vec::new();
    for case in 0..300 {
        let mut s = connect();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        match case % 5 {
            // random bytes, then close
            0 => {
                let n = (rng.next() % 64) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                let _ = s.write_all(&bytes);
            }
            // a valid query split into single-byte writes (short reads on our side)
            1 => {
                for b in [0u8, 0, 0, 0x58] {
                    let _ = s.write_all(&[b]);
                    std::thread::sleep(Duration::from_millis(1));
                }
                let mut reply = [0u8; 4];
                let _ = s.read_exact(&mut reply);
            }
            // a proposal of any value, then early close
            2 => {
                let _ = s.write_all(&[0, 0, 0, 0x58]);
                let _ = s.write_all(&(rng.next() as u32).to_be_bytes());
            }
            // half a message and silence: a slow peer (kept open, the deadline ends it)
            3 => {
                let _ = s.write_all(&[0, 0]);
                if slow.len() < 20 {
                    slow.push(s);
                }
            }
            // connect and close at once
            _ => {}
        }
    }
    let grown = rss_kib(r.pid()).saturating_sub(rss_before);
    assert!(
        grown < 16 * 1024,
        "receiver grew by {grown} KiB serving 300 bad peers"
    );
    // A real sender is still served, within its deadlines.
    let o = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    drop(slow);
    r.signal(2);
    let ro = r.wait(Duration::from_secs(5));
    assert_eq!(parse_tables(&ro.stdout).len(), 1, "{ro:?}");
}

#[test]
fn thousand_silent_connections_on_data_ports_do_no_harm() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 2 -p @1 -t 2");
    crate::util::wait_listening(port(2), Duration::from_secs(10));
    // Outside a test the receiver resets them at once: a connect may already see the
    // reset. Either way most of them reach it.
    let reached = (0..1000u16)
        .filter(|i| TcpStream::connect(("127.0.0.1", port(1) + i % 2)).is_ok())
        .count();
    assert!(reached > 500, "{reached} of 1000 connects");
    let o = run("-s 127.0.0.1 -P 2 -n 1 -p @1 -t 2", LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let ro = r.wait(LIMIT);
    assert_eq!(ro.code(), Some(0), "{ro:?}");
    assert!(parse_tables(&ro.stdout)[0].meg > 1.0);
}

#[test]
fn daemon_detaches_keeps_relative_paths_and_serves_a_test() {
    let _ports = Ports::take(1);
    let dir = std::env::temp_dir().join(format!("ntttcp-daemon-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("run")).unwrap();
    struct Cleanup(std::path::PathBuf, Option<u32>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            if let Some(pid) = self.1 {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let mut guard = Cleanup(dir.clone(), None);
    let out = std::process::Command::new(crate::util::bin())
        .args(ports_in("-r 127.0.0.1 -P 1 -p @1 -t 2 -D --pid-file run/ntttcp.pid").split(' '))
        .current_dir(&dir)
        .output()
        .expect("run ntttcp -D");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("running in the background (pid "),
        "{stdout}"
    );
    let pid_path = dir.join("run/ntttcp.pid");
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid: u32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid_path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "no pid file at {}",
            pid_path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    guard.1 = Some(pid);
    assert!(stdout.contains(&format!("(pid {pid})")), "{stdout}");
    let s = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", LIMIT);
    assert_eq!(s.code(), Some(0), "the daemon served the test: {s:?}");
    // Without -H the daemon ends after its test and removes its PID file.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "daemon {pid} still running");
        std::thread::sleep(Duration::from_millis(50));
    }
    guard.1 = None;
    assert!(!pid_path.exists(), "pid file removed");
}

#[test]
fn waiting_for_a_last_client_that_never_comes_has_a_deadline() {
    let _ports = Ports::take(1);
    let _r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 -M");
    // --timeout 1: connects within 1 s, waits at most 6 s for the last client.
    let o = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2 --timeout 1", LIMIT);
    eprintln!(
        "FAULT no last client: sender ended {:.1?}, exit {:?}",
        o.elapsed,
        o.code()
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains("no last client (-L) joined"),
        "{}",
        o.stderr
    );
    assert!(
        o.within(Duration::from_secs(9)),
        "{:?} (waiter late {:?})",
        o.elapsed,
        o.late
    );
}

#[test]
fn continuous_mode_runs_until_ctrl_c() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 5");
    let s = spawn("sender", "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 0 --interval 1");
    // Continuous mode outlives the receiver's own -t 5.
    // Six interval lines: six seconds measured (their ends are the real sample times,
    // 6.000 give or take the timer's lateness).
    s.wait_for_stdout_count(" Gbit/s", 6, Duration::from_secs(30));
    s.signal(2);
    let (so, ro) = (
        s.wait(Duration::from_secs(5)),
        r.wait(Duration::from_secs(5)),
    );
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(
        ro.code(),
        Some(0),
        "the sender's 'E' ends the receiver's test: {ro:?}"
    );
    assert!(
        ro.stderr.contains("negotiated to run in continuous mode"),
        "{}",
        ro.stderr
    );
    let (st, rt) = (&parse_tables(&so.stdout)[0], &parse_tables(&ro.stdout)[0]);
    assert!(
        st.realtime > 6.0 && rt.realtime > 6.0,
        "ran past -t 5: {st:?} {rt:?}"
    );
    assert_close(st.meg, rt.meg, 2.0, "continuous totals");
}

/// The sync connection's lines in `ss -o` (both ends, on loopback), with their timers.
fn sync_sockets(sync_port: u16) -> Vec<String> {
    let filter = format!("( sport = :{sync_port} or dport = :{sync_port} )");
    let out = std::process::Command::new("ss")
        .args(["-tnoH", "state", "established", &filter])
        .output()
        .expect("ss (iproute2) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs a 3 s test with `extra` on both sides and returns both ends of its sync
/// connection as `ss -o` shows them once the test runs and neither end has a message in
/// flight (`ss` then shows the retransmission timer instead of the keepalive one).
fn sync_timers(extra: &str) -> Vec<String> {
    let r = spawn("receiver", &format!("-r 127.0.0.1 -P 1 -p @1 -t 3 {extra}"));
    let s = spawn(
        "sender",
        &format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 3 {extra}"),
    );
    s.wait_for_stdout_count("Network activity progressing", 1, LIMIT);
    let quiet = |l: &Vec<String>| l.len() == 2 && l.iter().all(|x| !x.contains("timer:(on"));
    let since = Instant::now();
    let mut lines = sync_sockets(port(0));
    while !quiet(&lines) && since.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        lines = sync_sockets(port(0));
    }
    let (so, ro) = (s.wait(LIMIT), r.wait(LIMIT));
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    assert_eq!(
        lines.len(),
        2,
        "both ends of the sync connection: {lines:?}"
    );
    lines
}

/// Both ends of the sync connection carry a keepalive timer by default, due within the
/// default 30 s, so a NAT or firewall that drops idle flows keeps it; 0 turns it off.
#[test]
fn the_sync_connection_keeps_itself_alive() {
    let _ports = Ports::take(1);
    let keepalive = regex::Regex::new(r"timer:\(keepalive,(\d+)(?:min|sec|ms)").unwrap();
    for line in sync_timers("") {
        let due = keepalive
            .captures(&line)
            .unwrap_or_else(|| panic!("no keepalive timer: {line}"));
        let n: u32 = due[1].parse().unwrap();
        assert!(n <= 30, "{line}");
        assert!(!line.contains("min"), "due within 30 s: {line}");
    }
    for line in sync_timers("--sync-keepalive 0") {
        assert!(!line.contains("keepalive"), "{line}");
    }
}

/// A sender waiting for its `--start-at` instant (ten minutes ahead) is interrupted:
/// it ends at once with exit 130, and its `-H` receiver, which was waiting for that
/// instant too, lets it go and serves the next sender within seconds, not minutes.
#[test]
fn a_sender_waiting_for_its_start_instant_is_let_go_on_both_sides() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -H -P 1 -p @1 -t 1");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let at = now.unwrap().as_secs() + 600;
    let s = spawn(
        "sender",
        &format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 1 -V --start-at {at}"),
    );
    // Its data connection is up: it has asked to start and waits for the answer.
    s.wait_for_stderr("connections created in", LIMIT);
    s.signal(2);
    let so = s.wait(LIMIT);
    assert_eq!(so.code(), Some(130), "{so:?}");
    // The receiver looks for departed senders every 200 ms: until it has, it is busy.
    let since = Instant::now();
    let next = loop {
        let next = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 1", LIMIT);
        let busy = next.code() == Some(1) && next.stderr.contains("busy");
        if !busy || since.elapsed() > Duration::from_secs(5) {
            break next;
        }
    };
    assert_eq!(next.code(), Some(0), "the receiver is free again: {next:?}");
    assert_eq!(parse_tables(&next.stdout).len(), 1, "{}", next.stdout);
    r.signal(15);
    let _ = r.wait(LIMIT);
}
