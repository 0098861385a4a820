//! What the two roles share: the interrupted outcome, the socket options read back, the
//! closing warning about how a test went, and this host's facts.

use std::fmt;
use std::sync::Arc;

use crate::config::Config;
use crate::data::{self, WorkerState};
use crate::report::{Host, Note, Notes, Report};

/// The user interrupted before anything was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interrupted;

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("interrupted before the test started")
    }
}

impl std::error::Error for Interrupted {}

/// Says so when the handshake settled on another cycle than this side's own `-t`.
pub(crate) fn warn_negotiated(negotiated: u32, duration: u32, notes: Notes<'_>) {
    if negotiated != duration {
        notes(Note::Warn(match negotiated {
            0 => "test is negotiated to run in continuous mode".into(),
            n => format!("Test cycle time negotiated is: {n} seconds"),
        }));
    }
}

/// The first failure any worker recorded.
pub(crate) fn worker_failure(workers: &[Arc<WorkerState>]) -> Option<String> {
    workers.iter().find_map(|w| w.failure())
}

/// A sender's worker failure, with the likeliest cause when the sender runs without sync
/// and the receiver reset a data connection: a receiver that syncs closes every data
/// connection no handshake asked for.
pub(crate) fn sender_failure(workers: &[Arc<WorkerState>], synced: bool) -> Option<String> {
    let f = worker_failure(workers)?;
    if synced || !workers.iter().any(|w| w.reset_by_peer()) {
        return Some(f);
    }
    Some(format!(
        "{f} (a receiver that syncs closes data connections that come without the \
         handshake: if it runs with sync, give it -N (-ns in Windows NTttcp's spelling) \
         too, or start this sender without -ns / -N)"
    ))
}

/// Warns when a side's test ended before its plan or was disturbed (a stall, an overrun);
/// the same lines stand under its tables.
pub(crate) fn warn_how_it_went(report: &Report, notes: Notes<'_>) {
    if let Some(e) = &report.end.early {
        notes(Note::Warn(format!("test ended early: {}", e.line())));
    }
    if let Some(d) = report.disturbance() {
        notes(Note::Warn(format!("test disturbed: {d}")));
    }
}

/// The socket options a worker read back, with a note when the kernel changed a size that
/// was asked for (Linux doubles SO_SNDBUF/SO_RCVBUF and clamps them to its maximum).
pub(crate) fn applied(
    workers: &[Arc<WorkerState>],
    cfg: &Config,
    notes: Notes<'_>,
) -> Option<data::Applied> {
    let got = workers.iter().find_map(|w| w.applied())?;
    for (name, asked, set) in [
        ("SO_SNDBUF", cfg.data.sockopts.send_buffer, got.send_buffer),
        ("SO_RCVBUF", cfg.data.sockopts.recv_buffer, got.recv_buffer),
    ] {
        if let Some(asked) = asked.filter(|a| *a != set) {
            notes(Note::Warn(format!(
                "{name}: asked for {asked} bytes, the kernel set {set}"
            )));
        }
    }
    Some(got)
}

/// The host facts a report carries: name, OS line, CPUs and their clock.
pub(crate) fn this_host() -> Host {
    let (cpu_count, cpu_mhz) = crate::sys::host::cpus();
    Host {
        name: crate::sys::host::hostname(),
        os: crate::sys::host::os_line(),
        cpu_count,
        cpu_mhz,
    }
}
