//! What a side plans to measure (warm-up, measurement, cool-down within a negotiated
//! cycle) and the progress it reports as it goes: phase changes and interval samples.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::config::{Direction, Phases};
use crate::data::{Sample, WorkerState};

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
    /// Which way these bytes went (a `--bidir` side reports both ways each interval).
    pub direction: Direction,
    /// Bytes per worker thread during the interval.
    pub thread_bytes: Vec<u64>,
    /// Length of the measurement, if it has one (for "elapsed / total" displays).
    pub planned_s: Option<f64>,
    /// UDP receiver: stamped datagrams expected and lost during the interval, over all
    /// threads; None when none were expected (TCP, a sender, unstamped datagrams).
    pub udp_loss: Option<IntervalLoss>,
    /// Request/response: the interval's transactions and round trips; else None.
    pub rr: Option<IntervalRr>,
    /// Connection rate: the interval's connections and connect times; else None.
    pub connect: Option<IntervalConnect>,
    /// This host's CPUs busy over the interval, percent (None: the system did not say).
    pub cpu_busy_percent: Option<f64>,
}

/// When one interval lies in the measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    /// Its start, seconds since counting started.
    pub start_s: f64,
    /// Its end.
    pub end_s: f64,
    /// Length of the measurement, if it has one.
    pub planned_s: Option<f64>,
    /// This host's CPUs busy over it, percent.
    pub cpu_busy_percent: Option<f64>,
}

impl Span {
    /// The interval of one way whose `workers` moved from `last` to `now` in it.
    pub(crate) fn of(
        self,
        direction: Direction,
        workers: &[Arc<WorkerState>],
        last: &[Sample],
        now: &[Sample],
    ) -> IntervalSample {
        let thread_bytes: Vec<u64> = now
            .iter()
            .zip(last)
            .map(|(n, l)| n.bytes.saturating_sub(l.bytes))
            .collect();
        let seconds = self.end_s - self.start_s;
        let rr = IntervalRr::take(workers, thread_bytes.iter().sum(), seconds);
        let connect = IntervalConnect::take(workers, last, now, seconds);
        IntervalSample {
            start_s: self.start_s,
            end_s: self.end_s,
            direction,
            thread_bytes,
            planned_s: self.planned_s,
            udp_loss: IntervalLoss::between(last, now),
            rr,
            connect,
            cpu_busy_percent: self.cpu_busy_percent,
        }
    }
}

/// Request/response transactions during one interval, over all threads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IntervalRr {
    /// Whole requests moved (bytes / request size).
    pub transactions: u64,
    /// Transactions per second.
    pub transactions_per_second: f64,
    /// The sender's round trips in the interval, microseconds; null on a receiver or
    /// when none completed.
    pub latency_us: Option<IntervalLatency>,
}

/// A few percentiles of one interval's round trips, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IntervalLatency {
    /// The median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

/// Connections opened (sender) or accepted (receiver) during one interval of a
/// connection-rate test, over all threads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IntervalConnect {
    /// Connections in the interval.
    pub connections: u64,
    /// Connections per second.
    pub connections_per_second: f64,
    /// The sender's connect times in the interval, microseconds; null on a receiver or
    /// when none completed.
    pub latency_us: Option<IntervalLatency>,
}

impl IntervalConnect {
    /// The interval's figures, if the workers run a connection-rate test (their calls
    /// are its connections); the workers' interval histograms are taken.
    fn take(
        workers: &[Arc<WorkerState>],
        last: &[Sample],
        now: &[Sample],
        seconds: f64,
    ) -> Option<Self> {
        if !workers.iter().any(|w| w.is_connect_rate()) {
            return None;
        }
        let connections = now
            .iter()
            .zip(last)
            .map(|(n, l)| n.ops.saturating_sub(l.ops))
            .sum();
        Some(Self {
            connections,
            connections_per_second: rate(connections, seconds),
            latency_us: IntervalLatency::take(workers),
        })
    }
}

/// `n` per second over `seconds` (0 over none).
fn rate(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

impl IntervalLatency {
    /// The workers' times since the last interval (their histograms are taken, and so
    /// restarted); None when none were timed.
    fn take(workers: &[Arc<WorkerState>]) -> Option<Self> {
        let all = crate::data::merged(workers.iter().filter_map(|w| w.interval_round_trips()));
        let us = |ns: u64| ns as f64 / 1000.0;
        all.filter(|h| !h.is_empty()).map(|h| Self {
            p50: us(h.value_at_quantile(0.5)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
        })
    }
}

impl IntervalRr {
    /// The interval's figures, if the workers run a request/response test: `bytes` moved
    /// over `seconds`; the workers' interval histograms are taken (and so restarted).
    pub(crate) fn take(workers: &[Arc<WorkerState>], bytes: u64, seconds: f64) -> Option<Self> {
        let size = workers
            .iter()
            .map(|w| w.rr_size())
            .max()
            .filter(|&s| s > 0)?;
        let transactions = bytes / size;
        Some(Self {
            transactions,
            transactions_per_second: rate(transactions, seconds),
            latency_us: IntervalLatency::take(workers),
        })
    }
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
