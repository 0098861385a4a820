//! What a side plans to measure (warm-up, measurement, cool-down within a negotiated
//! cycle) and the progress it reports as it goes: phase changes and interval samples.

use std::time::Duration;

use serde::Serialize;

use crate::config::Phases;
use crate::data::Sample;

/// Phase lengths for one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
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
pub(crate) enum Progress {
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
pub(crate) struct IntervalSample {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IntervalLoss {
    /// Stamped datagrams the sequence numbers say were sent.
    pub expected: u64,
    /// Of those, the ones that have not arrived (late ones arrive in a later interval).
    pub lost: u64,
}

impl IntervalLoss {
    /// The loss between two samples of every worker, if anything stamped was expected.
    pub(crate) fn between(last: &[Sample], now: &[Sample]) -> Option<Self> {
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
}

impl Plan {
    /// The phases of a side whose own settings are `tl`, inside a negotiated cycle of
    /// `cycle` seconds (0 = continuous: measure until an event). Measurement is the own
    /// duration, cut short if the cycle leaves less room after warm-up, and after the own
    /// cool-down too when `reserve_cooldown` (the receiver: the cycle is the sender's
    /// W+t+C, so our cool-down must fit inside it).
    pub(crate) fn within(tl: Phases, cycle: u32, reserve_cooldown: bool) -> Self {
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
