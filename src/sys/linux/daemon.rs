//! The two steps of `-D` that are Unix calls: a session of its own, and stderr on
//! /dev/null once the daemon is ready.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The daemon starts a session of its own: no terminal, no signals from the caller's
/// process group (Ctrl+C, a closing terminal).
#[allow(unsafe_code)]
pub(crate) fn leave_session(cmd: &mut Command) {
    // SAFETY: setsid() is async-signal-safe and touches no memory of the parent; it runs
    // in the forked child before exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Points stderr at /dev/null, like the daemon's other standard streams.
#[allow(unsafe_code)]
pub(crate) fn silence_stderr() {
    use std::os::fd::AsRawFd;
    let Ok(null) = std::fs::File::options().write(true).open("/dev/null") else {
        return;
    };
    // SAFETY: dup2 on two descriptors this process owns; fd 2 is replaced atomically.
    unsafe {
        libc::dup2(null.as_raw_fd(), libc::STDERR_FILENO);
    }
}
