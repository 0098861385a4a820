//! Where output goes while the program runs: stdout for the tables (and the lines the
//! NTttcp layout shows), stderr for notes and errors, a copy of both in the `-O` log, and
//! the result files (`-x`, `-j`, `-xml`) written as each report arrives. Writes never
//! panic: a closed pipe (`ntttcp ... | head`) loses output, not the exit status.

use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{console, json, linux, plot, schema, xml};
use crate::config::{Config, Role};
use crate::report::{Format, Note, OutputFile, Presentation, Report, Side};
use crate::timeline::{IntervalSample, Progress};

/// Writes `text` to stdout and flushes.
pub(crate) fn out(text: &str) {
    let _ = try_out(text);
}

/// Writes `text` to stdout and flushes; a closed stdout or a reader that went away
/// (`| head -1`) is not an error: the output is simply not wanted any more.
fn try_out(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let r = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(()),
        other => other,
    }
}

/// Proves, before the test, that every output file can be written: an existing file is
/// opened for writing (not truncated), a new one is created and removed again. The error
/// names the flag as typed and the path.
pub(crate) fn check_outputs(look: &Presentation) -> Result<(), String> {
    let files = [
        &look.xml,
        &look.json,
        &look.log,
        &look.xml_windows,
        &look.plot,
    ];
    for f in files.into_iter().flatten() {
        probe(&f.path)
            .map_err(|e| format!("cannot write the {} file {}: {e}", f.flag, f.path.display()))?;
    }
    Ok(())
}

fn probe(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        ));
    }
    if path.exists() {
        // No write bit for anyone (/proc/version): read-only, even where root could open it.
        if std::fs::metadata(path)?.permissions().readonly() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "it is read-only",
            ));
        }
        OpenOptions::new().write(true).open(path).map(drop)
    } else {
        OpenOptions::new().write(true).create_new(true).open(path)?;
        std::fs::remove_file(path)
    }
}

/// Writes one line to stderr.
pub(crate) fn err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The running program's output: console, log copy, result files.
#[derive(Debug)]
pub(crate) struct Terminal {
    role: Role,
    verbose: bool,
    look: Presentation,
    /// Keep one updating status line on stderr (a terminal, not -Q, human format).
    live: bool,
    status_shown: AtomicBool,
    /// Loopback with `--format json`: the first side's report, until the second arrives.
    pending: Mutex<Vec<Report>>,
    /// `--plot`: each side's interval samples so far.
    samples: Mutex<Vec<(Side, IntervalSample)>>,
    log: Option<Mutex<File>>,
    /// Outputs that could not be written (each said once on stderr): the exit status
    /// then says the run failed.
    failures: Mutex<Vec<String>>,
}

impl Terminal {
    /// Opens the `-O` log (replacing an old one, as ntttcp-for-linux does) and asks the
    /// run for the interval samples this output needs: `--interval`, the live status line
    /// (stderr is a terminal, no -Q), the Linux layout's real-time lines, jsonl.
    pub(crate) fn new(cfg: &mut Config, look: Presentation) -> std::io::Result<Self> {
        let live = !look.quiet && look.format.is_human() && std::io::stderr().is_terminal();
        let samples =
            live || look.plot.is_some() || matches!(look.format, Format::Jsonl | Format::Linux);
        cfg.show.interval = look
            .interval
            .or(samples.then_some(std::time::Duration::from_secs(1)));
        let (role, verbose) = (cfg.role, cfg.show.verbose);
        let log = match &look.log {
            Some(f) => Some(Mutex::new(File::create(&f.path).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot write the {} file {}: {e}", f.flag, f.path.display()),
                )
            })?)),
            None => None,
        };
        Ok(Self {
            role,
            verbose,
            look,
            live,
            status_shown: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
            samples: Mutex::new(Vec::new()),
            log,
            failures: Mutex::new(Vec::new()),
        })
    }

    /// What could not be written, one line each (empty when every output was written).
    pub(crate) fn failures(&self) -> Vec<String> {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records that `what` could not be written, saying so once per destination.
    fn failed(&self, what: &str, e: &std::io::Error) {
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if f.iter().any(|l| l.starts_with(what)) {
            return;
        }
        let line = format!("{what}: {e}");
        f.push(line.clone());
        drop(f);
        err(&format!("ntttcp: error: cannot write {line}"));
    }

    fn copy(&self, text: &str) {
        if let (Some(f), Some(file)) = (&self.log, &self.look.log) {
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = f.write_all(text.as_bytes()) {
                drop(f);
                let what = format!("the {} file {}", file.flag, file.path.display());
                self.failed(&what, &e);
            }
        }
    }

    /// stdout, and the log.
    pub(crate) fn out(&self, text: &str) {
        self.clear_status();
        if let Err(e) = try_out(text) {
            self.failed("standard output", &e);
        }
        self.copy(text);
    }

    /// One line on stderr, and in the log.
    pub(crate) fn err(&self, line: &str) {
        self.clear_status();
        err(line);
        self.copy(&format!("{line}\n"));
    }

    fn clear_status(&self) {
        if self.status_shown.swap(false, Ordering::Relaxed) {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }

    fn status(&self, text: &str) {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[2K{text}");
        self.status_shown.store(true, Ordering::Relaxed);
    }

    /// Handles one note in the chosen format; result files as reports arrive.
    pub(crate) fn note(&self, n: Note) {
        let format = self.look.format;
        match n {
            Note::Ready => {}
            Note::Started => match format {
                Format::Windows => self.out("Network activity progressing...\n"),
                Format::Linux => self.out(&linux::info("Network activity progressing...")),
                Format::Json | Format::Jsonl => {}
            },
            Note::Warn(m) | Note::Info(m) if format == Format::Linux => {
                self.out(&linux::info(&m));
            }
            Note::Warn(m) => self.err(&format!("ntttcp: {m}")),
            Note::Info(m) if self.verbose => self.err(&format!("ntttcp: {m}")),
            Note::Info(_) => {}
            Note::Progress(side, p) => self.progress(side, &p),
            Note::Report(r) => {
                self.report(&r);
                // In loopback mode the files hold the receiver's figures.
                if self.role != Role::Loopback || r.side == Side::Receiver {
                    self.files(&r);
                }
            }
        }
    }

    fn progress(&self, side: Side, p: &Progress) {
        let who = match side {
            Side::Sender => "sender",
            Side::Receiver => "receiver",
        };
        // One status line is enough in loopback mode: the receiver's.
        let shows_status = self.live && !(self.role == Role::Loopback && side == Side::Sender);
        if let (Some(_), Progress::Interval(iv)) = (&self.look.plot, p) {
            let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
            s.push((side, iv.clone()));
        }
        match (self.look.format, p) {
            (Format::Linux, Progress::WarmupDone) => {
                self.out(&linux::info("Test warmup completed."))
            }
            (Format::Linux, Progress::RunDone) => self.out(&linux::info("Test run completed.")),
            (Format::Linux, Progress::CooldownStarted) => {
                self.out(&linux::info("Test cooldown is in progress..."));
            }
            (Format::Linux, Progress::CycleDone) => self.out(&linux::info("Test cycle finished.")),
            (Format::Jsonl, Progress::Interval(iv)) => {
                let line = serde_json::to_string(&schema::Line::interval(side, iv));
                self.out(&format!("{}\n", line.unwrap_or_default()));
            }
            (Format::Linux, Progress::Interval(iv)) if !self.look.quiet => {
                let bytes: u64 = iv.thread_bytes.iter().sum();
                let mut tp = linux::format_throughput(bytes, iv.end_s - iv.start_s);
                if let Some(l) = iv.udp_loss {
                    tp.push_str(&format!(", datagrams lost: {:.2}%", l.percent()));
                }
                if shows_status {
                    self.status(&format!("Real-time throughput: {tp}"));
                } else if !self.live {
                    self.out(&format!("Real-time throughput: {tp}\n"));
                }
            }
            (Format::Windows, Progress::Interval(iv)) => {
                let loss = iv
                    .udp_loss
                    .map_or(String::new(), |l| format!("  {:.2}% lost", l.percent()));
                if self.look.interval.is_some() {
                    let bps = iv.bits_per_second();
                    self.out(&format!(
                        "{who:<8} {:8.3} - {:8.3} s {:16.3} KB/s {:10.3} Gbit/s{loss}\n",
                        iv.start_s,
                        iv.end_s,
                        bps / 8.0 / 1024.0,
                        bps / 1e9
                    ));
                }
                if shows_status && !self.look.quiet {
                    let total = iv.planned_s.map_or(String::new(), |p| format!(" / {p:.0}"));
                    self.status(&format!(
                        "ntttcp: {who} {:.0}{total} s  {:.2} Gbit/s{loss}",
                        iv.end_s,
                        iv.bits_per_second() / 1e9
                    ));
                }
            }
            _ => {}
        }
    }

    fn report(&self, r: &Report) {
        match self.look.format {
            Format::Windows => {
                let mut text = String::new();
                if self.role == Role::Loopback {
                    let who = if r.side == Side::Sender {
                        "Sender"
                    } else {
                        "Receiver"
                    };
                    text = format!("\n\n{who}:");
                }
                text.push_str(&console::render(r, self.look.hide_per_thread));
                self.out(&text);
            }
            Format::Linux => self.out(&linux::render(r, self.verbose)),
            Format::Jsonl => {
                let line = serde_json::to_string(&schema::Line::summary(r));
                self.out(&format!("{}\n", line.unwrap_or_default()));
            }
            Format::Json => {
                // One document per test: in loopback mode both sides together.
                let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
                pending.push(r.clone());
                if self.role != Role::Loopback || pending.len() == 2 {
                    pending.sort_by_key(|r| r.side == Side::Receiver);
                    let doc = serde_json::to_string_pretty(&schema::Document::new(&pending));
                    pending.clear();
                    drop(pending);
                    self.out(&format!("{}\n", doc.unwrap_or_default()));
                }
            }
        }
    }

    fn files(&self, r: &Report) {
        let look = &self.look;
        if let Some(f) = &look.plot {
            let mine: Vec<IntervalSample> = {
                let mut all = self.samples.lock().unwrap_or_else(|p| p.into_inner());
                let (mine, rest) = all.drain(..).partition(|(s, _)| *s == r.side);
                *all = rest;
                mine.into_iter().map(|(_, iv)| iv).collect()
            };
            let side = if r.side == Side::Sender {
                "sender"
            } else {
                "receiver"
            };
            let title = format!("ntttcp {side} on {}: throughput per interval", r.host);
            self.write(f, &plot::svg(&title, &mine), false);
        }
        // (file, append, contents): NTttcp appends its XML, the Linux files are replaced.
        let writes = [
            (&look.xml, false, Render::LinuxXml),
            (&look.json, false, Render::LinuxJson),
            (&look.xml_windows, true, Render::WindowsXml),
        ];
        for (file, append, render) in writes {
            if let Some(f) = file {
                let text = match render {
                    Render::LinuxXml => xml::linux(r),
                    Render::LinuxJson => json::linux(r),
                    Render::WindowsXml => xml::windows(r, look.hide_per_thread),
                };
                self.write(f, &text, append);
            }
        }
    }

    /// Writes one result file; a failure is recorded and the other files still written.
    fn write(&self, f: &OutputFile, text: &str, append: bool) {
        if let Err(e) = write_file(&f.path, text, append) {
            self.failed(&format!("the {} file {}", f.flag, f.path.display()), &e);
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
