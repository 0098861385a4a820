//! `-D`: run in the background. The process re-starts itself detached (its own session,
//! standard streams on /dev/null, same working directory) instead of forking a process
//! that may already have threads. The foreground process returns only once the daemon
//! says it is ready (its ports are bound) or has failed, and then with the daemon's own
//! error.
//!
//! What differs by OS (leaving the session, the null device) is in the OS module; on
//! Windows `-D` is refused before this is reached.
//!
//! Unlike ntttcp-for-linux the daemon does not change to `/`, so relative paths given on
//! the command line (`--pid-file`, and output files) mean what they meant when typed.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::os::daemon as os_daemon;

/// Marks the re-started (background) process.
const CHILD_MARK: &str = "NTTTCP_DAEMON_CHILD";

/// The line the daemon writes on its stderr pipe once it is ready.
const READY: &str = "ntttcp-daemon-ready";

/// How long the foreground process waits for the daemon to report.
const REPORT_WITHIN: Duration = Duration::from_secs(30);

/// What `detach_if` did.
#[derive(Debug)]
pub(crate) enum Background {
    /// We are the foreground process and the daemon (its PID) reported ready: exit 0.
    Started(u32),
    /// Carry on here (in the background with -D, or in the foreground without it).
    Running(Option<PidFile>),
}

/// With `daemon`, in the foreground: start the background copy and wait for its word.
/// In the background copy: take the PID file, if any.
pub(crate) fn detach_if(daemon: bool, pid_file: Option<&Path>) -> io::Result<Background> {
    if !daemon {
        return Ok(Background::Running(None));
    }
    if !in_background() {
        return start_background().map(Background::Started);
    }
    pid_file
        .map(PidFile::create)
        .transpose()
        .map(Background::Running)
}

/// Whether this process is the background copy of a `-D` run.
pub(crate) fn in_background() -> bool {
    std::env::var_os(CHILD_MARK).is_some()
}

/// The daemon is ready (its ports are bound): tells the foreground process, then points
/// stderr at /dev/null like the other standard streams. Does nothing outside a daemon.
pub(crate) fn announce_ready() {
    if !in_background() {
        return;
    }
    let _ = writeln!(io::stderr(), "{READY}");
    os_daemon::silence_stderr();
}

/// Starts this program again in the background with the same arguments and waits for it
/// to report; returns its PID once it is ready, or its error.
fn start_background() -> io::Result<u32> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(std::env::args_os().skip(1))
        .env(CHILD_MARK, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    os_daemon::leave_session(&mut cmd);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut said = Vec::new();
        for line in io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line == READY {
                let _ = tx.send(Ok(()));
                return;
            }
            said.push(line);
        }
        let _ = tx.send(Err(said));
    });
    match rx.recv_timeout(REPORT_WITHIN) {
        Ok(Ok(())) => Ok(pid),
        Ok(Err(said)) => {
            let _ = child.wait();
            let said: Vec<&str> = said
                .iter()
                .map(|l| l.trim_start_matches("ntttcp: error: "))
                .filter(|l| !l.is_empty())
                .collect();
            Err(io::Error::other(if said.is_empty() {
                "the background process ended without a word".to_string()
            } else {
                said.join("; ")
            }))
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(io::Error::other(format!(
                "the background process did not report within {REPORT_WITHIN:?}"
            )))
        }
    }
}

/// The daemon's PID file, locked (flock) for as long as the daemon lives and removed by
/// it alone when dropped.
#[derive(Debug)]
pub(crate) struct PidFile {
    path: PathBuf,
    _file: File,
}

impl PidFile {
    /// Locks `path` and writes our PID into it; fails, naming the holder, when another
    /// live daemon has it.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        let named =
            |e: io::Error| io::Error::new(e.kind(), format!("pid file {}: {e}", path.display()));
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(named)?;
        if file.try_lock().is_err() {
            let mut held = String::new();
            let _ = file.read_to_string(&mut held);
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "pid file {} is held by a running ntttcp daemon (pid {})",
                    path.display(),
                    held.trim()
                ),
            ));
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(named)?;
        Ok(Self {
            path: path.to_path_buf(),
            _file: file,
        })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // Still locked by us: no other daemon can have taken it over.
        let _ = std::fs::remove_file(&self.path);
    }
}
