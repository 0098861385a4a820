//! Application-level rate limits without busy-spinning: `-B` (one rate shared by all
//! sender workers) and Windows `-thr` (a rate per thread); and the pacing of connection
//! setup (`ConnectGate`).
//!
//! A pacer is a token bucket kept as a virtual clock: after writing n bytes a worker adds
//! them to the bytes sent so far, and sleeps until the moment that total is due at the
//! configured rate. Sleeping late costs nothing in the long run (the next write is
//! simply not delayed), so the average rate is exact; writes are cut to about 5 ms of
//! traffic so the rate is also smooth at low rates. Unlike ntttcp-for-linux, the limit
//! holds from the first byte (warm-up included) and costs no CPU while waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One rate limit, shared by the workers it applies to.
#[derive(Debug)]
pub(crate) struct Pacer {
    bytes_per_s: f64,
    start: OnceLock<Instant>,
    sent: AtomicU64,
}

impl Pacer {
    /// A pacer for `bits_per_s` (decimal bits per second, as `-B` is given).
    pub(crate) fn bits(bits_per_s: f64) -> Self {
        Self::bytes(bits_per_s / 8.0)
    }

    /// A pacer for `bytes_per_s`.
    pub(crate) fn bytes(bytes_per_s: f64) -> Self {
        Self {
            bytes_per_s: bytes_per_s.max(1.0),
            start: OnceLock::new(),
            sent: AtomicU64::new(0),
        }
    }

    /// The largest write that keeps the flow smooth: about 5 ms of traffic, at least
    /// 1 KiB, at most `size`.
    pub(crate) fn chunk(&self, size: usize) -> usize {
        ((self.bytes_per_s * 0.005) as usize)
            .clamp(1024, size.max(1024))
            .min(size)
    }

    /// Records `n` bytes just written; returns how long to wait before writing more.
    pub(crate) fn after(&self, n: usize) -> Duration {
        let start = *self.start.get_or_init(Instant::now);
        let total = self.sent.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        let due = Duration::from_secs_f64(total as f64 / self.bytes_per_s);
        due.saturating_sub(start.elapsed())
    }
}

/// The pacers one worker obeys (the shared `-B` one and its own `-thr` one).
#[derive(Debug, Clone, Default)]
pub(crate) struct Pacers(pub Vec<std::sync::Arc<Pacer>>);

impl Pacers {
    /// Write size under every limit.
    pub(crate) fn chunk(&self, size: usize) -> usize {
        self.0.iter().fold(size, |c, p| p.chunk(c))
    }

    /// Records `n` written bytes with every pacer; the longest wait wins.
    pub(crate) fn after(&self, n: usize) -> Duration {
        self.0.iter().map(|p| p.after(n)).max().unwrap_or_default()
    }
}

/// Connection attempts in flight at once over all sender workers. Enough that 10,000
/// connections on loopback are set up in well under a second, few enough that a burst
/// never overflows a receiver's SYN or accept backlog (Linux's `tcp_max_syn_backlog` is
/// 2048 here, and a stock ntttcp-for-linux receiver accepts one connection per select()
/// wake-up): a dropped SYN costs the connection a 1 s retransmit.
pub(crate) const CONNECTS_IN_FLIGHT: usize = 64;

/// Paces connection setup: at most `limit` connects in flight process-wide (Windows
/// NTttcp allows 10). Workers block in `enter` until a slot frees or their deadline.
#[derive(Debug)]
pub(crate) struct ConnectGate {
    limit: usize,
    busy: Mutex<usize>,
    freed: Condvar,
}

/// A connect in flight; leaving the scope frees the slot.
#[derive(Debug)]
pub(crate) struct Slot<'a>(&'a ConnectGate);

impl ConnectGate {
    /// A gate with `limit` slots (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            busy: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Waits for a slot until `deadline`; None if the deadline came first.
    pub(crate) fn enter(&self, deadline: Instant) -> Option<Slot<'_>> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy >= self.limit {
            let left = deadline.checked_duration_since(Instant::now())?;
            busy = self
                .freed
                .wait_timeout(busy, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *busy += 1;
        Some(Slot(self))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut busy = self.0.busy.lock().unwrap_or_else(|p| p.into_inner());
        *busy -= 1;
        drop(busy);
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_to_the_rate_without_drift() {
        // 80 Mbit/s = 10 MB/s: 200 writes of 10 KB take 0.2 s.
        let p = Pacer::bits(80e6);
        assert_eq!(p.chunk(128 * 1024), 50_000);
        let t = Instant::now();
        let mut last_late = Duration::ZERO;
        for _ in 0..200 {
            let (wait, slept) = (p.after(10_000), Instant::now());
            // As the senders do: no wait, no sleep (on Windows a sleep of zero yields
            // the CPU, which a loaded machine may not give back for milliseconds).
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            last_late = slept.elapsed().saturating_sub(wait);
        }
        // Without drift every late wake-up is made up by the next wait but the last, so
        // a starved machine adds only how late that last one woke.
        let took = t.elapsed().as_secs_f64() - last_late.as_secs_f64();
        assert!((0.19..0.23).contains(&took), "{took} besides {last_late:?}");
    }

    #[test]
    fn chunks_and_combined_limits() {
        assert_eq!(Pacer::bits(8e3).chunk(65536), 1024, "at least 1 KiB");
        assert_eq!(
            Pacer::bits(80e9).chunk(65536),
            65536,
            "never above the buffer"
        );
        let both = Pacers(vec![
            std::sync::Arc::new(Pacer::bytes(1e6)),
            std::sync::Arc::new(Pacer::bytes(2e6)),
        ]);
        let wait = both.after(100_000);
        assert!(
            wait > Duration::from_millis(90),
            "the slower limit wins: {wait:?}"
        );
        assert_eq!(Pacers::default().after(1 << 20), Duration::ZERO);
    }

    #[test]
    fn connect_gate_bounds_what_is_in_flight() {
        use std::sync::atomic::AtomicUsize;
        let gate = std::sync::Arc::new(ConnectGate::new(3));
        let (now, peak) = (
            std::sync::Arc::new(AtomicUsize::new(0)),
            std::sync::Arc::new(AtomicUsize::new(0)),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let (gate, now, peak) = (gate.clone(), now.clone(), peak.clone());
                std::thread::spawn(move || {
                    let _slot = gate.enter(deadline).expect("a slot before the deadline");
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        // A full gate turns a waiter away at its deadline.
        let _held: Vec<_> = (0..3).map(|_| gate.enter(deadline).unwrap()).collect();
        let t = Instant::now();
        assert!(gate.enter(t + Duration::from_millis(50)).is_none());
        assert!(t.elapsed() >= Duration::from_millis(50));
    }
}
