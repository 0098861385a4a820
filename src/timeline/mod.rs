//! The test timeline both roles run once traffic starts: warm-up, measurement,
//! cool-down, each bounded by a timer and cut short by events (Ctrl+C, the peer ending
//! early, a lost peer). It samples the worker counters and system counters at the edges
//! of the measurement window and returns them: the window is the only thing counted.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::data::{Sample, WorkerState};
use crate::sys::cpu::CpuTimes;
use crate::sys::{Snapshot, affinity};

mod directions;
mod edge;
mod plan;
mod rtt;
mod watch;

pub(crate) use directions::Directions;
pub(crate) use edge::{Edge, Start, sample};
#[cfg(test)]
pub(crate) use plan::IntervalLatency;
use plan::Span;
pub(crate) use plan::{IntervalConnect, IntervalLoss, IntervalRr, IntervalSample, Plan, Progress};
use watch::{Motion, StallWatch};
pub(crate) use watch::{Silence, Stall, tick};

/// Something that ends or shortens a phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
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
pub(crate) enum End {
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
pub(crate) enum Phase {
    /// Before counting.
    Warmup,
    /// Counting.
    Measure,
    /// After counting.
    Cooldown,
}

/// Where events come from; `next` must be cancel-safe (it is raced against timers).
pub(crate) trait Monitor {
    /// The next event.
    fn next(&mut self, phase: Phase) -> impl Future<Output = Event>;
}

/// What was measured.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    /// Length of the measurement window in seconds (0 if it never started).
    pub seconds: f64,
    /// The length it was planned to have; None in continuous mode.
    pub planned: Option<f64>,
    /// What each way's workers measured beyond their samples, in the order of `Directions`.
    pub ways: Vec<WayWindow>,
    /// Wall-clock time of its first and last edge.
    pub wall: (SystemTime, SystemTime),
    /// Per-worker counters at the start of the window (every way's, as `Directions::all`).
    pub start: Vec<Sample>,
    /// Same, at the end.
    pub end: Vec<Sample>,
    /// System counters at the start of the window.
    pub sys_start: Snapshot,
    /// System counters at the end of the window.
    pub sys_end: Snapshot,
    /// How the measurement ended.
    pub ended: End,
}

/// One way's part of a window.
#[derive(Debug, Clone)]
pub(crate) struct WayWindow {
    /// Which way its bytes went.
    pub direction: crate::config::Direction,
    /// Where its workers' samples lie in the window's `start` and `end`.
    pub workers: std::ops::Range<usize>,
    /// The longest span of the window in which none of its bytes moved.
    pub stall: Stall,
    /// Round-trip times of its TCP connections, microseconds, sampled every second;
    /// None without samples.
    pub rtt: Option<hdrhistogram::Histogram<u64>>,
}

impl WayWindow {
    /// Each way of `ways` with nothing measured yet.
    fn unmeasured(ways: &Directions) -> Vec<Self> {
        ways.groups()
            .map(|(direction, workers)| Self {
                direction,
                workers,
                stall: Stall::default(),
                rtt: None,
            })
            .collect()
    }
}

impl Window {
    /// The window of each way on its own: its workers' samples, its stall and RTT.
    pub(crate) fn split(&self) -> Vec<Self> {
        self.ways
            .iter()
            .map(|way| Self {
                ways: vec![WayWindow {
                    workers: 0..way.workers.len(),
                    ..way.clone()
                }],
                start: self.start[way.workers.clone()].to_vec(),
                end: self.end[way.workers.clone()].to_vec(),
                ..self.clone()
            })
            .collect()
    }

    /// A window that never started: `ev` ended the warm-up at `now`.
    fn empty(now: Edge, plan: &Plan, ways: &Directions, ev: Event) -> Self {
        Self {
            seconds: 0.0,
            planned: plan.measure.map(|d| d.as_secs_f64()),
            ways: WayWindow::unmeasured(ways),
            wall: (now.wall, now.wall),
            start: now.samples.clone(),
            end: now.samples,
            sys_start: now.sys.clone(),
            sys_end: now.sys,
            ended: ev.into(),
        }
    }
}

/// Waits until `at` on the wall clock, for the window `warmup` before it to open
/// (`--start-at`); false when `interrupt` came first. The last stretch is measured again
/// so that a long wait ends on the instant.
pub(crate) async fn until_wall(
    at: SystemTime,
    warmup: Duration,
    interrupt: &crate::stop::Flag,
) -> bool {
    let open_at = at.checked_sub(warmup).unwrap_or(at);
    loop {
        let Ok(left) = open_at.duration_since(SystemTime::now()) else {
            return true;
        };
        let nap = if left > Duration::from_secs(1) {
            left - Duration::from_millis(500)
        } else {
            left
        };
        tokio::select! {
            _ = tokio::time::sleep(nap) => {
                if nap == left {
                    return true;
                }
            }
            _ = interrupt.wait() => return false,
        }
    }
}

/// How close to its planned end a measurement may lose the peer and still count as
/// completed.
pub(crate) const END_GRACE: Duration = Duration::from_millis(500);

/// Runs the phases from where `clock` starts, telling `progress` about phase changes and,
/// with `plan.interval`, about each interval of the measurement.
pub(crate) async fn run<M: Monitor>(
    clock: Start,
    plan: Plan,
    ways: &Directions,
    release: Option<&crate::stop::Flag>,
    mon: &mut M,
    progress: &dyn Fn(Progress),
) -> Window {
    // `release` lets the workers go (a sender's): before the warm-up, or, without one,
    // right after the start sample, so no byte delivered before it escapes the count.
    // Among busy workers a thread waits its turn to wake, by hundreds of milliseconds with
    // a thousand of them: until the window's last edge, this one has a real-time priority
    // where the system allows it, so that each edge is sampled when it is due. It only
    // sleeps, takes samples and answers its peers meanwhile.
    affinity::prompt_wakeups(true);
    let mut normal_priority = Some(Defer(|| {
        affinity::prompt_wakeups(false);
    }));
    let go = || release.map(crate::stop::Flag::trigger);
    let workers = ways.all();
    let t0 = clock.instant();
    if !plan.warmup.is_zero() {
        go();
    }
    let warmed = t0 + plan.warmup;
    // A receiver's first pass, before any byte flowed, tells how long a pass takes.
    let pass = match &clock {
        Start::Sampled(edge) => edge.pass,
        Start::At(_) => Duration::ZERO,
    };
    if let Some(ev) = wait_flushed(warmed, (workers, pass), mon, Phase::Warmup).await {
        return Window::empty(Edge::take(workers), &plan, ways, ev);
    }
    if !plan.warmup.is_zero() {
        progress(Progress::WarmupDone);
    }
    let opening = match clock {
        Start::Sampled(edge) if plan.warmup.is_zero() => *edge,
        _ => Edge::take(workers),
    };
    // Workers held until after the first sample moved nothing since the clock started
    // (a sender's, when the receiver's answer came): the window opens then, as the
    // receiver's opened just before it answered.
    let held = release.is_some() && plan.warmup.is_zero();
    let m0 = if held { t0 } else { opening.at };
    let opened = opening.wall - opening.at.saturating_duration_since(m0);
    let close = Close::planned(m0, &plan, &opening);
    let (start, sys_start) = (opening.samples, opening.sys);
    edge::latency_window(workers, true);
    if plan.warmup.is_zero() {
        go();
    }
    let (ev, measured) = measure(m0, close, &plan, &start, ways, mon, progress).await;
    // Closed before the last sample, as it opened after the first: every time taken
    // in the window belongs to a transaction or connection the window counts.
    edge::latency_window(workers, false);
    let closing = Edge::take(workers);
    normal_priority.take();
    let (ev, peer_done) = judge_end(ev, &plan, t0, m0);
    let seconds = closing.at.saturating_duration_since(m0).as_secs_f64();
    progress(Progress::RunDone);
    if ev.is_none()
        && !peer_done
        && let Some(cycle) = plan.cycle
    {
        cooldown(t0 + cycle, mon, progress).await;
    }
    Window {
        seconds,
        planned: plan.measure.map(|d| d.as_secs_f64()),
        ways: measured,
        wall: (opened, closing.wall),
        start,
        end: closing.samples,
        sys_start,
        sys_end: closing.sys,
        ended: ev.map_or(End::Completed, End::from),
    }
}

/// What the event that ended the measurement means: (still an event, the peer is done).
/// The two sides' clocks start one handshake apart, so a peer that finished its own cycle
/// may close while our last moments are still being counted: that is the end of a good
/// test, not a fault. "Last moments" by our window (from `m0`), or by the plan from `t0`
/// when this side got to its start late (a starved process). A peer that says it is done
/// ('E') near our planned end has finished its own cycle: the test completed, and there
/// is no cool-down left to wait for.
fn judge_end(ev: Option<Event>, plan: &Plan, t0: Instant, m0: Instant) -> (Option<Event>, bool) {
    let near_end = plan.measure.is_some_and(|d| {
        let now = Instant::now() + END_GRACE;
        now >= m0 + d || now >= t0 + plan.warmup + d
    });
    match ev {
        Some(Event::PeerEnded) if near_end => (None, true),
        Some(Event::Fault(_)) if near_end => (None, false),
        other => (other, false),
    }
}

/// The cool-down, until the cycle ends at `until`: any event ends it, and none of them
/// changes what was measured.
async fn cooldown<M: Monitor>(until: Instant, mon: &mut M, progress: &dyn Fn(Progress)) {
    if until > Instant::now() {
        progress(Progress::CooldownStarted);
    }
    let _ = wait_until(Some(until), mon, Phase::Cooldown).await;
    progress(Progress::CycleDone);
}

/// Runs a closure when dropped.
struct Defer<F: FnMut()>(F);

impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// The measurement phase: waits for its end or an event, looking for stalls every
/// `STALL_STEP` and reporting every interval, each way on its own.
async fn measure<M: Monitor>(
    m0: Instant,
    close: Close,
    plan: &Plan,
    start: &[Sample],
    ways: &Directions,
    mon: &mut M,
    progress: &dyn Fn(Progress),
) -> (Option<Event>, Vec<WayWindow>) {
    let every = plan.interval.filter(|d| !d.is_zero());
    let workers = ways.all();
    let mut watches: Vec<_> = WayWindow::unmeasured(ways)
        .into_iter()
        .map(|w| {
            let mine = &workers[w.workers.clone()];
            let mut motion = Motion::new(mine);
            let stalls = StallWatch::new(m0, motion.look(mine));
            (w, stalls, motion, rtt::RttWatch::new(m0))
        })
        .collect();
    let mut intervals = Intervals {
        every,
        last: start.to_vec(),
        last_cpu: CpuTimes::now(),
        last_t: 0.0,
        report_at: every.map(|e| m0 + e),
        planned_s: plan.measure.map(|d| d.as_secs_f64()),
    };
    let (mut end_at, mut flush_at) = (close.at, close.flush_at);
    loop {
        let step = watch::next_step(Instant::now());
        let deadlines = [end_at, intervals.report_at, flush_at];
        let target = deadlines
            .into_iter()
            .flatten()
            .min()
            .map_or(step, |d| d.min(step));
        // A look for stalls needs no precision: it wakes with the monitor's tick.
        let ev = if deadlines.contains(&Some(target)) {
            wait_until(Some(target), mon, Phase::Measure).await
        } else {
            wait_coarse(target, mon, Phase::Measure).await
        };
        for (w, stalls, motion, rtts) in &mut watches {
            let mine = &workers[w.workers.clone()];
            stalls.look(Instant::now(), motion.look(mine));
            rtts.look(Instant::now(), mine);
        }
        let done = ev.is_some() || end_at.is_some_and(|e| Instant::now() >= e);
        if !done
            && let (Some(f), Some(end)) = (flush_at, end_at)
            && Instant::now() >= f
        {
            end_at = Some(
                end - close.earlier(edge::keep_acks_current(workers, end, close.pass), workers),
            );
            flush_at = None;
        }
        intervals.report(m0, done, ways, progress);
        if done {
            let measured = watches
                .into_iter()
                .map(|(w, stalls, _, rtts)| WayWindow {
                    stall: stalls.longest,
                    rtt: rtts.finish(),
                    ..w
                })
                .collect();
            return (ev, measured);
        }
    }
}

/// The intervals of a measurement (`--interval`): when the next is due and the
/// samples the last one ended with.
struct Intervals {
    every: Option<Duration>,
    last: Vec<Sample>,
    /// The system's CPU time when the last interval ended.
    last_cpu: CpuTimes,
    last_t: f64,
    report_at: Option<Instant>,
    planned_s: Option<f64>,
}

impl Intervals {
    /// Reports the interval that ends now, each way on its own, if one is due; the
    /// last, possibly shorter, interval ends with the measurement (`done`), however it
    /// ends.
    fn report(&mut self, m0: Instant, done: bool, ways: &Directions, progress: &dyn Fn(Progress)) {
        let Some(every) = self.every else { return };
        let due = self.report_at.is_some_and(|r| Instant::now() >= r);
        let t = m0.elapsed().as_secs_f64();
        if !(due || done && t - self.last_t > 0.001) {
            return;
        }
        let workers = ways.all();
        let now = sample(workers);
        let cpu = CpuTimes::now();
        let cpu_busy_percent = cpu.busy_percent_since(&self.last_cpu);
        for (direction, range) in ways.groups() {
            let span = Span {
                start_s: self.last_t,
                end_s: t,
                planned_s: self.planned_s,
                cpu_busy_percent,
            };
            let (mine, last) = (&workers[range.clone()], &self.last[range.clone()]);
            progress(Progress::Interval(span.of(
                direction,
                mine,
                last,
                &now[range],
            )));
        }
        (self.last, self.last_t, self.last_cpu) = (now, t, cpu);
        self.report_at = self.report_at.map(|r| r + every);
    }
}

/// When the measurement ends, and when its connections begin to keep their
/// acknowledgements current ahead of that (see `edge::keep_acks_current`).
struct Close {
    at: Option<Instant>,
    flush_at: Option<Instant>,
    /// How long the first edge's pass over the connections took, how long after it
    /// began the mean instant of its reads lay, and how long after its call.
    pass: Duration,
    reads: Duration,
    lead: Duration,
}

impl Close {
    /// The close of a window opened at `m0` by the edge `opening`: the last edge begins
    /// early by as much as the first took to reach its instant, so that it lies on the
    /// planned end.
    fn planned(m0: Instant, plan: &Plan, opening: &Edge) -> Self {
        let at = plan.measure.map(|d| m0 + d.saturating_sub(opening.lead));
        Self {
            at,
            flush_at: at.and_then(|e| edge::acks_from(e, opening.pass)),
            pass: opening.pass,
            reads: opening.reads,
            lead: opening.lead,
        }
    }

    /// How much earlier than planned the last edge begins, so that the mean instant of
    /// its reads lies on its instant, given how long the last of `keep_acks_current`'s
    /// passes took (None: this side sends no ACKs).
    fn earlier(&self, acks: Option<Duration>, workers: &[Arc<WorkerState>]) -> Duration {
        match acks {
            // The last edge's pass sends what is owed too, and reads the counters: the
            // mean instant of its reads lies about one of these passes after it begins
            // (measured at 10,000 connections).
            Some(pass) => pass.saturating_sub(self.lead),
            // Its mean lies half a pass in, and a pass now takes what a rehearsal takes.
            None => (edge::rehearse(workers) / 2).saturating_sub(self.reads),
        }
    }
}

/// Waits until `deadline`, keeping the acknowledgements of the workers' connections
/// current for `edge::ACK_AHEAD` before it (an edge follows); returns the event that
/// came first, if any.
async fn wait_flushed<M: Monitor>(
    deadline: Instant,
    (workers, pass): (&[Arc<WorkerState>], Duration),
    mon: &mut M,
    phase: Phase,
) -> Option<Event> {
    if let Some(flush) = edge::acks_from(deadline, pass)
        && flush > Instant::now()
    {
        if let Some(ev) = wait_until(Some(flush), mon, phase).await {
            return Some(ev);
        }
        if let Some(pass) = edge::keep_acks_current(workers, deadline, pass) {
            // The edge's own pass sends what is owed too: see `measure`.
            return wait_until(Some(deadline - pass), mon, phase).await;
        }
    }
    wait_until(Some(deadline), mon, phase).await
}

/// Waits until `deadline` (None = forever); returns the event that came first, if any.
async fn wait_until<M: Monitor>(
    deadline: Option<Instant>,
    mon: &mut M,
    phase: Phase,
) -> Option<Event> {
    match deadline {
        Some(d) => {
            let early = d.checked_sub(TIMER_SLACK).unwrap_or(d);
            tokio::select! {
                _ = tokio::time::sleep_until(early.into()) => {
                    // The runtime's timer wakes on a millisecond tick: the last stretch
                    // is slept by the thread itself, so that what follows (an edge's
                    // sample) happens at the deadline.
                    std::thread::sleep(d.saturating_duration_since(Instant::now()));
                    None
                }
                ev = mon.next(phase) => Some(ev),
            }
        }
        None => Some(mon.next(phase).await),
    }
}

/// Waits until `at` on the runtime's timer alone (its millisecond tick); returns the event
/// that came first, if any.
async fn wait_coarse<M: Monitor>(at: Instant, mon: &mut M, phase: Phase) -> Option<Event> {
    tokio::select! {
        _ = tokio::time::sleep_until(at.into()) => None,
        ev = mon.next(phase) => Some(ev),
    }
}

/// How long before a deadline the runtime's timer hands over to a precise sleep: more
/// than the timer's tick.
const TIMER_SLACK: Duration = Duration::from_millis(2);

#[cfg(test)]
mod progress_tests;
#[cfg(test)]
mod tests;
