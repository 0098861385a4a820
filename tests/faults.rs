//! Faults and hostile input: descriptor budgets, signals, partial tests, output paths,
//! loopback start-up, sizes, the daemon, and floods of the sync and data ports.

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use crate::util::{
    Ports, Proc, parse_tables, port, ports_in, run, spawn, spawn_after, spawn_wrapped,
    wait_listening,
};

#[test]
fn loopback_with_a_data_port_held_fails_at_once_naming_it() {
    let _ports = Ports::take(1);
    let _held = TcpListener::bind(ports_in("127.0.0.1:@2"))
        .unwrap_or_else(|_| panic!("{}", ports_in("hold port @2")));
    // With the old behaviour the sender waited for its connect deadline (60 s here).
    let o = run(
        "--loopback -p @1 -P 2 -t 2 --timeout 60",
        Duration::from_secs(30),
    );
    eprintln!(
        "FAULT loopback port in use: exit {:?} after {:.1?}",
        o.code(),
        o.elapsed
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.elapsed < Duration::from_secs(10), "{:?}", o.elapsed);
    assert!(o.stderr.contains(&ports_in("data port @2")), "{}", o.stderr);
    assert!(!o.stderr.contains("failed to connect"), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "one line: {}", o.stderr);
}

#[test]
fn loopback_never_tests_against_a_foreign_receiver() {
    let _ports = Ports::take(1);
    let foreign = spawn("foreign receiver", "-r 127.0.0.1 -p @1 -P 2 -t 30");
    wait_listening(port(0), Duration::from_secs(20));
    let o = run(
        "--loopback -p @1 -P 2 -t 2 --timeout 60",
        Duration::from_secs(30),
    );
    assert_eq!(o.code(), Some(1), "{o:?}");
    let held = |k| o.stderr.contains(&format!("port {}", port(k)));
    assert!(held(1) || held(2), "names a held data port: {}", o.stderr);
    assert!(o.elapsed < Duration::from_secs(10), "{:?}", o.elapsed);
    foreign.signal(2);
    let fo = foreign.wait(Duration::from_secs(10));
    assert!(
        !fo.stdout.contains("Network activity progressing"),
        "the foreign receiver ran a test: {fo:?}"
    );
}

#[test]
fn sizes_beyond_their_bounds_are_usage_errors_naming_the_flag() {
    let _ports = Ports::take(1);
    for (args, flag, bound) in [
        ("-s 127.0.0.1 -p @1 -b 1024G -t 1", "'-b'", "1073741824"),
        (
            "-r 127.0.0.1 -p @1 --buffer 2G -t 1",
            "'--buffer'",
            "1073741824",
        ),
        ("-s 127.0.0.1 -p @1 -u -b 100K -t 1", "'-b'", "65507"),
        (
            "-s -m 1,*,127.0.0.1 -p @1 -u -l 70000 -ns -t 1",
            "'-l'",
            "65507",
        ),
        (&ports_in("-s ::1 -p @1 -u -b 65528 -t 1"), "'-b'", "65527"),
    ] {
        let o = run(args, Duration::from_secs(10));
        assert_eq!(o.code(), Some(2), "{args}: {o:?}");
        assert!(
            o.stderr.contains(flag) && o.stderr.contains(bound),
            "{args}: {}",
            o.stderr
        );
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    }
}

/// A size within bounds that this host cannot allocate (address space capped at 800 MB)
/// is an error, never an abort.
#[test]
fn a_buffer_that_cannot_be_allocated_is_an_error_not_an_abort() {
    let _ports = Ports::take(1);
    for args in [
        "-r 127.0.0.1 -P 1 -p @1 -b 1G -t 1",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -b 1G -t 1",
    ] {
        let o = spawn_after("ntttcp", "ulimit -v 800000", args).wait(Duration::from_secs(20));
        assert_eq!(o.code(), Some(1), "{args}: {o:?}");
        assert!(
            o.stderr.contains("cannot allocate a 1073741824-byte"),
            "{args}: {}",
            o.stderr
        );
    }
}

/// GNU `timeout` signals the process and then its whole group: both SIGTERMs are one
/// interruption, and the totals are printed every time. (`-k 10`: a sender that did not
/// end is killed rather than left behind.)
#[test]
fn timeout_stops_a_sender_and_the_totals_are_printed_every_time() {
    let _ports = Ports::take(1);
    for i in 0..30u16 {
        let port = port(1) + 3 * i;
        let r = spawn(
            "receiver",
            &format!("-r 127.0.0.1 -m 2,*,127.0.0.1 -p {port} -t 6"),
        );
        wait_listening(port - 1, Duration::from_secs(20));
        let s = spawn_wrapped(
            "timeout 2 sender",
            &["timeout", "-k", "10", "2"],
            &format!("-s -m 2,*,127.0.0.1 -p {port} -t 6 -B 2G"),
        )
        .wait(Duration::from_secs(30));
        assert_eq!(s.code(), Some(124), "run {i}: timeout's status: {s:?}");
        let t = parse_tables(&s.stdout);
        assert_eq!(t.len(), 1, "run {i}: no totals after SIGTERM: {s:?}");
        assert!(t[0].meg > 1.0 && t[0].realtime < 5.0, "run {i}: {:?}", t[0]);
        assert!(!s.stderr.contains("exiting"), "run {i}: {}", s.stderr);
        r.signal(9);
        let _ = r.wait(Duration::from_secs(10));
    }
}

/// A receiver and a 1 Gbit/s sender on data port `port` (one stream, `-t secs`), each with
/// its extra flags, returned once the sender has reported its first interval (the test
/// is running).
fn running_pair(port: u16, secs: u32, receiver: &str, sender: &str) -> (Proc, Proc) {
    let r = spawn(
        "receiver",
        &format!("-r 127.0.0.1 -P 1 -p {port} -t {secs} {receiver}"),
    );
    wait_listening(port - 1, Duration::from_secs(20));
    let s = spawn(
        "sender",
        &format!("-s 127.0.0.1 -P 1 -n 1 -p {port} -t {secs} -B 1G --interval 0.2 {sender}"),
    );
    s.wait_for_stdout("Gbit/s", Duration::from_secs(20));
    (r, s)
}

#[test]
fn sighup_is_an_interruption_with_results() {
    let _ports = Ports::take(1);
    let (r, s) = running_pair(port(1), 10, "", "");
    // Hang up twice in a row.
    s.signal(1);
    s.signal(1);
    let so = s.wait(Duration::from_secs(10));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(parse_tables(&so.stdout).len(), 1, "{so:?}");
    r.signal(9);
}

/// One 4-byte big-endian sync message.
fn sync_send(s: &mut std::net::TcpStream, v: u32) {
    use std::io::Write;
    s.write_all(&v.to_be_bytes())
        .expect("write to the sync port");
}

fn sync_read(s: &mut std::net::TcpStream) -> u32 {
    use std::io::Read;
    let mut b = [0u8; 4];
    s.read_exact(&mut b).expect("read from the sync port");
    u32::from_be_bytes(b)
}

/// A sync session that asks for a test of `proposal` seconds and starts it, without ever
/// opening a data connection.
fn hostile_start(sync_port: u16, proposal: u32) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", sync_port)).expect("connect sync");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    sync_send(&mut s, u32::from(b'X'));
    assert_eq!(sync_read(&mut s), 11, "not started");
    sync_send(&mut s, proposal);
    sync_read(&mut s);
    sync_send(&mut s, u32::from(b'R'));
    assert_eq!(sync_read(&mut s), u32::from(b'R'), "go");
    s
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A sender stopped 2 s into a 6 s test: the receiver says its test ended early, by
/// whom, measured against planned, in every output, and exits 1.
#[test]
fn a_test_the_sender_cut_short_is_not_a_completed_test() {
    let _ports = Ports::take(1);
    let dir = crate::util::Scratch::new("early");
    let (xml, js, wxml) = (dir.file("r.xml"), dir.file("r.json"), dir.file("w.xml"));
    let files = format!(
        "--format json -x {} -j {} --xml-windows {}",
        xml.display(),
        js.display(),
        wxml.display()
    );
    let (r, s) = running_pair(port(1), 6, &files, "");
    s.signal(2);
    let so = s.wait(Duration::from_secs(20));
    let ro = r.wait(Duration::from_secs(20));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    assert!(
        ro.stderr
            .contains("test ended early: the sender stopped its test early"),
        "{}",
        ro.stderr
    );
    let doc = json(&ro.stdout);
    let end = &doc["reports"][0]["end"];
    assert_eq!(end["kind"], "peer_ended", "{end}");
    assert_eq!(end["early"]["by"], "sender", "{end}");
    assert_eq!(end["planned_s"], 6.0, "{end}");
    let measured = end["measured_s"].as_f64().unwrap();
    assert!(measured > 0.1 && measured < 5.5, "{end}");
    crate::util::assert_valid(&crate::util::validator(), &doc);
    for (file, needle) in [
        (&xml, "<ended_early by=\"sender\""),
        (&js, "\"endedEarly\""),
        (&wxml, "<ended_early by=\"sender\""),
    ] {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains(needle), "{}: {text}", file.display());
        assert!(text.contains("planned"), "{}: {text}", file.display());
    }
}

/// 'X', a 2 s proposal, 'R' and no data connection: a fault, not a 0-byte success.
#[test]
fn a_start_without_data_connections_is_a_fault() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 --format json");
    wait_listening(port(0), Duration::from_secs(20));
    let _s = hostile_start(port(0), 2);
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    let doc = json(&ro.stdout);
    assert_eq!(doc["reports"][0]["end"]["kind"], "fault", "{doc}");
    assert!(ro.stderr.contains("no data connection"), "{}", ro.stderr);
}

/// A huge proposal with no data connection holds a -H receiver for --timeout at most: it
/// logs the failed test and serves a real sender next.
#[test]
fn a_hold_receiver_drops_a_hostile_start_and_serves_the_next_sender() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 2 -H --timeout 2");
    wait_listening(port(0), Duration::from_secs(20));
    let _attacker = hostile_start(port(0), i32::MAX as u32);
    r.wait_for_stdout("#####  Totals:  #####", Duration::from_secs(30));
    let s = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", Duration::from_secs(30));
    assert_eq!(s.code(), Some(0), "{s:?}");
    r.signal(15);
    let ro = r.wait(Duration::from_secs(20));
    assert!(ro.stderr.contains("no data connection"), "{}", ro.stderr);
    assert_eq!(parse_tables(&ro.stdout).len(), 2, "{}", ro.stdout);
    assert_eq!(ro.code(), Some(1), "the worst test decides: {ro:?}");
}

/// Every output path is checked before any socket: a bad one is exit 2 naming the flag
/// and the path, and no connection is tried (no receiver runs here: a connection attempt
/// would say "failed to connect").
#[test]
fn unwritable_output_paths_are_usage_errors_before_the_test() {
    let _ports = Ports::take(1);
    for (flag, path) in [
        ("-x", "/nonexistent/dir/f.xml"),
        ("-j", "/proc/version"),
        ("--xml-windows", "/nonexistent/w.xml"),
        ("--plot", "/nonexistent/p.svg"),
        ("-O", "/nonexistent/x.log"),
        ("-j", "/tmp"),
    ] {
        let o = run(
            &ports_in(&format!("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 1 {flag} {path}")),
            Duration::from_secs(20),
        );
        assert_eq!(o.code(), Some(2), "{flag} {path}: {o:?}");
        assert!(
            o.stderr.contains(&format!("the {flag} file {path}")),
            "{flag} {path}: {}",
            o.stderr
        );
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        assert!(o.stdout.is_empty(), "nothing ran: {}", o.stdout);
    }
}

/// A file that opens but cannot be written (/dev/full) fails the run with exit 1 after
/// the test, naming the file; the other outputs are still written.
#[test]
fn a_write_that_fails_after_the_test_is_exit_1_and_the_rest_is_written() {
    let _ports = Ports::take(1);
    let dir = crate::util::Scratch::new("full");
    for (i, flag) in ["-j", "--xml-windows", "-O"].iter().enumerate() {
        let ok = dir.file(&format!("ok{i}.xml"));
        let o = run(
            &format!(
                "--loopback -P 1 -p {} -t 1 {flag} /dev/full -x {}",
                port(1) + 10 * i as u16,
                ok.display()
            ),
            Duration::from_secs(30),
        );
        assert_eq!(o.code(), Some(1), "{flag}: {o:?}");
        assert!(
            o.stderr
                .contains(&format!("cannot write the {flag} file /dev/full")),
            "{flag}: {}",
            o.stderr
        );
        assert!(
            dir.read(&format!("ok{i}.xml")).contains("<throughput"),
            "{flag}"
        );
        assert_eq!(parse_tables(&o.stdout).len(), 2, "{flag}: results printed");
    }
}

/// stdout on a full device is a failure; a closed stdout or a reader that left early
/// (`| head -1`) is not.
#[test]
fn stdout_failures_count_but_a_closed_pipe_is_quiet() {
    let _ports = Ports::take(1);
    let full = spawn_after("ntttcp", "exec >/dev/full", "--loopback -P 1 -p @1 -t 1")
        .wait(Duration::from_secs(30));
    assert_eq!(full.code(), Some(1), "{full:?}");
    assert!(
        full.stderr.contains("cannot write standard output"),
        "{}",
        full.stderr
    );
    let closed = spawn_after("ntttcp", "exec >&-", "--loopback -P 1 -p @11 -t 1")
        .wait(Duration::from_secs(30));
    assert_eq!(closed.code(), Some(0), "{closed:?}");
    assert!(!closed.stderr.contains("cannot write"), "{}", closed.stderr);
    // A reader that reads one line and leaves, as `| head -1` does.
    let mut child = std::process::Command::new(crate::util::bin())
        .args(ports_in("--loopback -P 1 -p @21 -t 1").split(' '))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    drop(out);
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("ntttcp | head -1 did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(first.starts_with("ntttcp"), "{first}");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains("cannot write"), "{err}");
}

/// The session id of process `pid` (/proc/PID/stat, the fourth field after the name).
fn session_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    after
        .split(' ')
        .nth(3)
        .expect("session")
        .parse()
        .expect("number")
}

/// Kills a daemon by PID when the test ends, however it ends.
struct Reap(Option<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }
}

/// `-D` returns only once the daemon is bound (exit 0) or has failed (exit 1 with the
/// daemon's own error); the PID file is the daemon's alone while it lives; the daemon has
/// left the caller's session.
#[test]
fn the_daemon_tells_the_truth_and_guards_its_pid_file() {
    let _ports = Ports::take(3);
    let dir = crate::util::Scratch::new("daemons");
    let pid_file = dir.file("a.pid");
    let o = run(
        &ports_in(&format!(
            "-r 127.0.0.1 -P 1 -p @1 -t 2 -H -D --pid-file {}",
            pid_file.display()
        )),
        Duration::from_secs(30),
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let pid: u32 = regex::Regex::new(r"\(pid (\d+)\)")
        .unwrap()
        .captures(&o.stdout)
        .unwrap_or_else(|| panic!("{}", o.stdout))[1]
        .parse()
        .unwrap();
    let mut reap = Reap(Some(pid));
    // Ready means bound: the ports listen the moment the foreground process is gone.
    wait_listening(port(1), Duration::ZERO);
    wait_listening(port(0), Duration::ZERO);
    assert_eq!(dir.read("a.pid").trim(), pid.to_string());
    assert_eq!(
        session_of(pid),
        pid,
        "the daemon leads a session of its own"
    );
    assert_ne!(session_of(std::process::id()), pid);

    // Same port: the second daemon's bind error, exit 1.
    let again = run(
        &ports_in(&format!(
            "-r 127.0.0.1 -P 1 -p @1 -t 2 -D --pid-file {}",
            dir.file("b.pid").display()
        )),
        Duration::from_secs(30),
    );
    assert_eq!(again.code(), Some(1), "{again:?}");
    assert!(
        again.stderr.contains(&ports_in("data port @1")),
        "{}",
        again.stderr
    );
    assert!(
        !again.stdout.contains("running in the background"),
        "{}",
        again.stdout
    );
    assert!(
        !dir.file("b.pid").exists(),
        "the failed daemon left no pid file"
    );

    // Same pid file: refused while the first holds it, and the file is left alone.
    let twin = run(
        &ports_in(&format!(
            "-r 127.0.0.1 -P 1 -p @101 -t 2 -D --pid-file {}",
            pid_file.display()
        )),
        Duration::from_secs(30),
    );
    assert_eq!(twin.code(), Some(1), "{twin:?}");
    assert!(
        twin.stderr
            .contains(&format!("held by a running ntttcp daemon (pid {pid})")),
        "{}",
        twin.stderr
    );
    assert_eq!(dir.read("a.pid").trim(), pid.to_string());

    // A pid file that cannot be written.
    let nowhere = run(
        "-r 127.0.0.1 -P 1 -p @201 -t 2 -D --pid-file /nonexistent/x.pid",
        Duration::from_secs(30),
    );
    assert_eq!(nowhere.code(), Some(1), "{nowhere:?}");
    assert!(
        nowhere.stderr.contains("/nonexistent/x.pid"),
        "{}",
        nowhere.stderr
    );

    // The daemon still serves, and removes its own pid file when stopped.
    let s = run("-s 127.0.0.1 -P 1 -n 1 -p @1 -t 2", Duration::from_secs(30));
    assert_eq!(s.code(), Some(0), "{s:?}");
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
    let start = std::time::Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "daemon {pid} did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    reap.0 = None;
    assert!(!pid_file.exists(), "the daemon removed its pid file");
}

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
    let r = crate::util::spawn_limited("receiver", 400, "-r 127.0.0.1 -P 1 -p @1 -t 2");
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

/// A receiver stopped (SIGSTOP) mid-test: the sender faults on the silence and ends; the
/// receiver, continued, finds its test cut short and says so with exit 1.
#[test]
fn a_receiver_stopped_mid_test_reports_the_test_its_sender_abandoned() {
    let _ports = Ports::take(1);
    let (r, s) = running_pair(port(1), 6, "--format json", "--timeout 2");
    r.signal(19);
    let so = s.wait(Duration::from_secs(30));
    r.signal(18);
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!(so.code(), Some(1), "the sender faulted: {so:?}");
    assert!(so.stderr.contains("no data could be sent"), "{}", so.stderr);
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    let doc = json(&ro.stdout);
    let end = &doc["reports"][0]["end"];
    assert!(end["early"].is_object(), "{end}");
    assert!(end["measured_s"].as_f64().unwrap() < 6.0, "{end}");
}

/// SIGTERM is an interruption: the figures measured so far, exit 130.
#[test]
fn sigterm_prints_the_results_and_exits_130() {
    let _ports = Ports::take(1);
    let (r, s) = running_pair(port(1), 10, "", "");
    s.signal(15);
    let so = s.wait(Duration::from_secs(20));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(parse_tables(&so.stdout).len(), 1, "{}", so.stdout);
    r.signal(9);
}

/// A -H receiver stopped before it served any test exits 130 and prints no tables.
#[test]
fn a_hold_receiver_that_served_nothing_exits_130() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @51 -t 2 -H");
    wait_listening(port(50), Duration::from_secs(20));
    r.signal(2);
    let ro = r.wait(Duration::from_secs(20));
    assert_eq!(ro.code(), Some(130), "{ro:?}");
    assert!(parse_tables(&ro.stdout).is_empty(), "{}", ro.stdout);
    assert!(ro.stderr.contains("interrupted"), "{}", ro.stderr);
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
        o.elapsed >= Duration::from_millis(1500) && o.elapsed <= Duration::from_millis(1500 + 1500),
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

/// A signal more than a second after the first is not a new interruption: the process
/// says its results are on their way, then prints them and exits 130.
#[test]
fn a_later_signal_says_the_results_are_on_their_way() {
    let _ports = Ports::take(1);
    let _r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @1 -t 60");
    wait_listening(port(0), Duration::from_secs(20));
    // Nobody reads the sender's stdout: once the pipe is full (200 threads' bytes in each
    // JSON interval line fill it in seconds), it blocks writing a line, and is still
    // there for a later signal.
    let mut s = crate::util::spawn_unread(
        "sender",
        "-s 127.0.0.1 -P 1 -n 200 -p @1 -t 60 --interval 0.1 --format jsonl",
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !s.blocked_on_a_pipe() {
        assert!(
            std::time::Instant::now() < deadline,
            "the sender never filled its stdout"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.signal(2);
    // The scenario: later signals, each more than a second after the first.
    let said = "already stopping; the results measured so far follow";
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(1100));
        s.signal(2);
        if s.says_within(said, Duration::from_secs(1)) {
            break;
        }
    }
    s.read_stdout();
    let so = s.wait(Duration::from_secs(30));
    assert_eq!(so.code(), Some(130), "{so:?}");
    assert_eq!(
        so.stderr.matches(said).count(),
        1,
        "said once: {}",
        so.stderr
    );
    let last = so.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("{\"type\":\"summary\""),
        "results printed last: {last}"
    );
}

/// A side that was itself stopped across its planned end measures a stretched window and
/// says by how much it overran (JSON `window_overrun_s`, a warning); with no stall limit
/// the test still completes.
#[test]
fn a_receiver_stopped_across_its_end_reports_the_overrun() {
    let _ports = Ports::take(1);
    let r = spawn(
        "receiver",
        "-r 127.0.0.1 -P 1 -p @1 -t 4 --timeout 30 --format json",
    );
    wait_listening(port(0), Duration::from_secs(20));
    let s = spawn(
        "sender",
        "-s 127.0.0.1 -P 1 -n 1 -p @1 -t 4 --timeout 30 --interval 0.5",
    );
    // Six half-second interval lines: three seconds measured.
    s.wait_for_stdout_count(" Gbit/s", 6, Duration::from_secs(20));
    r.signal(19);
    // The scenario: the receiver stays stopped for two seconds, past its planned end.
    std::thread::sleep(Duration::from_secs(2));
    r.signal(18);
    let (so, ro) = (
        s.wait(Duration::from_secs(30)),
        r.wait(Duration::from_secs(30)),
    );
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let rep = &json(&ro.stdout)["reports"][0];
    let overrun = rep["window_overrun_s"].as_f64().expect("an overrun");
    assert!((0.5..3.0).contains(&overrun), "{rep}");
    // The warning says the overrun (and, when the stop also left no byte moving for
    // half a second or more, that stall first).
    let said = ro.stderr.lines().find(|l| l.contains("test disturbed:"));
    assert!(
        said.is_some_and(|l| l.contains("the window ran") && l.contains("past its planned 4.00 s")),
        "{}",
        ro.stderr
    );
}
