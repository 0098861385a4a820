//! A write that fails leaves nothing half-written: on a file system that is full before
//! the test, every output is refused before it starts; on one that fills during the test,
//! the run exits 1 naming each result file, no target holds part of a result, and a file
//! that was there (NTttcp's XML, appended to) keeps what it had.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::util::{
    Launch, Ports, Scratch, is_root, may_skip, parse_tables, port, ports_in, run, spawn,
    wait_listening,
};

const LIMIT: Duration = Duration::from_secs(30);

/// A small tmpfs mounted on a scratch folder, unmounted (lazily) on drop.
struct Tmpfs {
    dir: PathBuf,
    _scratch: Scratch,
}

impl Tmpfs {
    fn mount(name: &str) -> Self {
        let scratch = Scratch::new(name);
        let dir = scratch.file("fs");
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(&dir)
            .status()
            .expect("mount");
        assert!(ok.success(), "mount -t tmpfs on {}", dir.display());
        Self {
            dir,
            _scratch: scratch,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes a filler until the file system refuses more (bounded by its 2 MiB).
    fn fill(&self) {
        let mut f = std::fs::File::create(self.path("filler")).unwrap();
        let block = vec![0u8; 4096];
        for _ in 0..1024 {
            if f.write_all(&block).and_then(|()| f.sync_all()).is_err() {
                return;
            }
        }
        panic!("a 2 MiB tmpfs took 4 MiB");
    }

    /// The names in it, but for the filler.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "filler")
            .collect();
        v.sort();
        v
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

fn files_in(fs: &Tmpfs) -> String {
    let p = |n: &str| fs.path(n).display().to_string();
    format!(
        "-x {} -j {} --xml-windows {} -O {}",
        p("r.xml"),
        p("r.json"),
        p("w.xml"),
        p("r.log")
    )
}

fn root_or_skip() -> bool {
    is_root() || !may_skip("the full-file-system test needs root (mount -t tmpfs)")
}

/// Full before the test: refused before any connection, exit 2, naming the flag.
#[test]
fn outputs_on_a_full_file_system_are_refused_before_the_test() {
    if !root_or_skip() {
        return;
    }
    let _ports = Ports::take(1);
    let fs = Tmpfs::mount("full-before");
    fs.fill();
    let o = run(
        &format!("--loopback -p {} -t 1 {}", port(1), files_in(&fs)),
        LIMIT,
    );
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(
        o.stderr.contains("cannot write the -x file"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("No space left"), "{}", o.stderr);
    assert_eq!(fs.names(), Vec::<String>::new(), "nothing left behind");
}

/// Fills during the test: the receiver exits 1 naming the files, none of them is there
/// (nor a hidden half of one), and the appended-to Windows XML keeps its old contents.
#[test]
fn a_file_system_that_fills_during_the_test_leaves_no_result_file() {
    if !root_or_skip() {
        return;
    }
    let _ports = Ports::take(1);
    let fs = Tmpfs::mount("full-during");
    std::fs::write(fs.path("w.xml"), "<old/>\n").unwrap();
    let p = port(1);
    let r = spawn(
        "receiver",
        &format!("-r 127.0.0.1 -P 1 -p {p} -t 2 {}", files_in(&fs)),
    );
    wait_listening(p, LIMIT);
    // The outputs were proven writable at start; the file system fills before the end.
    fs.fill();
    let so = run(&format!("-s 127.0.0.1 -P 1 -n 1 -p {p} -t 2"), LIMIT);
    let ro = r.wait(LIMIT);
    assert_eq!(so.code(), Some(0), "{so:?}");
    assert_eq!(ro.code(), Some(1), "{ro:?}");
    for flag in ["-x", "-j", "--xml-windows"] {
        let needle = format!("cannot write the {flag} file");
        assert!(ro.stderr.contains(&needle), "{needle}: {}", ro.stderr);
    }
    let old = std::fs::read_to_string(fs.path("w.xml")).unwrap();
    assert_eq!(old, "<old/>\n", "the appended-to file as it was");
    // The log, begun before the file system filled, may have had room: then it is whole.
    let log = fs.path("r.log");
    let names = fs.names();
    let want: &[&str] = if log.exists() {
        &["r.log", "w.xml"]
    } else {
        &["w.xml"]
    };
    assert_eq!(names, want, "no result file, no hidden half of one");
    if log.exists() {
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("Packets Sent"), "a whole log: {text}");
    }
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
    let full = Launch::new("ntttcp", "--loopback -P 1 -p @1 -t 1")
        .after("exec >/dev/full")
        .spawn()
        .wait(Duration::from_secs(30));
    assert_eq!(full.code(), Some(1), "{full:?}");
    assert!(
        full.stderr.contains("cannot write standard output"),
        "{}",
        full.stderr
    );
    let closed = Launch::new("ntttcp", "--loopback -P 1 -p @11 -t 1")
        .after("exec >&-")
        .spawn()
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
