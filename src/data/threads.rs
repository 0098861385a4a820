//! A role's worker threads: one pinned OS thread per ntttcp worker, started with the
//! one prologue every worker shares, stopped and joined within a bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::WorkerState;
use super::worker::FinishGuard;
use crate::stop::Flag;

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

    /// Starts a worker thread named `name`, pinned to `cpu` (None: where the scheduler
    /// puts it), running `body(its shared state, stop)`. Every worker's prologue is here:
    /// the pinning, and the guard that marks it finished (failed, if it panics) however
    /// its body returns.
    pub(crate) fn add(
        &mut self,
        name: String,
        cpu: Option<usize>,
        body: impl FnOnce(Arc<WorkerState>, Flag) + Send + 'static,
    ) -> anyhow::Result<()> {
        use anyhow::Context;
        let w = Arc::new(WorkerState::default());
        let (me, stop) = (w.clone(), self.stop.clone());
        let handle = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let _finished = FinishGuard(&me);
                me.pin(cpu);
                body(me.clone(), stop);
            })
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
        let finished = |w: &Arc<WorkerState>| w.is_finished();
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
