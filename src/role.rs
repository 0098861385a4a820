//! What the two roles share: the interrupted outcome, stopping and joining workers, the
//! socket options read back, and the closing warning about how a test went.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::data::{self, WorkerState};
use crate::report::{Host, Note, Notes, Report};
use crate::stop::Flag;

/// The user interrupted before anything was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interrupted;

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("interrupted before the test started")
    }
}

impl std::error::Error for Interrupted {}

/// A role's pinned worker threads and what the control plane shares with them. Dropping
/// it stops them (on every way out of a role's `run`); `join` waits for them, bounded.
pub(crate) struct WorkerThreads {
    pub(crate) workers: Vec<Arc<WorkerState>>,
    handles: Vec<std::thread::JoinHandle<()>>,
    /// Stops every worker.
    pub(crate) stop: Flag,
}

impl WorkerThreads {
    pub(crate) fn new() -> Self {
        Self {
            workers: Vec::new(),
            handles: Vec::new(),
            stop: Flag::new(),
        }
    }

    /// Starts a worker thread named `name` running `body(its shared state, stop)`.
    pub(crate) fn add(
        &mut self,
        name: String,
        body: impl FnOnce(Arc<WorkerState>, Flag) + Send + 'static,
    ) -> anyhow::Result<()> {
        use anyhow::Context;
        let w = Arc::new(WorkerState::default());
        let (me, stop) = (w.clone(), self.stop.clone());
        let handle = std::thread::Builder::new()
            .name(name)
            .spawn(move || body(me, stop))
            .context("create a worker thread")?;
        self.workers.push(w);
        self.handles.push(handle);
        Ok(())
    }

    /// Stops the workers and waits (without blocking the control runtime) until every
    /// one has returned or `within` has passed; workers still blocked are left to end
    /// with the process.
    pub(crate) async fn join(mut self, within: Duration) -> Vec<Arc<WorkerState>> {
        self.stop.trigger();
        let deadline = Instant::now() + within;
        let finished = |w: &Arc<WorkerState>| w.finished.load(std::sync::atomic::Ordering::Acquire);
        while Instant::now() < deadline && !self.workers.iter().all(finished) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for (h, w) in std::mem::take(&mut self.handles)
            .into_iter()
            .zip(&self.workers)
        {
            if finished(w) {
                let _ = h.join();
            }
        }
        std::mem::take(&mut self.workers)
    }
}

impl Drop for WorkerThreads {
    fn drop(&mut self) {
        self.stop.trigger();
    }
}

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
    let got = workers
        .iter()
        .find_map(|w| *w.applied.lock().unwrap_or_else(|p| p.into_inner()))?;
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
