//! The result files (`-x`, `-j`, `-xml`, `--plot`): proven writable before the test,
//! written as each report arrives. A file that cannot be written is recorded (and said
//! once on stderr) and the other files are still written.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Mutex;

use super::{atomic, json, plot, xml};
use crate::report::{Direction, OutputFile, Presentation, Report, Side};
use crate::timeline::IntervalSample;

/// Proves, before the test, that every output file can be written: an existing file is
/// opened for writing (not truncated), and a hidden file beside it takes a byte and is
/// removed again (a full file system or a directory without write access fails here).
/// The error names the flag as typed and the path.
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
        OpenOptions::new().write(true).open(path)?;
    }
    // Every file is written beside its target and renamed into place: that must work.
    atomic::probe(path)
}

/// Outputs that could not be written, each said once on stderr: the exit status then
/// says the run failed.
#[derive(Debug, Default)]
pub(crate) struct Failures(Mutex<Vec<String>>);

impl Failures {
    /// What could not be written, one line each.
    pub(crate) fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records that `what` could not be written, saying so once per destination.
    pub(crate) fn add(&self, what: &str, e: &std::io::Error) {
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if f.iter().any(|l| l.starts_with(what)) {
            return;
        }
        let line = format!("{what}: {e}");
        f.push(line.clone());
        drop(f);
        super::stdio::err(&format!("ntttcp: error: cannot write {line}"));
    }
}

/// The result files of a run, and the interval samples `--plot` draws.
#[derive(Debug)]
pub(crate) struct Exporter {
    look: Presentation,
    /// `--plot`: each side's interval samples so far.
    samples: Mutex<Vec<(Side, IntervalSample)>>,
}

impl Exporter {
    pub(crate) fn new(look: Presentation) -> Self {
        Self {
            look,
            samples: Mutex::new(Vec::new()),
        }
    }

    /// Keeps an interval sample for the plot.
    pub(crate) fn sample(&self, side: Side, iv: &IntervalSample) {
        if self.look.plot.is_some() {
            let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
            s.push((side, iv.clone()));
        }
    }

    /// Writes every result file asked for from one side's reports of a test: NTttcp's
    /// XML (appended to) gets each; the single-document files (ntttcp-for-linux's XML and
    /// JSON, the plot) the one of the way a plain test of this side measures (with
    /// `--bidir` the other is in `--format json` and NTttcp's XML).
    pub(crate) fn write_files(&self, rs: &[Report], failures: &Failures) {
        let Some(main) = rs
            .iter()
            .find(|r| r.direction == Direction::usual(r.side))
            .or(rs.first())
        else {
            return;
        };
        let look = &self.look;
        if let Some(f) = &look.plot {
            self.plot(f, main, failures);
        }
        // (file, contents): the Linux files are replaced.
        let writes = [
            (&look.xml, Render::LinuxXml),
            (&look.json, Render::LinuxJson),
        ];
        for (file, render) in writes {
            if let Some(f) = file {
                let text = match render {
                    Render::LinuxXml => xml::linux(main),
                    Render::LinuxJson => json::linux(main),
                };
                write(f, &text, false, failures);
            }
        }
        if let Some(f) = &look.xml_windows {
            // NTttcp appends its XML.
            for r in rs {
                write(f, &xml::windows(r, look.hide_per_thread), true, failures);
            }
        }
    }

    /// `--plot`: the interval samples of `r`'s side and way so far, drawn.
    fn plot(&self, f: &OutputFile, r: &Report, failures: &Failures) {
        let mine: Vec<IntervalSample> = {
            let mut all = self.samples.lock().unwrap_or_else(|p| p.into_inner());
            let (mine, rest) = all.drain(..).partition(|(s, _)| *s == r.side);
            *all = rest;
            mine.into_iter()
                .map(|(_, iv)| iv)
                .filter(|iv| iv.direction == r.direction)
                .collect()
        };
        let side = if r.side == Side::Sender {
            "sender"
        } else {
            "receiver"
        };
        let title = format!("ntttcp {side} on {}: throughput per interval", r.host);
        write(f, &plot::svg(&title, &mine), false, failures);
    }
}

/// Writes one result file; a failure is recorded and the other files still written.
fn write(f: &OutputFile, text: &str, append: bool, failures: &Failures) {
    if let Err(e) = write_file(&f.path, text, append) {
        failures.add(&format!("the {} file {}", f.flag, f.path.display()), &e);
    }
}

/// Which single-document result file.
#[derive(Clone, Copy)]
enum Render {
    LinuxXml,
    LinuxJson,
}

/// Writes (or, for NTttcp's XML, appends) a result file, whole or not at all.
fn write_file(path: &Path, text: &str, append: bool) -> std::io::Result<()> {
    if append {
        atomic::append(path, text)
    } else {
        atomic::replace(path, text)
    }
}
