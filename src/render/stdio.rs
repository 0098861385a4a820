//! The process's stdout and stderr, written so that they never panic: a closed stdout or
//! a reader that went away (`| head -1`) loses output, not the exit status.

use std::io::Write;

/// Writes `text` to stdout and flushes.
pub(crate) fn out(text: &str) {
    let _ = try_out(text);
}

/// Writes `text` to stdout and flushes; a closed stdout or a reader that went away
/// (`| head -1`) is not an error: the output is simply not wanted any more.
pub(crate) fn try_out(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let r = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) if crate::sys::is_closed_handle(&e) => Ok(()),
        other => other,
    }
}

/// Writes one line to stderr.
pub(crate) fn err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
