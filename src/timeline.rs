//! The test timeline both roles run once traffic starts: warm-up, measurement,
//! cool-down, each bounded by a timer and cut short by events (Ctrl+C, the peer ending
//! early, a lost peer). It samples the worker counters and system counters at the edges
//! of the measurement window and returns them: the window is the only thing counted.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::Timeline;
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
            },
            n => Self {
                warmup: secs(tl.warmup),
                measure: Some(secs(
                    tl.duration
                        .min(n.saturating_sub(tl.warmup).saturating_sub(reserved)),
                )),
                cycle: Some(secs(n)),
            },
        }
    }
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
            let w = run(t0, p, &[], &mut s).await;
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
