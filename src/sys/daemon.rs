//! `-D`: run in the background. The process re-starts itself detached (new process
//! group, standard streams on /dev/null, same working directory) instead of forking a
//! process that may already have threads; the parent reports the child's PID and exits.
//!
//! Unlike ntttcp-for-linux the daemon does not change to `/`, so relative paths given on
//! the command line (`--pid-file`, and output files) mean what they meant when typed.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Marks the re-started (background) process.
const CHILD_MARK: &str = "NTTTCP_DAEMON_CHILD";

/// What `detach_if` did.
#[derive(Debug)]
pub enum Background {
    /// We are the foreground process and started the background one (its PID): exit.
    Started(u32),
    /// Carry on here (in the background with -D, or in the foreground without it).
    Running(Option<PidFile>),
}

/// With `daemon`, in the foreground: start the background copy. In the background copy:
/// write the PID file, if any.
pub fn detach_if(daemon: bool, pid_file: Option<&Path>) -> io::Result<Background> {
    if !daemon {
        return Ok(Background::Running(None));
    }
    if std::env::var_os(CHILD_MARK).is_none() {
        return spawn_background().map(Background::Started);
    }
    pid_file
        .map(PidFile::create)
        .transpose()
        .map(Background::Running)
}

/// Starts this program again in the background with the same arguments; returns the
/// background process's PID. Only the foreground process calls this.
fn spawn_background() -> io::Result<u32> {
    let exe = std::env::current_exe()?;
    let child = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD_MARK, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: Ctrl+C at the terminal is not delivered to it.
        .process_group(0)
        .spawn()?;
    Ok(child.id())
}

/// The background process's PID file; removed again when dropped.
#[derive(Debug)]
pub struct PidFile(PathBuf);

impl PidFile {
    /// Writes our PID to `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        std::fs::write(path, format!("{}\n", std::process::id()))
            .map_err(|e| io::Error::new(e.kind(), format!("write {}: {e}", path.display())))?;
        Ok(Self(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
