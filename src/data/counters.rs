//! What a worker counts: bytes and calls (written only by its own thread, so plain
//! load+store, no locked instruction) and the round trips it times, in histograms that
//! merge.

use std::sync::atomic::{AtomicU64, Ordering};

/// Byte and call counters of one worker; single writer, any number of readers.
#[derive(Debug, Default)]
#[repr(align(128))] // own cache line pair: workers on different cores never share one
pub(crate) struct Counters {
    bytes: AtomicU64,
    ops: AtomicU64,
    /// The bytes of the completed calls: a TCP sender's buffer counts here (and in
    /// `ops`) once all of it is written, however many calls that took, as in NTttcp.
    whole: AtomicU64,
}

impl Counters {
    /// Adds one completed call of `n` bytes. Only the owning thread calls this.
    #[inline]
    pub(crate) fn add(&self, n: usize) {
        self.add_many(n, 1);
    }

    /// Adds `n` bytes moved by `calls` completed calls (UDP: datagrams). Only the owning
    /// thread calls this.
    #[inline]
    pub(crate) fn add_many(&self, n: usize, calls: u64) {
        Self::bump(&self.bytes, n as u64);
        Self::bump(&self.ops, calls);
        Self::bump(&self.whole, n as u64);
    }

    /// Adds `n` bytes written towards a buffer, and with `finished` (its length) the
    /// completion of that buffer. Only the owning thread calls this.
    #[inline]
    pub(crate) fn add_toward(&self, n: usize, finished: Option<usize>) {
        Self::bump(&self.bytes, n as u64);
        if let Some(len) = finished {
            Self::bump(&self.ops, 1);
            Self::bump(&self.whole, len as u64);
        }
    }

    #[inline]
    fn bump(c: &AtomicU64, n: u64) {
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// The bytes of the completed calls so far.
    pub(crate) fn whole(&self) -> u64 {
        self.whole.load(Ordering::Relaxed)
    }

    /// Current (bytes, calls).
    pub(crate) fn sample(&self) -> (u64, u64) {
        (
            self.bytes.load(Ordering::Relaxed),
            self.ops.load(Ordering::Relaxed),
        )
    }
}

/// The round trips a request/response worker timed, in nanoseconds, from when the
/// measurement window opened until it closed (the control plane opens and closes it).
#[derive(Debug, Default)]
pub(crate) struct Latency {
    pub(super) open: bool,
    pub(super) hist: Option<hdrhistogram::Histogram<u64>>,
    /// The same since the last interval report.
    pub(super) interval: Option<hdrhistogram::Histogram<u64>>,
}

/// Records `v` into `h`, made on first use (three significant digits; it grows to the
/// largest value it sees, and only a value past any size is clamped).
pub(crate) fn record(h: &mut Option<hdrhistogram::Histogram<u64>>, v: u64) {
    if h.is_none() {
        *h = hdrhistogram::Histogram::new(3).ok();
    }
    if let Some(h) = h.as_mut()
        && h.record(v).is_err()
    {
        h.saturating_record(v);
    }
}

/// All of `hists` in one histogram; None when there are none.
pub(crate) fn merged(
    hists: impl IntoIterator<Item = hdrhistogram::Histogram<u64>>,
) -> Option<hdrhistogram::Histogram<u64>> {
    hists.into_iter().reduce(|mut all, h| {
        // Histograms of three digits that grow as they need never refuse one another.
        let _ = all.add(&h);
        all
    })
}
