//! Where output goes while the program runs: stdout for the tables (and the lines the
//! NTttcp layout shows), stderr for notes and errors, a copy of both in the `-O` log, and
//! the result files (`-x`, `-j`, `-xml`) written as each report arrives. Writes never
//! panic: a closed pipe (`ntttcp ... | head`) loses output, not the exit status.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use crate::Note;
use crate::Presentation;
use crate::config::Role;
use crate::report::{Report, Side, console, json, xml};

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

/// The running program's output: console, log copy, result files.
#[derive(Debug)]
pub struct Terminal {
    role: Role,
    verbose: bool,
    look: Presentation,
    log: Option<Mutex<File>>,
}

impl Terminal {
    /// Opens the `-O` log (replacing an old one, as ntttcp-for-linux does).
    pub fn new(role: Role, verbose: bool, look: Presentation) -> std::io::Result<Self> {
        let log = match &look.log {
            Some(p) => Some(Mutex::new(File::create(p).map_err(|e| {
                std::io::Error::new(e.kind(), format!("create log {}: {e}", p.display()))
            })?)),
            None => None,
        };
        Ok(Self {
            role,
            verbose,
            look,
            log,
        })
    }

    fn copy(&self, text: &str) {
        if let Some(f) = &self.log {
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            let _ = f.write_all(text.as_bytes());
        }
    }

    /// stdout, and the log.
    pub fn out(&self, text: &str) {
        out(text);
        self.copy(text);
    }

    /// One line on stderr, and in the log.
    pub fn err(&self, line: &str) {
        err(line);
        self.copy(&format!("{line}\n"));
    }

    /// Handles one note: "Network activity progressing..." and each report's tables on
    /// stdout, warnings always and progress details with `-V` on stderr, result files.
    pub fn note(&self, n: Note) {
        match n {
            Note::Started => self.out("Network activity progressing...\n"),
            Note::Warn(m) => self.err(&format!("ntttcp: {m}")),
            Note::Info(m) if self.verbose => self.err(&format!("ntttcp: {m}")),
            Note::Info(_) => {}
            Note::Report(r) => {
                let mut text = String::new();
                if self.role == Role::Loopback {
                    let who = if r.side == Side::Sender {
                        "Sender"
                    } else {
                        "Receiver"
                    };
                    text = format!("\n\n{who}:");
                }
                text.push_str(&console::render(&r, self.look.hide_per_thread));
                self.out(&text);
                // In loopback mode the files hold the receiver's figures.
                if self.role != Role::Loopback || r.side == Side::Receiver {
                    self.files(&r);
                }
            }
        }
    }

    fn files(&self, r: &Report) {
        let look = &self.look;
        // (file, append, contents): NTttcp appends its XML, the Linux files are replaced.
        let writes = [
            (&look.xml, false, Render::LinuxXml),
            (&look.json, false, Render::LinuxJson),
            (&look.xml_windows, true, Render::WindowsXml),
        ];
        for (path, append, render) in writes {
            if let Some(p) = path {
                let text = match render {
                    Render::LinuxXml => xml::linux(r),
                    Render::LinuxJson => json::linux(r),
                    Render::WindowsXml => xml::windows(r, look.hide_per_thread),
                };
                if let Err(e) = write_file(p, &text, append) {
                    self.err(&format!("ntttcp: error: cannot write {}: {e}", p.display()));
                }
            }
        }
    }
}

/// Which result file.
#[derive(Clone, Copy)]
enum Render {
    LinuxXml,
    LinuxJson,
    WindowsXml,
}

/// Writes (or, for NTttcp's XML, appends) a result file.
fn write_file(path: &Path, text: &str, append: bool) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)?;
    f.write_all(text.as_bytes())
}
