//! A window's edges: every worker's counters and the system's, sampled at one instant,
//! and where a side's clock starts.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::data::{Sample, WorkerState};
use crate::sys::Snapshot;

/// Samples every worker's counters.
pub(crate) fn sample(workers: &[Arc<WorkerState>]) -> Vec<Sample> {
    workers.iter().map(|w| w.sample(false)).collect()
}

/// Until `until` (an edge), has every worker's receiving connections send the
/// acknowledgements they owe, pass after pass, and the edge asks each connection once
/// more just before it reads its counters; so that the peers' delivered counts at
/// their own edges stand where what arrived here does. Linux holds back the ACK of bulk
/// data that arrives while its reader is elsewhere, until the reader takes it or its
/// delayed-ACK timer fires: with more threads than cores the readers are often
/// elsewhere, and a peer's count trailed ours by 0.2-0.8 % (64 and 10,000 connections on
/// 2 cores, measured). Each ACK lets the peer send more, which arrives owed again within
/// the same pass: only passes up to the edge, and the edge's own, keep what is owed
/// small. No pass begins that would run past `until` if it took as long as the one
/// before (or, for the first, `first`): a pass takes microseconds to tens of
/// milliseconds (sending an ACK on loopback runs the peer's transmission inline).
/// Ends at once on a side that reads no TCP connection. Returns how long the last pass
/// took, if one ran: an edge's own pass, which also sends what is owed, takes about as
/// long.
pub(crate) fn keep_acks_current(
    workers: &[Arc<WorkerState>],
    until: Instant,
    first: Duration,
) -> Option<Duration> {
    let mut last = None;
    loop {
        let began = Instant::now();
        if began + last.unwrap_or(first) >= until {
            return last;
        }
        let asked: usize = workers.iter().map(|w| w.flush_acks()).sum();
        if asked == 0 {
            return last;
        }
        last = Some(began.elapsed());
        std::thread::sleep(ACK_PAUSE.min(until.saturating_duration_since(Instant::now())));
    }
}

/// Reads every worker's counters once, for nothing but the time it takes: on a side
/// that sends no ACKs, how long its last edge's pass will take now that the workers are
/// busy (thousands of sockets busy with their sends take longer to read than the same
/// sockets idle at the first edge).
pub(crate) fn rehearse(workers: &[Arc<WorkerState>]) -> Duration {
    let began = Instant::now();
    drop(sample(workers));
    began.elapsed()
}

/// When `keep_acks_current` begins before an edge whose first edge's pass took `pass`:
/// at least `ACK_AHEAD` before it, and four such passes before it (a pass that sends
/// ACKs took up to about twice as long as one that only reads, so room for two).
pub(crate) fn acks_from(edge: Instant, pass: Duration) -> Option<Instant> {
    edge.checked_sub(ACK_AHEAD.max(4 * pass))
}

/// How long before an edge `keep_acks_current` begins.
pub(crate) const ACK_AHEAD: Duration = Duration::from_millis(20);

/// The pause between two passes of `keep_acks_current`, which lets the other threads of
/// a busy host run.
const ACK_PAUSE: Duration = Duration::from_micros(100);

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
    /// How long after the call the mean instant of its reads lies: a later edge over
    /// the same sockets that is taken this much before its deadline lies on it.
    pub lead: Duration,
    /// How long reading every connection took, and how long after the pass began the
    /// mean instant of its reads lay.
    pub pass: Duration,
    pub reads: Duration,
    pub samples: Vec<Sample>,
    pub sys: Snapshot,
}

impl Edge {
    /// Samples every worker now. With thousands of connections that takes tens of
    /// milliseconds, and longer where a socket is busy (reading its counters waits for a
    /// send or receive call in progress to let go of it) or this thread is held back: the
    /// edge is placed at the mean instant at which a connection was read, so that a
    /// sampling that stalled early counts as late as the bytes it read. Each connection
    /// this side reads first sends the ACK it owes (see `keep_acks_current`).
    pub(crate) fn take(workers: &[Arc<WorkerState>]) -> Self {
        let edge = Self::sampled(workers, true);
        Self {
            at: edge.at + edge.reads,
            wall: edge.wall + edge.reads,
            ..edge
        }
    }

    /// Samples every worker before any byte can flow (a receiver's first edge, before it
    /// tells its senders to go): nothing moves during the pass, so the edge lies at its
    /// end, as close as this side can be to the instant its senders start.
    pub(crate) fn before_traffic(workers: &[Arc<WorkerState>]) -> Self {
        let edge = Self::sampled(workers, false);
        Self {
            at: edge.at + edge.pass,
            wall: edge.wall + edge.pass,
            ..edge
        }
    }

    /// Samples every worker (`edge`: see `WorkerState::sample`); `at` and `wall` are
    /// when the pass began (`reads` after it, the mean instant of its reads).
    fn sampled(workers: &[Arc<WorkerState>], edge: bool) -> Self {
        let called = Instant::now();
        let sys = Snapshot::now();
        let (began, wall) = (Instant::now(), SystemTime::now());
        let mut placed = Placement::default();
        let samples = workers
            .iter()
            .map(|w| {
                let before = began.elapsed();
                let sample = w.sample(edge);
                let mid = (before + began.elapsed()) / 2;
                placed.add(mid, w.open().max(1));
                sample
            })
            .collect();
        let (pass, mean) = (began.elapsed(), placed.mean());
        Self {
            at: began,
            wall,
            lead: (began + mean).saturating_duration_since(called),
            pass,
            reads: mean,
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
