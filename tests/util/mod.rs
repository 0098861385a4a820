//! Helpers: spawning the binary with a kill-on-drop guard, bounded waits, and parsers for
//! the NTttcp tables.

mod figures;
mod launch;
mod pairs;
mod ports;
mod resources;
mod wine;

pub(crate) use figures::{
    Attempt, Tables, apart_s, assert_close, close_or_starved, covered, parse_tables, promise,
    starved, tables_close_or_starved, windows_apart,
};
pub(crate) use launch::Launch;
pub(crate) use pairs::{attempt_at, json_pair, json_pair_at, multi_client_at};
pub(crate) use ports::{Ports, port, ports_in, shifted};
pub(crate) use resources::{
    FdPeak, raise_own_nofile, rss_kib, socket_flags_at, socket_flags_towards,
};
pub(crate) use wine::{exe, run_exe, spawn_exe, wine};

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Path of the binary under test.
pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ntttcp")
}

/// A running `ntttcp` process, killed (by PID) and reaped when dropped. Its output is
/// drained by two threads as it is written, so a chatty process never blocks on a full
/// pipe while the test waits for it.
pub(crate) struct Proc {
    child: Option<Child>,
    pub(crate) label: String,
    stdout: Option<std::thread::JoinHandle<String>>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// Everything written to stdout so far.
    seen: Seen,
    /// Everything written to stderr so far.
    seen_err: Seen,
}

type Seen = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

fn drain<R: Read + Send + 'static>(
    r: Option<R>,
    seen: Seen,
) -> Option<std::thread::JoinHandle<String>> {
    r.map(|mut r| {
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match r.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.lock().unwrap().extend_from_slice(&chunk[..n]),
                }
            }
            let bytes = seen.lock().unwrap();
            String::from_utf8_lossy(&bytes).into_owned()
        })
    })
}

/// What a finished process left behind.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
    /// How much later than asked this waiter's polls woke, in all: what the machine
    /// withheld from the test while it waited (nothing on a machine with time to spare).
    pub(crate) late: Duration,
}

/// How often `Proc::wait` looks whether the process has exited.
const POLL: Duration = Duration::from_millis(20);

impl Output {
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Whether the process exited within `promise`, its own bound, beside what the
    /// machine withheld from the waiter meanwhile (a starved machine delays both alike).
    pub(crate) fn within(&self, promise: Duration) -> bool {
        self.elapsed < promise + self.late
    }
}

/// Starts `ntttcp ARGS` (`Launch` for anything else around it).
pub(crate) fn spawn(label: &str, args: &str) -> Proc {
    Launch::new(label, args).spawn()
}

fn start_reading(mut cmd: Command, label: &str, args: &str, read_stdout: bool) -> Proc {
    let mut child = cmd
        .args(ports_in(args).split_whitespace())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ntttcp");
    let (seen, seen_err) = (Seen::default(), Seen::default());
    let (stdout, stderr) = (
        if read_stdout {
            drain(child.stdout.take(), seen.clone())
        } else {
            None
        },
        drain(child.stderr.take(), seen_err.clone()),
    );
    Proc {
        child: Some(child),
        label: label.into(),
        stdout,
        stderr,
        seen,
        seen_err,
    }
}

impl Proc {
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Waits (bounded) until the process has written `needle` to stdout.
    pub(crate) fn wait_for_stdout(&self, needle: &str, limit: Duration) {
        self.wait_for(&self.seen, needle, 1, limit);
    }

    /// Waits (bounded) until the process has written `needle` to stdout `n` times.
    pub(crate) fn wait_for_stdout_count(&self, needle: &str, n: usize, limit: Duration) {
        self.wait_for(&self.seen, needle, n, limit);
    }

    /// Waits (bounded) until the process (`--format jsonl`) has printed `n` summary lines;
    /// their reports.
    pub(crate) fn summaries(&self, n: usize, limit: Duration) -> Vec<serde_json::Value> {
        self.wait_for_stdout_count("\"type\":\"summary\"", n, limit);
        self.stdout_so_far()
            .lines()
            .filter(|l| l.contains("\"type\":\"summary\""))
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                v["report"].clone()
            })
            .collect()
    }

    /// What the process has written to stdout so far.
    pub(crate) fn stdout_so_far(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Waits (bounded) until the process has written `needle` to stderr.
    pub(crate) fn wait_for_stderr(&self, needle: &str, limit: Duration) {
        self.wait_for(&self.seen_err, needle, 1, limit);
    }

    /// Whether the process writes `needle` to stderr within `limit`.
    pub(crate) fn says_within(&self, needle: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let now = String::from_utf8_lossy(&self.seen_err.lock().unwrap()).contains(needle);
            if now || Instant::now() >= deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn wait_for(&self, seen: &Seen, needle: &str, n: usize, limit: Duration) {
        let start = Instant::now();
        loop {
            if String::from_utf8_lossy(&seen.lock().unwrap())
                .matches(needle)
                .count()
                >= n
            {
                return;
            }
            assert!(
                start.elapsed() < limit,
                "{} did not print {needle:?} {n} time(s) within {limit:?}; its stderr:\n{}",
                self.label,
                String::from_utf8_lossy(&self.seen_err.lock().unwrap())
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts reading stdout (`Launch::unread`).
    pub(crate) fn read_stdout(&mut self) {
        let out = self.child.as_mut().and_then(|c| c.stdout.take());
        self.stdout = drain(out, self.seen.clone());
    }

    /// Whether one of the process's threads is blocked writing to a pipe (its wait
    /// channel, from /proc).
    pub(crate) fn blocked_on_a_pipe(&self) -> bool {
        let tasks = format!("/proc/{}/task", self.pid());
        std::fs::read_dir(tasks)
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| {
                std::fs::read_to_string(t.path().join("wchan"))
                    .is_ok_and(|w| w.contains("pipe_write"))
            })
    }

    /// Sends a signal (e.g. libc SIGINT = 2, SIGKILL = 9) by PID.
    pub(crate) fn signal(&self, sig: i32) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{sig} {}", self.pid());
    }

    /// Waits at most `limit` for the process to exit; kills it and panics otherwise.
    pub(crate) fn wait(mut self, limit: Duration) -> Output {
        let start = Instant::now();
        let mut child = self.child.take().expect("running");
        let mut late = Duration::ZERO;
        let status = loop {
            if let Some(s) = child.try_wait().expect("try_wait") {
                break s;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                let out = self.stdout.take().map(|h| h.join().unwrap_or_default());
                panic!(
                    "{} did not exit within {limit:?}; stdout so far:\n{}",
                    self.label,
                    out.unwrap_or_default()
                );
            }
            let slept = Instant::now();
            std::thread::sleep(POLL);
            late += slept.elapsed().saturating_sub(POLL);
        };
        let elapsed = start.elapsed();
        let stdout = self.stdout.take().map(|h| h.join().unwrap_or_default());
        let stderr = self.stderr.take().map(|h| h.join().unwrap_or_default());
        Output {
            status,
            stdout: stdout.unwrap_or_default(),
            stderr: stderr.unwrap_or_default(),
            elapsed,
            late,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs `ntttcp ARGS` to completion (bounded).
pub(crate) fn run(args: &str, limit: Duration) -> Output {
    spawn("ntttcp", args).wait(limit)
}

/// Each line is a usage error: exit 2 and one line on stderr that contains its needle.
pub(crate) fn assert_usage_errors(cases: &[(&str, &str)]) {
    for (line, needle) in cases {
        let said = usage_error(line);
        assert!(said.contains(needle), "{line}: {said}");
    }
}

/// `ntttcp LINE` is a usage error: exit 2 and one line on stderr, which is returned.
pub(crate) fn usage_error(line: &str) -> String {
    let o = run(line, Duration::from_secs(30));
    assert_eq!(o.code(), Some(2), "{line}: {o:?}");
    assert_eq!(o.stderr.trim().lines().count(), 1, "{line}: {}", o.stderr);
    o.stderr.trim().to_string()
}

/// A scratch directory removed again on drop.
pub(crate) struct Scratch(std::path::PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("ntttcp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    pub(crate) fn file(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }

    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.file(name))
            .unwrap_or_else(|e| panic!("{}: {e}", self.file(name).display()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The report JSON Schema, compiled.
pub(crate) fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/ntttcp-report.json")).expect("schema JSON");
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

/// Fails with every violation of `doc` against the schema.
pub(crate) fn assert_valid(v: &jsonschema::Validator, doc: &serde_json::Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}\n{doc:#}");
}

/// Serializes the tests whose figures need a quiet CPU (rate accuracy, zero loss) with
/// the ones that saturate it (thousands of connections): held for the whole test, so on
/// a 2-core machine a 1000-thread sender never starves a rate-limited one. Poisoning
/// is ignored: a failed test must not fail the others.
pub(crate) fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waits (bounded) until something listens on TCP `port` of this host, reading
/// /proc/net/tcp and tcp6 (no connection is made, so the listener sees nothing).
pub(crate) fn wait_listening(port: u16, limit: Duration) {
    wait_listening_with(port, limit, |f| {
        std::fs::read_to_string(f).unwrap_or_default()
    });
}

/// `wait_listening` inside network namespace `ns` (its /proc/net tables via `ip netns exec`).
pub(crate) fn wait_listening_in(ns: &str, port: u16, limit: Duration) {
    wait_listening_with(port, limit, |f| {
        Command::new("ip")
            .args(["netns", "exec", ns, "cat", f])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    });
}

/// Waits (bounded) until a UDP socket is bound to `port` of this host (/proc/net/udp).
pub(crate) fn wait_listening_udp(port: u16, limit: Duration) {
    let read = |f: &str| std::fs::read_to_string(f.replace("tcp", "udp")).unwrap_or_default();
    wait_bound(port, limit, read, None);
}

fn wait_listening_with(port: u16, limit: Duration, read: impl Fn(&str) -> String) {
    wait_bound(port, limit, read, Some("0A"));
}

/// Polls the /proc/net tables `read` returns for a local `port` (in `state`, if given).
fn wait_bound(port: u16, limit: Duration, read: impl Fn(&str) -> String, state: Option<&str>) {
    let start = Instant::now();
    let needle = format!(":{port:04X} ");
    loop {
        let listening = ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
            read(f).lines().any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3
                    && format!("{} ", cols[1]).ends_with(&needle)
                    && state.is_none_or(|st| cols[3] == st)
            })
        });
        if listening {
            return;
        }
        assert!(start.elapsed() < limit, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a test that needs root or an extra tool may be skipped here: CI
/// (`NTTTCP_REQUIRE_NETNS`, set by `.ci/run`) requires them all to run.
pub(crate) fn may_skip(what: &str) -> bool {
    assert!(
        std::env::var_os("NTTTCP_REQUIRE_NETNS").is_none(),
        "{what}, and NTTTCP_REQUIRE_NETNS says every test must run"
    );
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {what}");
    true
}

/// Whether we run as root (reads /proc/self/status; no unsafe libc call needed).
pub(crate) fn is_root() -> bool {
    ports::uid() == 0
}

/// The JSON document a process printed on stdout.
pub(crate) fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("JSON: {e}\n{o:?}"))
}

/// The first report of a `--format json` document (a side's, one direction).
pub(crate) fn report(d: &serde_json::Value) -> &serde_json::Value {
    &d["reports"][0]
}
