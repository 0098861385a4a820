//! A benchmark's children die with it: a bench stopped by a signal (Ctrl+C, `timeout`)
//! runs no destructor, and would leave its servers listening on the ports a later run
//! takes.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// `cmd`, set up so that the kernel kills the child (SIGKILL) when the thread that
/// spawned it exits, the whole bench included.
#[allow(unsafe_code)]
pub(crate) fn tethered(cmd: &mut Command) -> &mut Command {
    // SAFETY: the hook runs in the child between fork and exec and only calls prctl,
    // which is async-signal-safe and changes nothing but the child's own settings.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        })
    }
}
