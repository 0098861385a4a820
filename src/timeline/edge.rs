//! A window's edges: every worker's counters and the system's, sampled at one instant,
//! and where a side's clock starts.

use std::sync::Arc;
use std::time::Instant;

use crate::data::{Sample, WorkerState};
use crate::sys::Snapshot;

/// Samples every worker's counters.
pub(crate) fn sample(workers: &[Arc<WorkerState>]) -> Vec<Sample> {
    workers.iter().map(|w| w.sample()).collect()
}

/// Every worker's counters and the system's at one instant: a window's edge.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    /// When it was sampled.
    pub at: Instant,
    pub samples: Vec<Sample>,
    pub sys: Snapshot,
}

impl Edge {
    /// Samples every worker now. With thousands of connections that takes tens of
    /// milliseconds: the edge is placed in the middle of it.
    pub(crate) fn take(workers: &[Arc<WorkerState>]) -> Self {
        let sys = Snapshot::now();
        let began = Instant::now();
        let samples = sample(workers);
        Self {
            at: began + began.elapsed() / 2,
            samples,
            sys,
        }
    }
}

/// Where a side's clock starts.
#[derive(Debug, Clone)]
pub(crate) enum Start {
    /// At this instant; the window opens with a sample when the warm-up ends.
    At(Instant),
    /// At this edge, sampled before any byte could flow (a receiver samples before it
    /// tells the senders to go, so a late-scheduled receiver misses none of their first
    /// bytes). With a warm-up, the window opens when it ends, as above.
    Sampled(Box<Edge>),
}

impl Start {
    pub(crate) fn instant(&self) -> Instant {
        match self {
            Self::At(t) => *t,
            Self::Sampled(e) => e.at,
        }
    }
}
