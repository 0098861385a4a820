//! Watching the bytes move: the longest span with none (a stall, reported) and a side
//! where none move for longer than --timeout (a fault).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::data::WorkerState;

/// Watches for a side where no data moves at all: a link gone down or a peer that stopped
/// without closing. `check` is called on the monitor's tick.
#[derive(Debug)]
pub(crate) struct Silence {
    motion: Motion,
    last: u64,
    since: Instant,
    limit: Duration,
}

impl Silence {
    /// Starts watching `workers` for `limit` of silence.
    pub(crate) fn new(workers: &[Arc<WorkerState>], limit: Duration) -> Self {
        let mut motion = Motion::new(workers);
        Self {
            last: motion.look(workers),
            motion,
            since: Instant::now(),
            limit,
        }
    }

    /// How long nothing has moved, once that reaches the limit.
    pub(crate) fn check(&mut self, workers: &[Arc<WorkerState>]) -> Option<Duration> {
        let now = self.motion.look(workers);
        if now != self.last {
            self.last = now;
            self.since = Instant::now();
            return None;
        }
        let quiet = self.since.elapsed();
        (quiet >= self.limit).then_some(quiet)
    }
}

/// Counts the looks at which the workers had moved something: bytes or completed calls
/// (a connection-rate test's calls move no bytes), or, where those stood still, more
/// bytes held unread, so that a stream whose reader waits for its SO_RCVLOWAT (a slow
/// one) is not silent while bytes come in. The queues are read only when the counters
/// stood still: that costs one call per connection, 10,000 in the largest tests.
#[derive(Debug)]
pub(super) struct Motion {
    counted: u64,
    /// Bytes held unread at the last still look (None: the counters moved since).
    held: Option<u64>,
    moves: u64,
}

impl Motion {
    pub(super) fn new(workers: &[Arc<WorkerState>]) -> Self {
        Self {
            counted: total(workers),
            held: None,
            moves: 0,
        }
    }

    /// The number of looks so far that saw movement: it changes exactly when this one did.
    pub(super) fn look(&mut self, workers: &[Arc<WorkerState>]) -> u64 {
        let counted = total(workers);
        if counted != self.counted {
            (self.counted, self.held) = (counted, None);
            self.moves += 1;
            return self.moves;
        }
        let held: u64 = workers.iter().map(|w| w.unread(false)).sum();
        if self.held.is_some_and(|h| held > h) {
            self.moves += 1;
        }
        self.held = Some(held);
        self.moves
    }
}

/// What the workers have counted: bytes and completed calls.
fn total(workers: &[Arc<WorkerState>]) -> u64 {
    workers
        .iter()
        .map(|w| {
            let (bytes, calls) = w.counted();
            bytes.wrapping_add(calls)
        })
        .fold(0, u64::wrapping_add)
}

/// How often the measurement looks for bytes moving (the resolution of stalls), and how
/// often a side's monitor looks at its workers and peers.
pub(crate) const STALL_STEP: Duration = Duration::from_millis(100);

/// The next instant after `now` on the process's grid of `STALL_STEP`s. The stall watch
/// and the monitors' ticks (`tick`) fall on the same grid, so that one wake-up serves
/// both: a request/response test's round trips are tens of microseconds, and every
/// wake-up of this process's other threads lands on a CPU one of them may be waiting for.
pub(crate) fn next_step(now: Instant) -> Instant {
    let anchor = *GRID.get_or_init(Instant::now);
    let step = STALL_STEP.as_nanos();
    let steps = now.saturating_duration_since(anchor).as_nanos() / step + 1;
    anchor + Duration::from_nanos((steps * step) as u64)
}

/// A monitor's tick: every `STALL_STEP`, on the grid of `next_step`.
pub(crate) fn tick() -> tokio::time::Interval {
    tokio::time::interval_at(next_step(Instant::now()).into(), STALL_STEP)
}

/// Where the grid of `next_step` begins (the first use).
static GRID: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// The longest span of the measurement in which no byte moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct Stall {
    /// Its length, seconds (0 when bytes moved at every look).
    pub seconds: f64,
    /// When it began, seconds into the measurement.
    pub from_s: f64,
}

/// Follows the workers' byte total and keeps the longest span in which it did not move.
pub(super) struct StallWatch {
    m0: Instant,
    last_total: u64,
    /// When the total last moved (or the measurement began).
    moved_at: Instant,
    pub(super) longest: Stall,
}

impl StallWatch {
    pub(super) fn new(m0: Instant, total: u64) -> Self {
        Self {
            m0,
            last_total: total,
            moved_at: m0,
            longest: Stall::default(),
        }
    }

    /// Looks at the total at `now`; a stopped process's own pause shows as a span too.
    pub(super) fn look(&mut self, now: Instant, total: u64) {
        let quiet = now.saturating_duration_since(self.moved_at).as_secs_f64();
        if quiet > self.longest.seconds && total == self.last_total {
            self.longest = Stall {
                seconds: quiet,
                from_s: self
                    .moved_at
                    .saturating_duration_since(self.m0)
                    .as_secs_f64(),
            };
        }
        if total != self.last_total {
            self.last_total = total;
            self.moved_at = now;
        }
    }
}
