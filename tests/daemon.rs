//! The daemon (`-D`): its foreground tells the truth about the start, and it leaves the
//! caller's session and guards its pid file.

use std::time::Duration;

use crate::util::{Ports, port, ports_in, run, wait_listening};

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

    others_are_refused(&dir, &pid_file, pid);

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

/// While daemon `pid` holds `pid_file` and data port @1: a second daemon on the same
/// port fails with its bind error and leaves no pid file; one given the same pid file is
/// refused and leaves it alone; one whose pid file cannot be written fails naming it.
fn others_are_refused(dir: &crate::util::Scratch, pid_file: &std::path::Path, pid: u32) {
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
}
