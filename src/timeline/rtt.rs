//! The round-trip times of a bulk test's connections, from TCP_INFO, sampled every
//! `RTT_STEP` of the measurement: a sender reads its smoothed RTT (`tcpi_rtt`), a receiver
//! its own estimate (`tcpi_rcv_rtt`, from TCP timestamps).

use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::data::WorkerState;

/// How often every connection's round-trip time is read: often enough for a short test
/// to have samples, seldom enough that 10,000 connections cost a few milliseconds a
/// second of the control thread.
pub(super) const RTT_STEP: Duration = Duration::from_secs(1);

/// Collects the samples over the measurement.
pub(super) struct RttWatch {
    next: Instant,
    hist: Option<Histogram<u64>>,
}

impl RttWatch {
    /// The first look is half a step into the measurement that begins at `m0`.
    pub(super) fn new(m0: Instant) -> Self {
        Self {
            next: m0 + RTT_STEP / 2,
            hist: None,
        }
    }

    /// Samples every connection when a step is due at `now`.
    pub(super) fn look(&mut self, now: Instant, workers: &[Arc<WorkerState>]) {
        if now < self.next {
            return;
        }
        while self.next <= now {
            self.next += RTT_STEP;
        }
        for w in workers {
            w.round_trip_times(|us| crate::data::record(&mut self.hist, u64::from(us)));
        }
    }

    /// What was sampled; None when nothing was (UDP, no connection, a short window).
    pub(super) fn finish(self) -> Option<Histogram<u64>> {
        self.hist.filter(|h| !h.is_empty())
    }
}
