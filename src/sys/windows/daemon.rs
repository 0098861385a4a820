//! `-D` is Linux's: the command line refuses it on Windows, so these are never reached;
//! they keep the background mode's code the same on both.

use std::process::Command;

/// A background copy would start detached from the console.
pub(crate) fn leave_session(cmd: &mut Command) {
    use std::os::windows::process::CommandExt;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    cmd.creation_flags(DETACHED_PROCESS);
}

/// A detached process has no console, so its stderr already leads nowhere.
pub(crate) fn silence_stderr() {}
