//! `--repeat N`: the same test run N times back to back, each run's reports kept, and the
//! throughput over them summed up. A run that fails (or is interrupted, or misses a
//! floor) ends the series with its exit status; what was measured is still shown.

use std::sync::Mutex;

use crate::config::Config;
use crate::render::terminal::Terminal;
use crate::report::{Note, Presentation, Report};
use crate::run::{self, EXIT_OK};
use crate::stats::series::{series, throughput};
use crate::stop::Flag;
use crate::sys::daemon;

/// Runs the series; its exit status (the first run's that was not 0, else 0).
pub(crate) fn run(
    config: &Config,
    look: &Presentation,
    term: &Terminal,
    interrupt: &Flag,
    failed: impl Fn(anyhow::Error) -> u8,
) -> u8 {
    let mut runs: Vec<Vec<Report>> = Vec::new();
    let mut status = EXIT_OK;
    for i in 1..=config.repeat {
        let kept = Mutex::new(Vec::new());
        let notes = |n: Note| match n {
            Note::Ready => daemon::announce_ready(),
            Note::Reports(rs) | Note::PeerReports(rs) => {
                kept.lock().unwrap_or_else(|p| p.into_inner()).extend(rs);
            }
            n => term.note(n),
        };
        let outcome = run::run(config, interrupt, &notes);
        let mut reports = kept.into_inner().unwrap_or_else(|p| p.into_inner());
        reports.sort_by_key(|r| r.side == crate::report::Side::Receiver);
        if !reports.is_empty() {
            term.series_run(i as usize, config.repeat, &reports, throughput(&reports));
            runs.push(reports);
        }
        status = match outcome {
            Ok(o) => run::exit_status(&o, look.min_throughput, look.max_stall),
            Err(e) => failed(e),
        };
        if status != EXIT_OK {
            break;
        }
    }
    if !runs.is_empty() {
        term.series_end(&runs, &series(config.repeat, &runs));
    }
    status
}
