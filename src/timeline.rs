//! The test timeline both roles run once traffic starts: warm-up, measurement,
//! cool-down, each bounded by a timer and cut short by events (Ctrl+C, the peer ending
//! early, a lost peer). It samples the worker counters and system counters at the edges
//! of the measurement window and returns them: the window is the only thing counted.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::stream::Worker;
use crate::sys::Snapshot;

/// Something that ends or shortens a phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Ctrl+C or SIGTERM.
    Interrupted,
    /// The peer said it ended early ('E').
    PeerEnded,
    /// The peer or a connection was lost.
    Fault(String),
}

/// How the measurement ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum End {
    /// The timer ran out.
    Completed,
    /// The user interrupted the test.
    Interrupted,
    /// The peer ended the test early and said so.
    PeerEnded,
    /// The peer or a connection was lost; the reason.
    Fault(String),
}

impl From<Event> for End {
    fn from(e: Event) -> Self {
        match e {
            Event::Interrupted => Self::Interrupted,
            Event::PeerEnded => Self::PeerEnded,
            Event::Fault(r) => Self::Fault(r),
        }
    }
}

/// Which phase an event arrived in (a lost peer during cool-down is not a fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before counting.
    Warmup,
    /// Counting.
    Measure,
    /// After counting.
    Cooldown,
}

/// Where events come from; `next` must be cancel-safe (it is raced against timers).
pub trait Monitor {
    /// The next event.
    fn next(&mut self, phase: Phase) -> impl Future<Output = Event>;
}

/// Phase lengths for one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Warm-up.
    pub warmup: Duration,
    /// Measurement; None = until an event (continuous mode).
    pub measure: Option<Duration>,
    /// Whole cycle from the start; None = no cool-down wait.
    pub cycle: Option<Duration>,
}

/// What was measured.
#[derive(Debug, Clone)]
pub struct Window {
    /// Length of the measurement window in seconds (0 if it never started).
    pub seconds: f64,
    /// Per-worker (bytes, calls) at the start and end of the window.
    pub start: Vec<(u64, u64)>,
    /// Same, at the end.
    pub end: Vec<(u64, u64)>,
    /// System counters at the start of the window.
    pub sys_start: Snapshot,
    /// System counters at the end of the window.
    pub sys_end: Snapshot,
    /// How the measurement ended.
    pub ended: End,
}

/// How close to its planned end a measurement may lose the peer and still count as
/// completed.
pub const END_GRACE: Duration = Duration::from_millis(500);

/// Samples every worker's counters.
pub fn sample(workers: &[Arc<Worker>]) -> Vec<(u64, u64)> {
    workers.iter().map(|w| w.counters.sample()).collect()
}

/// Runs the phases from `t0` (the moment traffic was released).
pub async fn run<M: Monitor>(
    t0: Instant,
    plan: Plan,
    workers: &[Arc<Worker>],
    mon: &mut M,
) -> Window {
    if let Some(ev) = wait_until(Some(t0 + plan.warmup), mon, Phase::Warmup).await {
        let now = sample(workers);
        let sys = Snapshot::now();
        return Window {
            seconds: 0.0,
            start: now.clone(),
            end: now,
            sys_start: sys,
            sys_end: sys,
            ended: ev.into(),
        };
    }
    let sys_start = Snapshot::now();
    let start = sample(workers);
    let m0 = Instant::now();
    let ev = wait_until(plan.measure.map(|d| m0 + d), mon, Phase::Measure).await;
    let end = sample(workers);
    // The two sides' clocks start one handshake apart, so a peer that finished its own
    // cycle may close while our last moments are still being counted: that is the end
    // of a good test, not a fault.
    let near_end = plan.measure.is_some_and(|d| m0.elapsed() + END_GRACE >= d);
    let ev = match ev {
        Some(Event::Fault(_)) if near_end => None,
        other => other,
    };
    let seconds = m0.elapsed().as_secs_f64();
    let sys_end = Snapshot::now();
    if ev.is_none()
        && let Some(cycle) = plan.cycle
    {
        // Any event ends the cool-down; none of them changes what was measured.
        let _ = wait_until(Some(t0 + cycle), mon, Phase::Cooldown).await;
    }
    Window {
        seconds,
        start,
        end,
        sys_start,
        sys_end,
        ended: ev.map_or(End::Completed, End::from),
    }
}

/// Waits until `deadline` (None = forever); returns the event that came first, if any.
async fn wait_until<M: Monitor>(
    deadline: Option<Instant>,
    mon: &mut M,
    phase: Phase,
) -> Option<Event> {
    match deadline {
        Some(d) => tokio::select! {
            _ = tokio::time::sleep_until(d.into()) => None,
            ev = mon.next(phase) => Some(ev),
        },
        None => Some(mon.next(phase).await),
    }
}
