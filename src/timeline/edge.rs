//! A window's edges: every worker's counters and the system's, sampled at one instant,
//! and where a side's clock starts.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use crate::data::{Sample, WorkerState};
use crate::sys::Snapshot;

/// Samples every worker's counters.
pub(crate) fn sample(workers: &[Arc<WorkerState>]) -> Vec<Sample> {
    workers.iter().map(|w| w.sample()).collect()
}

/// Opens or closes every worker's latency window with the measurement window's edges.
pub(crate) fn latency_window(workers: &[Arc<WorkerState>], open: bool) {
    for w in workers {
        w.latency_window(open);
    }
}

/// Every worker's counters and the system's at one instant: a window's edge.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    /// When it was sampled.
    pub at: Instant,
    /// The same instant on the wall clock (comparable with a peer's on a synchronized
    /// clock).
    pub wall: SystemTime,
    /// How long after the call `at` lies: a later edge over the same sockets that is
    /// taken this much before its deadline lies on it.
    pub lead: Duration,
    pub samples: Vec<Sample>,
    pub sys: Snapshot,
}

impl Edge {
    /// Samples every worker now. With thousands of connections that takes tens of
    /// milliseconds, and longer where a socket is busy (reading its counters waits for a
    /// send or receive call in progress to let go of it) or this thread is held back: the
    /// edge is placed at the mean instant at which a connection was read, so that a
    /// sampling that stalled early counts as late as the bytes it read.
    pub(crate) fn take(workers: &[Arc<WorkerState>]) -> Self {
        let called = Instant::now();
        let sys = Snapshot::now();
        let (began, wall) = (Instant::now(), SystemTime::now());
        let mut placed = Placement::default();
        let samples = workers
            .iter()
            .map(|w| {
                let before = began.elapsed();
                let sample = w.sample();
                let mid = (before + began.elapsed()) / 2;
                placed.add(mid, w.open.load(Ordering::Relaxed).max(1));
                sample
            })
            .collect();
        let offset = placed.mean();
        Self {
            at: began + offset,
            wall: wall + offset,
            lead: (began + offset).saturating_duration_since(called),
            samples,
            sys,
        }
    }
}

/// The mean of instants, each weighted by the connections read at it.
#[derive(Default)]
struct Placement {
    seconds: f64,
    weight: f64,
}

impl Placement {
    fn add(&mut self, at: Duration, connections: usize) {
        self.seconds += at.as_secs_f64() * connections as f64;
        self.weight += connections as f64;
    }

    /// The mean offset (zero when nothing was read).
    fn mean(&self) -> Duration {
        if self.weight > 0.0 {
            Duration::from_secs_f64(self.seconds / self.weight)
        } else {
            Duration::ZERO
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
