//! Which data connections a receiver keeps. In sync mode a connection is taken only while
//! a sender is between its negotiated reply and its start (outside a test nobody asked
//! for it; during a test it is beyond the connections the sender opened before 'R'), and
//! never past the descriptor budget, which keeps room for the sync port. Everything else
//! is closed (reset) the moment it is accepted, so a flood of connects costs neither
//! descriptors nor memory.
//!
//! At a start request the controller first *settles* the workers: each accepts whatever
//! is still queued on its port, so a sender's connections that the kernel had completed
//! before its 'R' are all taken before the gate closes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// The receiver's gate for data connections, shared by its workers and its controller.
#[derive(Debug)]
pub(crate) struct Admission {
    /// Sync mode: connections are taken only while a handshake asks for them.
    gated: bool,
    /// Sessions between their negotiated reply and their start request's handling.
    handshakes: AtomicUsize,
    /// A test is running: its connections are in, later ones are not.
    running: AtomicBool,
    /// The running test is a connection-rate one: its connections are counted, then
    /// closed.
    churn: AtomicBool,
    /// Data connections open now, over every worker.
    open: AtomicUsize,
    /// The most data connections this receiver keeps (its descriptor budget).
    budget: usize,
    /// Connections closed at accept since the last `take_refused`.
    refused: AtomicU64,
    /// Settle requests (an epoch the workers acknowledge).
    settle: watch::Sender<u64>,
    /// The last data connection that came while no handshake asked for one and no test
    /// ran: most likely a sender without sync (`-N` / `-ns`) against this syncing one.
    stray: watch::Sender<Option<SocketAddr>>,
    /// When the last test ended (its sender's last connects may still arrive).
    ended: Mutex<Option<Instant>>,
}

/// A connection within this long of a test's end may be that test's sender's last one
/// (a connection-rate sender's connects in flight), not a sender without sync.
const AFTER_A_TEST: Duration = Duration::from_secs(2);

impl Admission {
    /// A gate for a receiver in sync mode (`gated`) or not, keeping at most `budget`
    /// data connections.
    pub(crate) fn new(gated: bool, budget: usize) -> Self {
        Self {
            gated,
            handshakes: AtomicUsize::new(0),
            running: AtomicBool::new(false),
            churn: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            budget,
            refused: AtomicU64::new(0),
            settle: watch::Sender::new(0),
            stray: watch::Sender::new(None),
            ended: Mutex::new(None),
        }
    }

    /// What to do with a connection from `peer` accepted now: kept (it counts as open
    /// until `closed`), counted and closed (a connection-rate test's), or refused.
    pub(crate) fn admit(&self, peer: SocketAddr) -> Admit {
        let running = self.running.load(Ordering::Acquire);
        if running && self.churn.load(Ordering::Acquire) {
            return Admit::Count;
        }
        let asked = self.handshakes.load(Ordering::Acquire) > 0;
        let wanted = !self.gated || (!running && asked);
        if self.gated && !running && !asked && !self.just_ended() {
            self.stray.send_replace(Some(peer));
        }
        if wanted && self.open.load(Ordering::Acquire) < self.budget {
            self.open.fetch_add(1, Ordering::AcqRel);
            Admit::Keep
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            Admit::Refuse
        }
    }

    /// A kept connection has closed.
    pub(crate) fn closed(&self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }

    /// A sender is about to open its data connections; they are welcome until the
    /// guard is dropped (after its start request has been handled).
    pub(crate) fn handshake(self: &Arc<Self>) -> HandshakeGuard {
        self.handshakes.fetch_add(1, Ordering::AcqRel);
        HandshakeGuard(self.clone())
    }

    /// A test starts (`true`: no more connections; with `churn`, a connection-rate
    /// test's are counted and closed) or has ended.
    pub(crate) fn set_running(&self, running: bool, churn: bool) {
        self.churn.store(running && churn, Ordering::Release);
        let was = self.running.swap(running, Ordering::AcqRel);
        if was && !running {
            *self.ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
    }

    /// Whether a test ended within `AFTER_A_TEST`.
    fn just_ended(&self) -> bool {
        let ended = *self.ended.lock().unwrap_or_else(|p| p.into_inner());
        ended.is_some_and(|t| t.elapsed() < AFTER_A_TEST)
    }

    /// Watches the data connections that came with no handshake asking for them and no
    /// test running (`admit` records each one's peer).
    pub(crate) fn strays(&self) -> watch::Receiver<Option<SocketAddr>> {
        self.stray.subscribe()
    }

    /// Connections closed at accept since the last call.
    pub(crate) fn take_refused(&self) -> u64 {
        self.refused.swap(0, Ordering::Relaxed)
    }

    /// Asks every worker to accept what is queued on its port; returns the epoch each
    /// acknowledges when done.
    pub(crate) fn request_settle(&self) -> u64 {
        let mut epoch = 0;
        self.settle.send_modify(|e| {
            *e += 1;
            epoch = *e;
        });
        epoch
    }

    /// The gate as one worker holds it. Made before the worker starts, so that no
    /// settle request can come before the worker listens for them.
    pub(crate) fn for_worker(self: &Arc<Self>) -> WorkerGate {
        WorkerGate {
            gate: self.clone(),
            settle: self.settle.subscribe(),
        }
    }
}

/// What becomes of a connection just accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Kept for the test.
    Keep,
    /// A connection-rate test's: counted, then closed.
    Count,
    /// Closed at once.
    Refuse,
}

/// One worker's end of the gate: the gate and its settle requests.
#[derive(Debug)]
pub(crate) struct WorkerGate {
    /// The shared gate.
    pub gate: Arc<Admission>,
    /// Settle requests not yet answered.
    pub settle: watch::Receiver<u64>,
}

/// Keeps the gate open for one sender's data connections while alive.
#[derive(Debug)]
pub(crate) struct HandshakeGuard(Arc<Admission>);

impl Drop for HandshakeGuard {
    fn drop(&mut self) {
        self.0.handshakes.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: SocketAddr =
        SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 40000);

    #[test]
    fn sync_mode_takes_connections_only_while_a_sender_asks_for_them() {
        let a = Arc::new(Admission::new(true, 10));
        let mut strays = a.strays();
        let kept = |a: &Admission| a.admit(PEER) == Admit::Keep;
        assert!(!kept(&a), "nobody asked");
        assert_eq!(*strays.borrow_and_update(), Some(PEER), "a stray, named");
        let g = a.handshake();
        assert!(kept(&a) && kept(&a));
        a.set_running(true, false);
        assert!(!kept(&a), "beyond the test's connections");
        drop(g);
        a.set_running(false, false);
        assert!(!kept(&a), "between tests");
        assert_eq!(a.take_refused(), 3);
        assert_eq!(a.take_refused(), 0);
        let strays = a.strays();
        a.set_running(true, false);
        a.set_running(false, false);
        a.admit(PEER);
        assert!(
            !strays.has_changed().unwrap(),
            "a connection just after a test may be its sender's last"
        );
        let plain = Admission::new(false, 10);
        let none = plain.strays();
        plain.admit(PEER);
        assert!(
            !none.has_changed().unwrap(),
            "without sync nothing is a stray"
        );
    }

    #[test]
    fn a_connection_rate_test_counts_its_connections_and_only_while_it_runs() {
        let a = Admission::new(true, 1);
        a.set_running(true, true);
        assert_eq!((a.admit(PEER), a.admit(PEER)), (Admit::Count, Admit::Count));
        assert_eq!(a.take_refused(), 0, "counted, not refused");
        a.set_running(false, true);
        assert_eq!(a.admit(PEER), Admit::Refuse, "the test is over");
        a.set_running(true, false);
        assert_eq!(a.admit(PEER), Admit::Refuse, "the next test is a plain one");
    }

    #[test]
    fn the_budget_holds_in_every_mode() {
        let a = Admission::new(false, 2);
        let kept = |a: &Admission| a.admit(PEER) == Admit::Keep;
        assert!(kept(&a) && kept(&a));
        assert!(!kept(&a), "budget spent");
        a.closed();
        assert!(kept(&a), "room again");
    }

    #[test]
    fn a_worker_hears_every_settle_request_made_after_it_was_made() {
        let a = Arc::new(Admission::new(true, 1));
        let mut w = a.for_worker();
        assert!(!w.settle.has_changed().unwrap());
        assert_eq!(a.request_settle(), 1);
        assert_eq!(a.request_settle(), 2);
        assert!(w.settle.has_changed().unwrap());
        assert_eq!(*w.settle.borrow_and_update(), 2);
    }
}
