//! Helpers: spawning the binary with a kill-on-drop guard, bounded waits, and parsers for
//! the NTttcp tables.

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
}

impl Output {
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Starts `ntttcp ARGS`.
pub(crate) fn spawn(label: &str, args: &str) -> Proc {
    start(Command::new(bin()), label, args)
}

/// Starts `ntttcp ARGS` with RLIMIT_NOFILE (soft and hard) set to `nofile`.
pub(crate) fn spawn_limited(label: &str, nofile: u64, args: &str) -> Proc {
    spawn_after(label, &format!("ulimit -n {nofile}"), args)
}

/// Starts `ntttcp ARGS` after the shell command `setup` (limits, typically); the shell
/// execs the binary, so the PID is ntttcp's own.
pub(crate) fn spawn_after(label: &str, setup: &str, args: &str) -> Proc {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &format!("{setup} && exec \"$0\" \"$@\""), bin()]);
    start(cmd, label, args)
}

/// Starts `WRAPPER... ntttcp ARGS` (e.g. `timeout 2`); the PID held is the wrapper's.
pub(crate) fn spawn_wrapped(label: &str, wrapper: &[&str], args: &str) -> Proc {
    let mut cmd = Command::new(wrapper[0]);
    cmd.args(&wrapper[1..]).arg(bin());
    start(cmd, label, args)
}

/// Starts `ntttcp ARGS` inside network namespace `ns` (`ip netns exec` execs the binary,
/// so the PID is ntttcp's own).
pub(crate) fn spawn_in(ns: &str, label: &str, args: &str) -> Proc {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns, bin()]);
    start(cmd, label, args)
}

/// Starts `ntttcp ARGS` with nobody reading its stdout until `read_stdout`: once the pipe
/// is full, the process blocks writing to it.
pub(crate) fn spawn_unread(label: &str, args: &str) -> Proc {
    start_reading(Command::new(bin()), label, args, false)
}

/// Starts `cmd` (which must end by running ntttcp) with ntttcp's `args` appended.
pub(crate) fn spawn_command(label: &str, cmd: Command, args: &str) -> Proc {
    start(cmd, label, args)
}

fn start(cmd: Command, label: &str, args: &str) -> Proc {
    start_reading(cmd, label, args, true)
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

    /// Starts reading stdout (`spawn_unread`).
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
            std::thread::sleep(Duration::from_millis(20));
        };
        let elapsed = start.elapsed();
        let stdout = self.stdout.take().map(|h| h.join().unwrap_or_default());
        let stderr = self.stderr.take().map(|h| h.join().unwrap_or_default());
        Output {
            status,
            stdout: stdout.unwrap_or_default(),
            stderr: stderr.unwrap_or_default(),
            elapsed,
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
        let o = run(line, Duration::from_secs(30));
        assert_eq!(o.code(), Some(2), "{line}: {o:?}");
        assert!(o.stderr.contains(needle), "{line}: {}", o.stderr);
        assert_eq!(o.stderr.trim().lines().count(), 1, "{line}: {}", o.stderr);
    }
}

/// One parsed set of NTttcp tables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tables {
    /// (thread, seconds, KB/s, avg bytes per completion)
    pub(crate) threads: Vec<(usize, f64, f64, f64)>,
    pub(crate) meg: f64,
    pub(crate) realtime: f64,
    pub(crate) mb_per_s: f64,
    pub(crate) cpu_pct: f64,
}

/// Parses every table set in `stdout` (two for --loopback), checking the fixed layout.
pub(crate) fn parse_tables(stdout: &str) -> Vec<Tables> {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut threads = Vec::new();
    while i < lines.len() {
        let l = lines[i];
        if l == "Thread  Time(s) Throughput(KB/s) Avg B / Compl" {
            assert_eq!(
                lines[i + 1],
                "======  ======= ================ ============="
            );
            threads.clear();
            i += 2;
            while i < lines.len() && !lines[i].is_empty() {
                let row = lines[i];
                assert_eq!(row.len(), 6 + 1 + 8 + 1 + 16 + 1 + 13, "row width: {row:?}");
                let f: Vec<&str> = row.split_whitespace().collect();
                threads.push((
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                ));
                i += 1;
            }
            continue;
        }
        if l == "   Bytes(MEG)    realtime(s) Avg Frame Size Throughput(MB/s)" {
            assert_eq!(lines[i - 1], "");
            assert_eq!(lines[i - 2], "");
            let row = lines[i + 2];
            assert_eq!(
                row.len(),
                16 + 1 + 11 + 1 + 14 + 1 + 16,
                "row width: {row:?}"
            );
            let f: Vec<f64> = row.split_whitespace().map(|v| v.parse().unwrap()).collect();
            // Row 4 (packets, CPU) is 15 lines further down.
            let cpu_row = lines
                .iter()
                .skip(i)
                .skip_while(|l| !l.starts_with("Packets Sent"))
                .nth(2)
                .expect("packets row");
            let cpu_pct = cpu_row.split_whitespace().last().unwrap().parse().unwrap();
            out.push(Tables {
                threads: std::mem::take(&mut threads),
                meg: f[0],
                realtime: f[1],
                mb_per_s: f[3],
                cpu_pct,
            });
        }
        i += 1;
    }
    out
}

/// Asserts `a` and `b` agree within `pct` percent.
pub(crate) fn assert_close(a: f64, b: f64, pct: f64, what: &str) {
    let diff = (a - b).abs() / a.max(b).max(f64::MIN_POSITIVE) * 100.0;
    assert!(
        diff <= pct,
        "{what}: {a} vs {b} differ by {diff:.3}% (> {pct}%)"
    );
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
        serde_json::from_str(include_str!("../schema/ntttcp-report.json")).expect("schema JSON");
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

/// Resident memory of a process in KiB (/proc/PID/status VmRSS).
pub(crate) fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS of the receiver")
}

/// Samples a process's open descriptors (/proc/PID/fd) every 10 ms on a thread of its
/// own until `peak` is called: the most it held at one sample.
pub(crate) struct FdPeak {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: std::thread::JoinHandle<usize>,
}

impl FdPeak {
    pub(crate) fn watch(pid: u32) -> Self {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = done.clone();
        let sampler = std::thread::spawn(move || {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let n = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count);
                peak = peak.max(n);
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        });
        Self { done, sampler }
    }

    /// Stops sampling; the peak.
    pub(crate) fn peak(self) -> usize {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        self.sampler.join().expect("fd sampler")
    }
}

/// Raises this test process's own soft RLIMIT_NOFILE to at least `n` with prlimit(1),
/// for tests that hold many sockets themselves (the hard limit, which children inherit,
/// is left alone).
pub(crate) fn raise_own_nofile(n: u64) {
    let status = Command::new("prlimit")
        .args([
            "--pid",
            &std::process::id().to_string(),
            &format!("--nofile={n}:"),
        ])
        .status()
        .expect("run prlimit");
    assert!(
        status.success(),
        "prlimit --nofile={n}: (the hard limit may be lower)"
    );
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
    uid() == 0
}

/// Test ports come from one allocator, so no two tests can share one (nor two test runs
/// on one machine: a block is also claimed with a lock file): each test takes a
/// block of 100 consecutive ports (ntttcp's sync port is a base's `-p` minus one, its data
/// ports follow) that no other test in this run gets, below the ephemeral range so that no
/// outgoing connection holds one. Inside a test, `@K` in a string (`at`, or any argument
/// list given to `spawn`/`run`) and `port(K)` name the block's port K.
const FIRST_PORT: u16 = 10_000;
const BLOCK: u16 = 100;
const BLOCKS: usize = 220;

static TAKEN: std::sync::Mutex<[bool; BLOCKS]> = std::sync::Mutex::new([false; BLOCKS]);

thread_local! {
    static BASE: std::cell::Cell<Option<u16>> = const { std::cell::Cell::new(None) };
}

/// A test's ports; they stay taken for the rest of the run (a port can linger in
/// TIME_WAIT after its test).
pub(crate) struct Ports;

impl Ports {
    /// `blocks` consecutive blocks of 100 ports for this test.
    pub(crate) fn take(blocks: usize) -> Self {
        Self::claim(
            |i, taken| (i..i + blocks).all(|b| b < BLOCKS && !taken[b]),
            blocks,
            0,
        )
    }

    /// One block, and the block 1000 ports above it: Windows-sync tests, whose token
    /// ports are the data ports plus 1000.
    pub(crate) fn with_tokens() -> Self {
        let tokens = usize::from(1000 / BLOCK);
        Self::claim(
            |i, taken| i + tokens < BLOCKS && !taken[i] && !taken[i + tokens],
            1,
            tokens,
        )
    }

    fn claim(fits: impl Fn(usize, &[bool; BLOCKS]) -> bool, blocks: usize, also: usize) -> Self {
        let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
        let (mut locked, mut in_use) = (0, 0);
        for i in 0..BLOCKS {
            if !fits(i, &taken) {
                continue;
            }
            let mut all: Vec<usize> = (i..i + blocks).collect();
            if also > 0 {
                all.push(i + also);
            }
            for &b in &all {
                taken[b] = true;
            }
            // A block some other process holds a port of, or that another test run on
            // this machine has claimed, is skipped (and stays taken).
            let claimed = all.iter().all(|&b| claim_across_processes(b));
            if claimed && all.iter().all(|&b| block_is_free(b)) {
                BASE.with(|c| c.set(Some(FIRST_PORT + i as u16 * BLOCK)));
                return Self;
            }
            *if claimed { &mut in_use } else { &mut locked } += 1;
        }
        panic!(
            "no free block of test ports left: {locked} held by other test runs (lock files \
             in {}), {in_use} with a port in use, the rest taken by this run",
            lock_dir().display()
        );
    }
}

/// Claims block `b` for this process's lifetime with a lock file, so that two test runs
/// on one machine, by any users one after the other or at once, never share a block.
fn claim_across_processes(b: usize) -> bool {
    static HELD: std::sync::Mutex<Vec<std::fs::File>> = std::sync::Mutex::new(Vec::new());
    let dir = lock_dir();
    let path = dir.join(format!("{}.lock", FIRST_PORT + b as u16 * BLOCK));
    let Some(file) = lock_file(&path) else {
        return false;
    };
    if file.try_lock().is_err() {
        return false;
    }
    HELD.lock().unwrap_or_else(|p| p.into_inner()).push(file);
    true
}

/// The lock directory every user shares: `$TMPDIR/ntttcp-test-ports`, world-writable
/// with the sticky bit (as /tmp). One that an older run made private to its user is
/// passed over for this user's own; where neither can be had the claim says why.
fn lock_dir() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let shared = std::env::temp_dir().join("ntttcp-test-ports");
        let _ = std::fs::create_dir(&shared);
        // Made (now, or by an older run of this user's) private: opened to every user.
        use std::os::unix::fs::MetadataExt;
        if std::fs::metadata(&shared).is_ok_and(|m| m.uid() == uid()) {
            let _ = std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777));
        }
        if writable(&shared) {
            return shared;
        }
        let own = std::env::temp_dir().join(format!("ntttcp-test-ports-{}", uid()));
        let _ = std::fs::create_dir_all(&own);
        assert!(
            writable(&own),
            "cannot claim test ports: neither {} nor {} is a directory this user (uid {}) \
             may write; remove them or point TMPDIR elsewhere",
            shared.display(),
            own.display(),
            uid()
        );
        own
    })
    .clone()
}

/// Whether this user can create files in `dir` (tried, not guessed from mode bits).
fn writable(dir: &std::path::Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    let ok = std::fs::File::create(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// The lock file at `path`, opened for reading (a lock needs no more), made readable by
/// every user when this process creates it.
fn lock_file(path: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(f) = std::fs::File::open(path) {
        return Some(f);
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    let _ = f.set_permissions(std::fs::Permissions::from_mode(0o666));
    Some(f)
}

/// This process's user id (from /proc/self/status).
pub(crate) fn uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|u| u.parse().ok()))
        .unwrap_or(u32::MAX)
}

fn block_is_free(b: usize) -> bool {
    let first = FIRST_PORT + b as u16 * BLOCK;
    (first..first + BLOCK).all(|p| {
        std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok()
    })
}

/// Port `k` of this test's block.
pub(crate) fn port(k: u16) -> u16 {
    let base = BASE.with(std::cell::Cell::get);
    base.expect("the test takes its ports (Ports::take) before naming one") + k
}

/// `s` with every `@K` replaced by port K of this test's block.
pub(crate) fn ports_in(s: &str) -> String {
    let re = regex::Regex::new(r"@(\d+)").expect("pattern");
    re.replace_all(s, |c: &regex::Captures<'_>| {
        port(c[1].parse().expect("a port offset")).to_string()
    })
    .into_owned()
}

/// The JSON document a process printed on stdout.
pub(crate) fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("JSON: {e}\n{o:?}"))
}

/// A receiver (`-r 127.0.0.1 -p @1 --format json RX`) and a sender (`-s 127.0.0.1 -p @1
/// --format json TX`), both of which must exit 0: their JSON documents.
pub(crate) fn json_pair(rx: &str, tx: &str) -> (serde_json::Value, serde_json::Value) {
    let limit = Duration::from_secs(30);
    let r = spawn(
        "receiver",
        &format!("-r 127.0.0.1 -p @1 --format json {rx}"),
    );
    let so = run(&format!("-s 127.0.0.1 -p @1 --format json {tx}"), limit);
    let ro = r.wait(limit);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    (json(&so), json(&ro))
}

/// A multi-client receiver (`-M`, 2 ports from @1, `-t 2`) and two senders with `extra`,
/// the second the last client (`-L`) once the first waits for it; all must exit 0. Their
/// outputs: (first sender, last sender, receiver), in JSON.
pub(crate) fn multi_client(extra: &str) -> (Output, Output, Output) {
    let limit = Duration::from_secs(30);
    let m = "-P 2 -p @1 -t 2 --format json";
    let r = spawn("receiver", &format!("-r 127.0.0.1 {m} -M"));
    let a = spawn("sender a", &format!("-s 127.0.0.1 -n 1 {m} {extra}"));
    a.wait_for_stderr("waiting for the last client", limit);
    let b = run(&format!("-s 127.0.0.1 -n 1 {m} {extra} -L"), limit);
    let (ao, ro) = (a.wait(limit), r.wait(limit));
    assert_eq!(
        (ao.code(), b.code(), ro.code()),
        (Some(0), Some(0), Some(0)),
        "{ao:?}\n{b:?}\n{ro:?}"
    );
    (ao, b, ro)
}
