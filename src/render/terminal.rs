//! What a person sees while the program runs: stdout for the tables (and the lines the
//! NTttcp layout shows), stderr for notes and errors, the live status line, and a copy of
//! both in the `-O` log; the result files are the exporter's (`files`), handed each
//! report as it arrives. Writes never panic: a closed pipe (`ntttcp ... | head`) loses
//! output, not the exit status.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::atomic::Pending;
use super::files::{Exporter, Failures};
use super::{console, linux, schema, series, stdio};
use crate::config::{Config, Role};
use crate::report::series::Series;
use crate::report::{Format, Note, Presentation, Report, Side};
use crate::stats;
use crate::timeline::Progress;

/// How often the run must sample its counters for what `look` shows: `--interval`, or
/// every second for the live status line (stderr is a terminal, no -Q), the Linux
/// layout's real-time lines, jsonl and `--plot`.
pub(crate) fn sampling_interval(look: &Presentation) -> Option<Duration> {
    let samples =
        live(look) || look.plot.is_some() || matches!(look.format, Format::Jsonl | Format::Linux);
    look.interval.or(samples.then_some(Duration::from_secs(1)))
}

/// Whether one updating status line is kept on stderr.
fn live(look: &Presentation) -> bool {
    !look.quiet && look.format.is_human() && std::io::stderr().is_terminal()
}

/// The running program's console and log copy; the result files through its exporter.
#[derive(Debug)]
pub(crate) struct Terminal {
    role: Role,
    verbose: bool,
    look: Presentation,
    /// Keep one updating status line on stderr (a terminal, not -Q, human format).
    live: bool,
    status_shown: AtomicBool,
    /// `--bidir`: interval lines say which way their bytes went.
    both_ways: bool,
    /// `--format json`: the reports of a test's sides so far, and how many sides have
    /// given theirs (in loopback mode the document waits for both).
    pending: Mutex<(Vec<Report>, usize)>,
    /// A sender's peer's reports, shown and put in the document after its own.
    peer: Mutex<Vec<Report>>,
    /// The `-O` log, written beside its target and put in place by `finish`.
    log: Option<Mutex<Pending>>,
    /// The result files.
    files: Exporter,
    /// Outputs that could not be written: the exit status then says the run failed.
    failures: Failures,
}

impl Terminal {
    /// Opens the `-O` log, which replaces an old one (as ntttcp-for-linux's does): at the
    /// end, and only when written whole; at once, written as it comes, for a receiver that
    /// serves test after test (`-H`, `-D`), whose log is followed while it runs.
    pub(crate) fn new(cfg: &Config, look: Presentation) -> std::io::Result<Self> {
        let live = live(&look);
        let (role, verbose) = (cfg.role, cfg.show.verbose);
        let serving = cfg.roles.hold || cfg.background.daemon;
        let open = |p: &std::path::Path| match serving {
            true => Pending::in_place(p),
            false => Pending::create(p),
        };
        let log = match &look.log {
            Some(f) => Some(Mutex::new(open(&f.path).map_err(|e| {
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
            files: Exporter::new(look.clone()),
            look,
            live,
            status_shown: AtomicBool::new(false),
            both_ways: cfg.data.workload == crate::config::Workload::Bidir,
            pending: Mutex::new((Vec::new(), 0)),
            peer: Mutex::new(Vec::new()),
            log,
            failures: Failures::default(),
        })
    }

    /// Puts the `-O` log in place, whole; one that could not be written is removed, so no
    /// half a log is left where the target was.
    pub(crate) fn finish(&mut self) {
        let (Some(log), Some(file)) = (self.log.take(), &self.look.log) else {
            return;
        };
        let pending = log.into_inner().unwrap_or_else(|p| p.into_inner());
        let what = format!("the {} file {}", file.flag, file.path.display());
        if self.failures.all().iter().any(|l| l.starts_with(&what)) {
            return;
        }
        if let Err(e) = pending.commit() {
            self.failures.add(&what, &e);
        }
    }

    /// What could not be written, one line each (empty when every output was written).
    pub(crate) fn failures(&self) -> Vec<String> {
        self.failures.all()
    }

    fn copy(&self, text: &str) {
        if let (Some(f), Some(file)) = (&self.log, &self.look.log) {
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = f.write_all(text.as_bytes()) {
                drop(f);
                let what = format!("the {} file {}", file.flag, file.path.display());
                self.failures.add(&what, &e);
            }
        }
    }

    /// stdout, and the log.
    pub(crate) fn out(&self, text: &str) {
        self.clear_status();
        if let Err(e) = stdio::try_out(text) {
            self.failures.add("standard output", &e);
        }
        self.copy(text);
    }

    /// One line on stderr, and in the log.
    pub(crate) fn err(&self, line: &str) {
        self.clear_status();
        stdio::err(line);
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
            Note::PeerReports(rs) => {
                self.peer
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(rs);
            }
            Note::Reports(rs) => {
                for r in &rs {
                    self.report(r);
                }
                let peer =
                    std::mem::take(&mut *self.peer.lock().unwrap_or_else(|p| p.into_inner()));
                for r in &peer {
                    self.peer_report(r);
                }
                self.document(&[rs.as_slice(), &peer].concat());
                // In loopback mode the files hold the receiver's figures.
                if self.role != Role::Loopback || rs.iter().any(|r| r.side == Side::Receiver) {
                    self.files.write_files(&rs, &self.failures);
                }
            }
        }
    }

    fn progress(&self, side: Side, p: &Progress) {
        let mut who = match side {
            Side::Sender => "sender",
            Side::Receiver => "receiver",
        }
        .to_string();
        let mut way = String::new();
        if let (true, Progress::Interval(iv)) = (self.both_ways, p) {
            way = crate::render::direction_word(iv.direction).to_string();
            who = format!("{who} {way}");
            way = format!(" ({way})");
        }
        // One status line is enough in loopback mode: the receiver's.
        let shows_status = self.live && !(self.role == Role::Loopback && side == Side::Sender);
        if let Progress::Interval(iv) = p {
            self.files.sample(side, iv);
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
                    tp.push_str(&format!(
                        ", datagrams lost: {:.2}%",
                        stats::interval_loss_percent(&l)
                    ));
                }
                tp.push_str(&crate::render::rr::interval_text(iv));
                if let Some(busy) = iv.cpu_busy_percent {
                    tp.push_str(&format!(", cpu busy: {busy:.1}%"));
                }
                tp.push_str(&way);
                if shows_status {
                    self.status(&format!("Real-time throughput: {tp}"));
                } else if !self.live {
                    self.out(&format!("Real-time throughput: {tp}\n"));
                }
            }
            (Format::Windows, Progress::Interval(iv)) => {
                let mut loss = iv.udp_loss.map_or(String::new(), |l| {
                    format!("  {:.2}% lost", stats::interval_loss_percent(&l))
                });
                loss.push_str(&crate::render::rr::interval_text(iv));
                if self.look.interval.is_some() {
                    let cpu = iv
                        .cpu_busy_percent
                        .map_or(String::new(), |b| format!("  CPU {b:5.1} %"));
                    let bps = stats::interval_bits_per_second(iv);
                    self.out(&format!(
                        "{who:<8} {:8.3} - {:8.3} s {:16.3} KB/s {:10.3} Gbit/s{cpu}{loss}\n",
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
                        stats::interval_bits_per_second(iv) / 1e9
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
            // One document per test, written once every side has given its reports.
            Format::Json => {}
        }
    }

    /// `--repeat`: run `i` (from 1) of `n` has ended with `reports` (a peer's too): its
    /// line (JSONL: its summaries), and its result files, which the next run replaces.
    pub(crate) fn series_run(&self, i: usize, n: u32, reports: &[Report], bps: f64) {
        match self.look.format {
            Format::Windows | Format::Linux => self.out(&series::run_line(i, n, reports, bps)),
            Format::Jsonl => reports.iter().for_each(|r| self.report(r)),
            Format::Json => {}
        }
        let own: Vec<Report> = reports.iter().filter(|r| self.owns(r)).cloned().collect();
        self.files.write_files(&own, &self.failures);
    }

    /// `--repeat`: the series is over (`runs`: each run's reports).
    pub(crate) fn series_end(&self, runs: &[Vec<Report>], s: &Series) {
        match self.look.format {
            Format::Windows | Format::Linux => self.out(&series::table(s)),
            Format::Jsonl => {
                let line = serde_json::to_string(&schema::Line::Series { series: s });
                self.out(&format!("{}\n", line.unwrap_or_default()));
            }
            Format::Json => {
                let doc = serde_json::to_string_pretty(&schema::Document::series(runs, s));
                self.out(&format!("{}\n", doc.unwrap_or_default()));
            }
        }
    }

    /// Whether `r` is this process's own (a sender's peer's report is not).
    fn owns(&self, r: &Report) -> bool {
        self.role == Role::Loopback || (r.side == Side::Sender) == (self.role == Role::Sender)
    }

    /// A peer's report, after this side's own: its totals in one block for people (so
    /// that a parser of this side's tables finds only those), the whole report in JSONL.
    fn peer_report(&self, r: &Report) {
        match self.look.format {
            Format::Windows => self.out(&format!("\n{}\n", peer_totals(r))),
            Format::Linux => self.out(&linux::info(&peer_totals(r))),
            Format::Jsonl | Format::Json => self.report(r),
        }
    }

    /// `--format json`: a test's document once this process's sides have all given their
    /// reports (`rs`, one side's): in loopback mode both sides together.
    fn document(&self, rs: &[Report]) {
        if self.look.format != Format::Json {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.0.extend(rs.iter().cloned());
        pending.1 += 1;
        if self.role == Role::Loopback && pending.1 < 2 {
            return;
        }
        let (mut all, _) = std::mem::take(&mut *pending);
        drop(pending);
        // Stable: each side's reports keep their order (the sending way first).
        all.sort_by_key(|r| r.side == Side::Receiver);
        let doc = serde_json::to_string_pretty(&schema::Document::new(&all));
        self.out(&format!("{}\n", doc.unwrap_or_default()));
    }
}

/// A peer's totals in one line: whose they are, its rate, bytes, window and CPU, and a
/// UDP receiver's loss.
fn peer_totals(r: &Report) -> String {
    let side = match r.side {
        Side::Sender => "sender",
        Side::Receiver => "receiver",
    };
    let t = &r.totals;
    let mut line = format!(
        "The {side}'s figures (on {}, sent over the sync connection): {:.3} Gbit/s, {:.3} MB \
         in {:.3} s, CPU {:.2} %",
        r.host,
        t.bits_per_second / 1e9,
        t.bytes as f64 / 1e6,
        r.duration_s,
        r.cpu.busy_percent
    );
    if let Some(u) = &r.udp {
        let lost = u.lost.map_or("n/a".into(), |l| l.to_string());
        let pct = u.loss_percent.map_or("n/a".into(), |p| format!("{p:.3} %"));
        line.push_str(&format!(", datagrams {} lost {lost} ({pct})", u.datagrams));
    }
    if let Some(e) = &r.end.early {
        line.push_str(&format!("; ended early: {}", e.line()));
    }
    line
}
