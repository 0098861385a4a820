//! The test timeline both roles run once traffic starts: warm-up, measurement,
//! cool-down, each bounded by a timer and cut short by events (Ctrl+C, the peer ending
//! early, a lost peer). It samples the worker counters and system counters at the edges
//! of the measurement window and returns them: the window is the only thing counted.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::Timeline;
use crate::data::{Sample, Worker};
use crate::sys::{Snapshot, affinity};

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
    /// Report progress every this long during the measurement.
    pub interval: Option<Duration>,
}

/// What the timeline reports while it runs (the caller decides whether to show it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Progress {
    /// Warm-up is over; counting starts.
    WarmupDone,
    /// One interval of the measurement.
    Interval(IntervalSample),
    /// Counting has stopped.
    RunDone,
    /// Cool-down (uncounted traffic) has begun.
    CooldownStarted,
    /// The whole cycle is over.
    CycleDone,
}

/// Bytes moved during one interval of the measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalSample {
    /// Interval start, seconds since counting started.
    pub start_s: f64,
    /// Interval end, seconds since counting started.
    pub end_s: f64,
    /// Bytes per worker thread during the interval.
    pub thread_bytes: Vec<u64>,
    /// Length of the measurement, if it has one (for "elapsed / total" displays).
    pub planned_s: Option<f64>,
    /// UDP receiver: stamped datagrams expected and lost during the interval, over all
    /// threads; None when none were expected (TCP, a sender, unstamped datagrams).
    pub udp_loss: Option<IntervalLoss>,
}

/// Datagrams expected and lost during one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IntervalLoss {
    /// Stamped datagrams the sequence numbers say were sent.
    pub expected: u64,
    /// Of those, the ones that have not arrived (late ones arrive in a later interval).
    pub lost: u64,
}

impl IntervalLoss {
    /// The loss between two samples of every worker, if anything stamped was expected.
    pub fn between(last: &[Sample], now: &[Sample]) -> Option<Self> {
        let (mut expected, mut received) = (0u64, 0u64);
        for (l, n) in last.iter().zip(now) {
            expected += n.udp.expected.saturating_sub(l.udp.expected);
            received += n.udp.received.saturating_sub(l.udp.received);
        }
        (expected > 0).then(|| Self {
            expected,
            lost: expected.saturating_sub(received),
        })
    }

    /// lost / expected × 100.
    pub fn percent(&self) -> f64 {
        self.lost as f64 * 100.0 / self.expected as f64
    }
}

impl IntervalSample {
    /// Total bits per second over the interval.
    pub fn bits_per_second(&self) -> f64 {
        let secs = self.end_s - self.start_s;
        let bytes: u64 = self.thread_bytes.iter().sum();
        if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        }
    }
}

impl Plan {
    /// The phases of a side whose own settings are `tl`, inside a negotiated cycle of
    /// `cycle` seconds (0 = continuous: measure until an event). Measurement is the own
    /// duration, cut short if the cycle leaves less room after warm-up, and after the own
    /// cool-down too when `reserve_cooldown` (the receiver: the cycle is the sender's
    /// W+t+C, so our cool-down must fit inside it).
    pub fn within(tl: Timeline, cycle: u32, reserve_cooldown: bool) -> Self {
        let secs = |s: u32| Duration::from_secs(s.into());
        let reserved = if reserve_cooldown { tl.cooldown } else { 0 };
        match cycle {
            0 => Self {
                warmup: secs(tl.warmup),
                measure: None,
                cycle: None,
                interval: None,
            },
            n => Self {
                warmup: secs(tl.warmup),
                measure: Some(secs(
                    tl.duration
                        .min(n.saturating_sub(tl.warmup).saturating_sub(reserved)),
                )),
                cycle: Some(secs(n)),
                interval: None,
            },
        }
    }
}

/// What was measured.
#[derive(Debug, Clone)]
pub struct Window {
    /// Length of the measurement window in seconds (0 if it never started).
    pub seconds: f64,
    /// The length it was planned to have; None in continuous mode.
    pub planned: Option<f64>,
    /// The longest span of it in which no byte moved.
    pub stall: Stall,
    /// Per-worker counters at the start of the window.
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

/// How close to its planned end a measurement may lose the peer and still count as
/// completed.
pub const END_GRACE: Duration = Duration::from_millis(500);

/// Watches for a side where no data moves at all: a link gone down or a peer that stopped
/// without closing. `check` is called on the monitor's tick.
#[derive(Debug)]
pub struct Silence {
    last: u64,
    since: Instant,
    limit: Duration,
}

impl Silence {
    /// Starts watching `workers` for `limit` of silence.
    pub fn new(workers: &[Arc<Worker>], limit: Duration) -> Self {
        Self {
            last: total(workers),
            since: Instant::now(),
            limit,
        }
    }

    /// How long nothing has moved, once that reaches the limit.
    pub fn check(&mut self, workers: &[Arc<Worker>]) -> Option<Duration> {
        let now = total(workers);
        if now != self.last {
            self.last = now;
            self.since = Instant::now();
            return None;
        }
        let quiet = self.since.elapsed();
        (quiet >= self.limit).then_some(quiet)
    }
}

fn total(workers: &[Arc<Worker>]) -> u64 {
    workers.iter().map(|w| w.counters.sample().0).sum()
}

/// Samples every worker's counters.
pub fn sample(workers: &[Arc<Worker>]) -> Vec<Sample> {
    workers.iter().map(|w| w.sample()).collect()
}

/// Every worker's counters and the system's at one instant: a window's edge.
#[derive(Debug, Clone)]
pub struct Edge {
    /// When it was sampled.
    pub at: Instant,
    pub samples: Vec<Sample>,
    pub sys: Snapshot,
}

impl Edge {
    /// Samples every worker now. With thousands of connections that takes tens of
    /// milliseconds: the edge is placed in the middle of it.
    pub fn take(workers: &[Arc<Worker>]) -> Self {
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
pub enum Start {
    /// At this instant; the window opens with a sample when the warm-up ends.
    At(Instant),
    /// At this edge, sampled before any byte could flow (a receiver samples before it
    /// tells the senders to go, so a late-scheduled receiver misses none of their first
    /// bytes). With a warm-up, the window opens when it ends, as above.
    Sampled(Box<Edge>),
}

impl Start {
    pub fn instant(&self) -> Instant {
        match self {
            Self::At(t) => *t,
            Self::Sampled(e) => e.at,
        }
    }
}

/// Runs the phases from `t0` (the moment traffic was released), telling `progress` about
/// phase changes and, with `plan.interval`, about each interval of the measurement.
pub async fn run<M: Monitor>(
    clock: Start,
    plan: Plan,
    workers: &[Arc<Worker>],
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
    let t0 = clock.instant();
    if !plan.warmup.is_zero() {
        go();
    }
    if let Some(ev) = wait_until(Some(t0 + plan.warmup), mon, Phase::Warmup).await {
        let now = sample(workers);
        let sys = Snapshot::now();
        return Window {
            seconds: 0.0,
            planned: plan.measure.map(|d| d.as_secs_f64()),
            stall: Stall::default(),
            start: now.clone(),
            end: now,
            sys_start: sys.clone(),
            sys_end: sys,
            ended: ev.into(),
        };
    }
    if !plan.warmup.is_zero() {
        progress(Progress::WarmupDone);
    }
    let opening = match clock {
        Start::Sampled(edge) if plan.warmup.is_zero() => *edge,
        _ => Edge::take(workers),
    };
    let (start, sys_start, m0) = (opening.samples, opening.sys, opening.at);
    if plan.warmup.is_zero() {
        go();
    }
    let end_at = plan.measure.map(|d| m0 + d);
    let (ev, stall) = measure(m0, end_at, &plan, &start, workers, mon, progress).await;
    let closing = Edge::take(workers);
    normal_priority.take();
    // The two sides' clocks start one handshake apart, so a peer that finished its own
    // cycle may close while our last moments are still being counted: that is the end
    // of a good test, not a fault. "Last moments" by our window, or by the plan from t0
    // when this side got to its start late (a starved process).
    let near_end = plan.measure.is_some_and(|d| {
        let now = Instant::now() + END_GRACE;
        now >= m0 + d || now >= t0 + plan.warmup + d
    });
    // A peer that says it is done ('E') near our planned end has finished its own
    // cycle: the test completed, and there is no cool-down left to wait for.
    let (ev, peer_done) = match ev {
        Some(Event::PeerEnded) if near_end => (None, true),
        Some(Event::Fault(_)) if near_end => (None, false),
        other => (other, false),
    };
    let seconds = closing.at.saturating_duration_since(m0).as_secs_f64();
    progress(Progress::RunDone);
    if ev.is_none()
        && !peer_done
        && let Some(cycle) = plan.cycle
    {
        if t0 + cycle > Instant::now() {
            progress(Progress::CooldownStarted);
        }
        // Any event ends the cool-down; none of them changes what was measured.
        let _ = wait_until(Some(t0 + cycle), mon, Phase::Cooldown).await;
        progress(Progress::CycleDone);
    }
    Window {
        seconds,
        planned: plan.measure.map(|d| d.as_secs_f64()),
        stall,
        start,
        end: closing.samples,
        sys_start,
        sys_end: closing.sys,
        ended: ev.map_or(End::Completed, End::from),
    }
}

/// Runs a closure when dropped.
struct Defer<F: FnMut()>(F);

impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// How often the measurement looks for bytes moving (the resolution of stalls).
pub const STALL_STEP: Duration = Duration::from_millis(100);

/// The longest span of the measurement in which no byte moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stall {
    /// Its length, seconds (0 when bytes moved at every look).
    pub seconds: f64,
    /// When it began, seconds into the measurement.
    pub from_s: f64,
}

/// Follows the workers' byte total and keeps the longest span in which it did not move.
struct StallWatch {
    m0: Instant,
    last_total: u64,
    /// When the total last moved (or the measurement began).
    moved_at: Instant,
    longest: Stall,
}

impl StallWatch {
    fn new(m0: Instant, total: u64) -> Self {
        Self {
            m0,
            last_total: total,
            moved_at: m0,
            longest: Stall::default(),
        }
    }

    /// Looks at the total at `now`; a stopped process's own pause shows as a span too.
    fn look(&mut self, now: Instant, total: u64) {
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

/// The measurement phase: waits for its end or an event, looking for stalls every
/// `STALL_STEP` and reporting every interval.
async fn measure<M: Monitor>(
    m0: Instant,
    end_at: Option<Instant>,
    plan: &Plan,
    start: &[Sample],
    workers: &[Arc<Worker>],
    mon: &mut M,
    progress: &dyn Fn(Progress),
) -> (Option<Event>, Stall) {
    let every = plan.interval.filter(|d| !d.is_zero());
    let mut stalls = StallWatch::new(m0, total(workers));
    let mut last = start.to_vec();
    let mut last_t = 0.0;
    let mut report_at = every.map(|e| m0 + e);
    loop {
        let step = Instant::now() + STALL_STEP;
        let target = [Some(step), end_at, report_at]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(step);
        let ev = wait_until(Some(target), mon, Phase::Measure).await;
        stalls.look(Instant::now(), total(workers));
        let done = ev.is_some() || end_at.is_some_and(|e| Instant::now() >= e);
        let due = report_at.is_some_and(|r| Instant::now() >= r);
        let t = m0.elapsed().as_secs_f64();
        // The last, possibly shorter, interval ends with the measurement, however it ends.
        if let Some(every) = every
            && (due || done && t - last_t > 0.001)
        {
            let now = sample(workers);
            progress(Progress::Interval(IntervalSample {
                start_s: last_t,
                end_s: t,
                thread_bytes: now
                    .iter()
                    .zip(&last)
                    .map(|(n, l)| n.bytes - l.bytes)
                    .collect(),
                planned_s: plan.measure.map(|d| d.as_secs_f64()),
                udp_loss: IntervalLoss::between(&last, &now),
            }));
            (last, last_t) = (now, t);
            report_at = report_at.map(|r| r + every);
        }
        if done {
            return (ev, stalls.longest);
        }
    }
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

/// How long before a deadline the runtime's timer hands over to a precise sleep: more
/// than the timer's tick.
const TIMER_SLACK: Duration = Duration::from_millis(2);

#[cfg(test)]
mod tests {
    use super::*;

    /// Delivers scripted events at fixed offsets from its creation.
    struct Script {
        t0: Instant,
        events: Vec<(u64, Event)>,
    }

    impl Monitor for Script {
        async fn next(&mut self, _phase: Phase) -> Event {
            match self.events.first().cloned() {
                Some((ms, ev)) => {
                    tokio::time::sleep_until((self.t0 + Duration::from_millis(ms)).into()).await;
                    // Only reached when not cancelled: the event is consumed exactly once.
                    self.events.remove(0);
                    ev
                }
                None => std::future::pending().await,
            }
        }
    }

    fn plan(warmup: u64, measure: Option<u64>, cycle: Option<u64>) -> Plan {
        Plan {
            warmup: Duration::from_millis(warmup),
            measure: measure.map(Duration::from_millis),
            cycle: cycle.map(Duration::from_millis),
            interval: None,
        }
    }

    fn run_script(p: Plan, events: Vec<(u64, Event)>) -> (Window, Duration) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t0 = Instant::now();
            let mut s = Script { t0, events };
            let w = run(Start::At(t0), p, &[], None, &mut s, &|_| {}).await;
            (w, t0.elapsed())
        })
    }

    #[test]
    fn plans_within_a_negotiated_cycle() {
        let tl = Timeline {
            warmup: 1,
            duration: 10,
            cooldown: 2,
        };
        let s = Duration::from_secs;
        let p = Plan::within(tl, 13, false);
        assert_eq!(
            (p.warmup, p.measure, p.cycle),
            (s(1), Some(s(10)), Some(s(13)))
        );
        assert_eq!(Plan::within(tl, 60, true).measure, Some(s(10)));
        // A stock multi-client receiver may impose a shorter cycle.
        assert_eq!(Plan::within(tl, 8, false).measure, Some(s(7)));
        assert_eq!(Plan::within(tl, 8, true).measure, Some(s(5)));
        let c = Plan::within(tl, 0, true);
        assert_eq!((c.measure, c.cycle), (None, None));
    }

    #[test]
    fn phases_run_to_their_timers() {
        let (w, took) = run_script(plan(50, Some(200), Some(400)), vec![]);
        assert_eq!(w.ended, End::Completed);
        assert!((0.19..0.35).contains(&w.seconds), "{}", w.seconds);
        assert!(
            took >= Duration::from_millis(400),
            "cool-down waited: {took:?}"
        );
    }

    #[test]
    fn a_late_starter_whose_peer_ends_on_plan_completes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let w = rt.block_on(async {
            // The clock started 1 s ago (a starved process got here late); the peer
            // closes when the planned 2 s are over, 1 s into our own window.
            let now = Instant::now();
            let mut s = Script {
                t0: now,
                events: vec![(1000, Event::Fault("closed".into()))],
            };
            let t0 = now - Duration::from_secs(1);
            run(
                Start::At(t0),
                plan(0, Some(2000), None),
                &[],
                None,
                &mut s,
                &|_| {},
            )
            .await
        });
        assert_eq!(w.ended, End::Completed);
        assert!((0.9..1.5).contains(&w.seconds), "{}", w.seconds);
    }

    #[test]
    fn interrupt_in_warmup_measures_nothing() {
        let (w, took) = run_script(plan(2000, Some(1000), None), vec![(30, Event::Interrupted)]);
        assert_eq!((w.ended, w.seconds), (End::Interrupted, 0.0));
        assert!(took < Duration::from_millis(1000));
    }

    #[test]
    fn fault_mid_measurement_keeps_the_time_measured() {
        let (w, _) = run_script(
            plan(0, Some(5000), Some(6000)),
            vec![(300, Event::Fault("gone".into()))],
        );
        assert_eq!(w.ended, End::Fault("gone".into()));
        assert!((0.25..1.0).contains(&w.seconds), "{}", w.seconds);
    }

    #[test]
    fn peer_closing_in_the_last_moments_is_a_normal_end() {
        let (w, _) = run_script(
            plan(0, Some(700), None),
            vec![(400, Event::Fault("closed".into()))],
        );
        assert_eq!(w.ended, End::Completed);
    }

    #[test]
    fn any_event_ends_the_cooldown_without_changing_the_result() {
        let (w, took) = run_script(
            plan(0, Some(100), Some(5000)),
            vec![(300, Event::Fault("closed".into()))],
        );
        assert_eq!(w.ended, End::Completed);
        assert!(took < Duration::from_secs(2), "{took:?}");
    }

    #[test]
    fn continuous_mode_runs_until_an_event() {
        let (w, _) = run_script(plan(0, None, None), vec![(250, Event::Interrupted)]);
        assert_eq!(w.ended, End::Interrupted);
        assert!((0.2..1.0).contains(&w.seconds), "{}", w.seconds);
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;
    use std::sync::Mutex;

    struct Quiet;

    impl Monitor for Quiet {
        async fn next(&mut self, _phase: Phase) -> Event {
            std::future::pending().await
        }
    }

    #[test]
    fn intervals_and_phase_changes_are_reported_in_order() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let seen = Mutex::new(Vec::new());
        let record = |p: Progress| seen.lock().unwrap().push(p);
        let plan = Plan {
            warmup: Duration::from_millis(50),
            measure: Some(Duration::from_millis(350)),
            cycle: Some(Duration::from_millis(500)),
            interval: Some(Duration::from_millis(100)),
        };
        let workers = vec![Arc::new(Worker::default())];
        rt.block_on(run(
            Start::At(Instant::now()),
            plan,
            &workers,
            None,
            &mut Quiet,
            &record,
        ));
        let seen = seen.into_inner().unwrap();
        let names: Vec<&str> = seen
            .iter()
            .map(|p| match p {
                Progress::WarmupDone => "warmup",
                Progress::Interval(_) => "interval",
                Progress::RunDone => "run",
                Progress::CooldownStarted => "cooldown",
                Progress::CycleDone => "cycle",
            })
            .collect();
        // 350 ms in 100 ms intervals: three whole ones and the last 50 ms.
        assert_eq!(
            names,
            [
                "warmup", "interval", "interval", "interval", "interval", "run", "cooldown",
                "cycle"
            ]
        );
        let Progress::Interval(last) = &seen[4] else {
            unreachable!()
        };
        assert!(
            (0.02..0.09).contains(&(last.end_s - last.start_s)),
            "{last:?}"
        );
        let Progress::Interval(first) = &seen[1] else {
            unreachable!()
        };
        assert!(
            (0.09..0.2).contains(&first.end_s) && first.start_s == 0.0,
            "{first:?}"
        );
        assert_eq!(first.thread_bytes, vec![0]);
        assert_eq!(first.planned_s, Some(0.35));
        assert_eq!(first.udp_loss, None, "nothing stamped was expected");
    }

    #[test]
    fn the_longest_span_without_bytes_is_kept() {
        let m0 = Instant::now();
        let at = |ms: u64| m0 + Duration::from_millis(ms);
        let mut w = StallWatch::new(m0, 0);
        w.look(at(100), 10);
        w.look(at(200), 20);
        // Dead from 200 ms (the last move) to 2300 ms, then moving again.
        for ms in (300..=2300).step_by(100) {
            w.look(at(ms), 20);
        }
        w.look(at(2400), 30);
        assert_eq!(w.longest.from_s, 0.2);
        assert!((w.longest.seconds - 2.1).abs() < 1e-9, "{:?}", w.longest);
        // A shorter stall later does not replace it; one running to the end counts.
        w.look(at(3000), 30);
        assert!((w.longest.seconds - 2.1).abs() < 1e-9);
        w.look(at(5000), 30);
        assert_eq!((w.longest.from_s, w.longest.seconds), (2.4, 2.6));
    }

    #[test]
    fn interval_loss_from_two_samples() {
        let at = |expected, received| Sample {
            udp: crate::data::udp::Tally {
                expected,
                received,
                ..Default::default()
            },
            ..Default::default()
        };
        let l =
            IntervalLoss::between(&[at(100, 90), at(0, 0)], &[at(300, 280), at(50, 50)]).unwrap();
        assert_eq!((l.expected, l.lost), (250, 10));
        assert!((l.percent() - 4.0).abs() < 1e-9);
        assert_eq!(IntervalLoss::between(&[at(5, 5)], &[at(5, 5)]), None);
    }
}
