//! What the stamps in UDP datagrams tell: the stamp itself, and the receiver's
//! accounting of loss, duplicates, reordering and RFC 3550 jitter per flow (peer address
//! + session). Pure logic over byte slices and timestamps; the I/O is in `data::udp`.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

/// Bytes of the stamp at the start of each datagram; also the smallest datagram we send.
pub(crate) const STAMP_LEN: usize = 24;
const MAGIC: [u8; 4] = *b"nTu1";
/// A flow with a datagram this recent counts in the jitter figure (so a finished test's
/// flows do not dilute the next one's on a `-H` receiver).
const ACTIVE: u64 = 1_000_000_000;
/// A flow silent this long is forgotten (memory stays bounded on a long-lived receiver).
const FORGET: u64 = 30_000_000_000;
/// How often the active-flow figures are recomputed.
const REFRESH: u64 = 250_000_000;
/// How many recent sequence numbers a flow remembers to tell duplicates from late ones.
const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

/// Nanoseconds on this process's monotonic clock (only differences mean anything).
pub(crate) fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// What the sender writes at the start of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Random per sending socket: tells a new test from the same address and port apart.
    pub session: u32,
    /// 0, 1, 2, ... per sending socket.
    pub seq: u64,
    /// `now_ns()` of the sender when it wrote the datagram.
    pub sent_ns: u64,
}

impl Stamp {
    /// Writes the stamp into the first `STAMP_LEN` bytes of `buf` (network byte order).
    pub(crate) fn write(&self, buf: &mut [u8]) {
        buf[..4].copy_from_slice(&MAGIC);
        buf[4..8].copy_from_slice(&self.session.to_be_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.sent_ns.to_be_bytes());
    }

    /// The stamp of a datagram, if it carries one.
    pub(crate) fn read(d: &[u8]) -> Option<Self> {
        if d.len() < STAMP_LEN || d[..4] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes(d[i..i + 4].try_into().unwrap_or_default());
        let u64_at = |i: usize| u64::from_be_bytes(d[i..i + 8].try_into().unwrap_or_default());
        Some(Self {
            session: u32_at(4),
            seq: u64_at(8),
            sent_ns: u64_at(16),
        })
    }
}

/// A random session id (std's randomly keyed hasher; no RNG crate needed).
pub(crate) fn session_id(salt: u64) -> u32 {
    let mut h = std::hash::RandomState::new().build_hasher();
    h.write_u64(salt);
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() as u32
}

/// Cumulative receive accounting of one worker (all flows of its port).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Tally {
    /// Distinct stamped datagrams received (late ones included, duplicates not).
    pub received: u64,
    /// Stamped datagrams the sequence numbers say were sent (received + lost).
    pub expected: u64,
    /// Stamped datagrams received more than once.
    pub duplicates: u64,
    /// Stamped datagrams that arrived after a higher sequence number.
    pub out_of_order: u64,
    /// Datagrams without a stamp (a sender other than this ntttcp).
    pub unstamped: u64,
    /// Sum over the active stamped flows of their current jitter estimate, nanoseconds.
    pub jitter_sum_ns: u64,
    /// Stamped flows active (a datagram within `ACTIVE`) at the last refresh.
    pub flows: u64,
}

impl Tally {
    /// Mean jitter over the flows, milliseconds; None without stamped flows.
    pub(crate) fn jitter_ms(&self) -> Option<f64> {
        (self.flows > 0).then(|| self.jitter_sum_ns as f64 / self.flows as f64 / 1e6)
    }
}

/// A worker's `Tally` shared with the control plane; single writer.
#[derive(Debug, Default)]
pub(crate) struct DatagramCounters {
    received: AtomicU64,
    expected: AtomicU64,
    duplicates: AtomicU64,
    out_of_order: AtomicU64,
    unstamped: AtomicU64,
    jitter_sum_ns: AtomicU64,
    flows: AtomicU64,
}

impl DatagramCounters {
    /// Publishes the owning thread's tally.
    pub(crate) fn publish(&self, t: &Tally) {
        let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        set(&self.received, t.received);
        set(&self.expected, t.expected);
        set(&self.duplicates, t.duplicates);
        set(&self.out_of_order, t.out_of_order);
        set(&self.unstamped, t.unstamped);
        set(&self.jitter_sum_ns, t.jitter_sum_ns);
        set(&self.flows, t.flows);
    }

    /// The tally as last published.
    pub(crate) fn sample(&self) -> Tally {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Tally {
            received: get(&self.received),
            expected: get(&self.expected),
            duplicates: get(&self.duplicates),
            out_of_order: get(&self.out_of_order),
            unstamped: get(&self.unstamped),
            jitter_sum_ns: get(&self.jitter_sum_ns),
            flows: get(&self.flows),
        }
    }
}

/// One stamped flow's state.
#[derive(Debug)]
struct Flow {
    session: u32,
    /// Highest sequence number seen + 1.
    next: u64,
    /// Which of the last `WINDOW` sequence numbers arrived (bit seq % WINDOW).
    seen: Box<[u64; WORDS]>,
    /// Previous transit time (arrival − send, on two unrelated clocks), ns.
    transit: Option<i64>,
    /// RFC 3550 jitter estimate, ns.
    jitter: f64,
    /// Arrival of its latest datagram, `now_ns()`.
    last_ns: u64,
}

impl Flow {
    fn new(session: u32, now: u64) -> Self {
        Self {
            session,
            next: 0,
            seen: Box::new([0; WORDS]),
            transit: None,
            jitter: 0.0,
            last_ns: now,
        }
    }

    fn bit(seq: u64) -> (usize, u64) {
        let i = seq % WINDOW;
        ((i / 64) as usize, 1 << (i % 64))
    }

    fn test_and_set(&mut self, seq: u64) -> bool {
        let (w, b) = Self::bit(seq);
        let was = self.seen[w] & b != 0;
        self.seen[w] |= b;
        was
    }
}

/// The receiver's accounting over every flow of one port.
#[derive(Debug, Default)]
pub(crate) struct Accounting {
    flows: HashMap<SocketAddr, Flow>,
    /// Peers sending unstamped datagrams, with the arrival of their latest.
    unstamped_peers: HashMap<SocketAddr, u64>,
    refreshed_ns: u64,
    /// Totals so far.
    pub tally: Tally,
}

impl Accounting {
    /// Accounts one datagram from `peer` that arrived at `arrived_ns`; true if it is the
    /// first of a new flow (a new sender socket, or a new test from the same one).
    pub(crate) fn record(&mut self, peer: SocketAddr, d: &[u8], arrived_ns: u64) -> bool {
        let Some(stamp) = Stamp::read(d) else {
            self.tally.unstamped += 1;
            return self.unstamped_peers.insert(peer, arrived_ns).is_none();
        };
        let t = &mut self.tally;
        let mut new = false;
        let flow = self
            .flows
            .entry(peer)
            .and_modify(|f| {
                if f.session != stamp.session {
                    *f = Flow::new(stamp.session, arrived_ns);
                    new = true;
                }
            })
            .or_insert_with(|| {
                new = true;
                Flow::new(stamp.session, arrived_ns)
            });
        flow.last_ns = arrived_ns;
        let seq = stamp.seq;
        if seq >= flow.next {
            // Forget what the window held for the sequence numbers now skipped over.
            // Saturating: a stamp may claim any sequence number, up to u64::MAX.
            let skipped = (seq - flow.next).saturating_add(1);
            if skipped >= WINDOW {
                flow.seen.fill(0);
            } else {
                for s in flow.next..=seq {
                    let (w, b) = Flow::bit(s);
                    flow.seen[w] &= !b;
                }
            }
            t.expected = t.expected.saturating_add(skipped);
            flow.next = seq.saturating_add(1);
            flow.test_and_set(seq);
            t.received += 1;
        } else if flow.next - seq > WINDOW {
            // Too old to tell a duplicate from a late arrival: count it as late.
            t.out_of_order += 1;
            t.received += 1;
        } else if flow.test_and_set(seq) {
            t.duplicates += 1;
            return new;
        } else {
            t.out_of_order += 1;
            t.received += 1;
        }
        // RFC 3550 6.4.1: J += (|D(i-1,i)| - J) / 16, D from the transit times.
        // Modulo 2^64: the sender's clock is its own, so only differences of transit
        // times mean anything, and any send time is possible.
        let transit = arrived_ns.wrapping_sub(stamp.sent_ns) as i64;
        if let Some(prev) = flow.transit {
            let d = transit.wrapping_sub(prev).unsigned_abs() as f64;
            flow.jitter += (d - flow.jitter) / 16.0;
        }
        flow.transit = Some(transit);
        if new {
            self.refresh(arrived_ns);
        }
        new
    }

    /// Recomputes the active-flow figures (and forgets long-silent flows) if the last
    /// time was `REFRESH` ago.
    pub(crate) fn tick(&mut self, now: u64) {
        if now.saturating_sub(self.refreshed_ns) >= REFRESH {
            self.refresh(now);
        }
    }

    /// Recomputes the jitter sum and count over the flows active at `now`, and forgets
    /// flows silent for `FORGET`.
    pub(crate) fn refresh(&mut self, now: u64) {
        let silent = |last: u64| now.saturating_sub(last);
        self.flows.retain(|_, f| silent(f.last_ns) < FORGET);
        self.unstamped_peers
            .retain(|_, last| silent(*last) < FORGET);
        let active = self.flows.values().filter(|f| silent(f.last_ns) < ACTIVE);
        let (sum, n) = active.fold((0u64, 0u64), |(s, n), f| {
            (s.saturating_add(f.jitter as u64), n + 1)
        });
        self.tally.jitter_sum_ns = sum;
        self.tally.flows = n;
        self.refreshed_ns = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn datagram(session: u32, seq: u64, sent_ns: u64) -> Vec<u8> {
        let mut d = vec![b'B'; 64];
        Stamp {
            session,
            seq,
            sent_ns,
        }
        .write(&mut d);
        d
    }

    #[test]
    fn stamp_round_trips_and_foreign_data_has_none() {
        let s = Stamp {
            session: 0xdead_beef,
            seq: 1 << 40,
            sent_ns: 123_456_789,
        };
        let mut d = [0u8; STAMP_LEN];
        s.write(&mut d);
        assert_eq!(Stamp::read(&d), Some(s));
        assert_eq!(Stamp::read(&[b'B'; 1470]), None, "a stock ntttcp datagram");
        assert_eq!(Stamp::read(&d[..STAMP_LEN - 1]), None);
    }

    #[test]
    fn in_order_flow_has_no_loss() {
        let mut a = Accounting::default();
        assert!(a.record(peer(1), &datagram(7, 0, 0), 100));
        for seq in 1..1000 {
            assert!(!a.record(peer(1), &datagram(7, seq, seq * 10), 100 + seq * 10));
        }
        let t = a.tally;
        assert_eq!(
            (t.received, t.expected, t.duplicates, t.out_of_order),
            (1000, 1000, 0, 0)
        );
        assert_eq!(t.jitter_ms(), Some(0.0), "constant transit time");
    }

    #[test]
    fn gaps_duplicates_and_late_arrivals() {
        let mut a = Accounting::default();
        for seq in [0, 1, 2, 5, 6, 3, 6, 9, 9000, 10] {
            a.record(peer(1), &datagram(1, seq, 0), 0);
        }
        let t = a.tally;
        // Expected 0..=9000; 3 late, 6 and 9 twice? 6 duplicated once, 10 is too old
        // relative to 9000 to tell, so it counts as late.
        assert_eq!(t.expected, 9001);
        assert_eq!(t.duplicates, 1);
        assert_eq!(t.out_of_order, 2, "3 and 10 arrived late");
        assert_eq!(t.received, 9, "every distinct datagram");
        assert_eq!(t.expected - t.received, 8992, "lost");
    }

    #[test]
    fn duplicates_are_found_across_the_window_edge() {
        let mut a = Accounting::default();
        for seq in 0..(WINDOW + 10) {
            a.record(peer(1), &datagram(1, seq, 0), 0);
        }
        // Inside the window: a duplicate; just outside: counted as late.
        a.record(peer(1), &datagram(1, WINDOW + 10 - 5, 0), 0);
        a.record(peer(1), &datagram(1, 5, 0), 0);
        assert_eq!((a.tally.duplicates, a.tally.out_of_order), (1, 1));
    }

    #[test]
    fn flows_are_per_peer_and_session() {
        let mut a = Accounting::default();
        assert!(a.record(peer(1), &datagram(1, 0, 0), 0));
        assert!(a.record(peer(2), &datagram(1, 0, 0), 0), "another socket");
        assert!(!a.record(peer(2), &datagram(1, 1, 0), 0));
        assert!(
            a.record(peer(2), &datagram(9, 0, 0), 0),
            "a new test, same port"
        );
        assert_eq!(a.tally.flows, 2);
        assert_eq!((a.tally.expected, a.tally.duplicates), (4, 0));
        assert!(a.record(peer(3), &[b'B'; 100], 0), "unstamped peer, once");
        assert!(!a.record(peer(3), &[b'B'; 100], 0));
        assert_eq!(a.tally.unstamped, 2);
    }

    #[test]
    fn jitter_follows_rfc_3550() {
        let mut a = Accounting::default();
        // Transit alternates 1 ms and 2 ms: |D| = 1 ms each time after the first.
        let mut j = 0.0f64;
        for seq in 0..200u64 {
            let transit = if seq % 2 == 0 { 1_000_000 } else { 2_000_000 };
            a.record(peer(1), &datagram(1, seq, seq * 1000), seq * 1000 + transit);
            if seq > 0 {
                j += (1_000_000.0 - j) / 16.0;
            }
        }
        a.refresh(200 * 1000);
        let got = a.tally.jitter_ms().unwrap();
        assert!((got - j / 1e6).abs() < 1e-5, "{got} vs {}", j / 1e6);
        assert!(got > 0.99, "converges on 1 ms: {got}");
    }

    #[test]
    fn finished_flows_leave_the_jitter_figure_and_are_forgotten() {
        let mut a = Accounting::default();
        // An old flow with 1 ms jitter, then a new one with none, 5 s later.
        for seq in 0..100u64 {
            let transit = if seq % 2 == 0 { 1_000_000 } else { 2_000_000 };
            a.record(peer(1), &datagram(1, seq, seq * 1000), seq * 1000 + transit);
        }
        let later = 5_000_000_000;
        for seq in 0..100u64 {
            a.record(peer(2), &datagram(2, seq, seq), later + seq);
        }
        a.refresh(later + 100);
        assert_eq!(a.tally.flows, 1, "only the active flow");
        assert_eq!(a.tally.jitter_ms(), Some(0.0));
        assert_eq!(a.flows.len(), 2, "the old one is still remembered");
        a.refresh(later + 100 + FORGET);
        assert_eq!((a.flows.len(), a.tally.flows), (0, 0));
        assert_eq!(a.tally.expected, 200, "cumulative counts stay");
    }

    #[test]
    fn counters_publish_what_the_worker_tallied() {
        let c = DatagramCounters::default();
        let t = Tally {
            received: 1,
            expected: 2,
            duplicates: 3,
            out_of_order: 4,
            unstamped: 5,
            jitter_sum_ns: 6,
            flows: 7,
        };
        c.publish(&t);
        assert_eq!(c.sample(), t);
    }

    #[test]
    fn any_stamp_a_peer_sends_is_counted_without_overflow() {
        // Found by the udp_accounting fuzz target: sequence numbers and send times at
        // the ends of their range overflowed the loss and jitter arithmetic.
        let mut acc = Accounting::default();
        let extremes = [
            (0, 1 << 63),
            (u64::MAX, 0),
            (u64::MAX, u64::MAX),
            (5, 1 << 63),
        ];
        for (i, (seq, sent)) in extremes.into_iter().enumerate() {
            acc.record(peer(1), &datagram(1, seq, sent), 1_000 + i as u64);
            acc.record(
                peer(2),
                &datagram(1, seq, sent.wrapping_add(1 << 62)),
                2_000,
            );
        }
        acc.refresh(3_000);
        let t = acc.tally;
        assert_eq!(t.received + t.duplicates, 8, "{t:?}");
        assert_eq!(t.expected, u64::MAX, "{t:?}");
        assert_eq!(t.flows, 2);
        assert!(t.jitter_sum_ns > 0, "{t:?}");
    }
}
