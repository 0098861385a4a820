//! Where output goes while the program runs: stdout for the tables (and the lines the
//! NTttcp layout shows), stderr for notes and errors. Writes never panic: a closed pipe
//! (`ntttcp ... | head`) loses output, not the exit status.

use std::io::Write;

use crate::Note;
use crate::Presentation;
use crate::config::Role;
use crate::report::{Side, console};

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

/// The note printer: "Network activity progressing..." and each report's tables on
/// stdout as they come, warnings always and progress details with `-V` on stderr.
pub fn notes(role: Role, verbose: bool, look: Presentation) -> impl Fn(Note) + Sync {
    move |n: Note| match n {
        Note::Started => out("Network activity progressing...\n"),
        Note::Warn(m) => err(&format!("ntttcp: {m}")),
        Note::Info(m) if verbose => err(&format!("ntttcp: {m}")),
        Note::Info(_) => {}
        Note::Report(r) => {
            let mut text = String::new();
            if role == Role::Loopback {
                let who = if r.side == Side::Sender {
                    "Sender"
                } else {
                    "Receiver"
                };
                text = format!("\n\n{who}:");
            }
            text.push_str(&console::render(&r, look.hide_per_thread));
            out(&text);
        }
    }
}
