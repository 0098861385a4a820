//! Where output goes while the program runs: stdout for the tables (and the lines the
//! NTttcp layout shows), stderr for notes and errors. Writes never panic: a closed pipe
//! (`ntttcp ... | head`) loses output, not the exit status.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::Note;
use crate::config::Role;
use crate::report::{Side, console};
use crate::{Outcome, Presentation};

/// Writes `text` to stdout and flushes.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes one line to stderr.
pub fn err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A note printer: "Network activity progressing..." once on stdout, warnings always
/// and progress details with `verbose` on stderr.
pub fn notes(verbose: bool) -> impl Fn(Note) + Sync {
    let started = AtomicBool::new(false);
    move |n: Note| match n {
        Note::Started => {
            if !started.swap(true, Ordering::Relaxed) {
                out("Network activity progressing...\n");
            }
        }
        Note::Warn(m) => err(&format!("ntttcp: {m}")),
        Note::Info(m) if verbose => err(&format!("ntttcp: {m}")),
        Note::Info(_) => {}
    }
}

/// Prints every report of `outcome` (labelled by side in loopback mode).
pub fn print_outcome(outcome: &Outcome, role: Role, look: Presentation) {
    for r in &outcome.reports {
        if role == Role::Loopback {
            let who = if r.side == Side::Sender {
                "Sender"
            } else {
                "Receiver"
            };
            out(&format!("\n\n{who}:"));
        }
        out(&console::render(r, look.hide_per_thread));
    }
}
