//! What a worker shares with the control plane: its counters (`counters`), its
//! connections' descriptors and failures, what its connections showed, and the sample the control plane takes of it at the edges of
//! the measurement window. Nothing here prints or allocates per I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use socket2::Socket;

use crate::sys::socket::ConnInfo;

use super::counters::{Counters, Latency, record};
use super::udp_accounting as udp;

/// What a worker shares with the control plane, in one part per concern; each workload
/// writes the parts it needs. The control plane reads it only through the methods below
/// (counters and samples, connection counts, what a test showed, failures): the fields,
/// and above all the descriptors, stay inside the data path.
#[derive(Debug, Default)]
pub(crate) struct WorkerState {
    /// Bytes and calls so far.
    pub(super) counters: Counters,
    /// Sender: connections established. Receiver: connections accepted.
    pub(super) connections: AtomicUsize,
    /// Data connections currently open.
    pub(super) open: AtomicUsize,
    /// The descriptors whose kernel counts a sample reads.
    pub(super) sockets: Sockets,
    /// What the connections showed, which the control plane takes at a test's end.
    pub(super) seen: Seen,
    /// UDP receiver: loss, duplicate, reorder and jitter accounting, made when its
    /// worker starts (`datagrams`).
    udp: OnceLock<udp::DatagramCounters>,
    /// Request/response and connection-rate state, made when a worker starts such a
    /// test or a receiver's connection asks for one (`exchanges`).
    exchanges: OnceLock<Exchanges>,
    /// Receiver: which ways this test's connections carry bytes.
    pub(super) ways: WaysUsed,
    /// Receiver: the last settle request this worker has answered (`Admission`).
    pub(super) settled: AtomicU64,
    /// The worker thread has returned.
    finished: AtomicBool,
    /// The CPU the worker pinned itself to, plus one (0: not pinned).
    cpu: AtomicUsize,
    failure: Mutex<Option<String>>,
    /// A connection of this worker was reset (or aborted) by its peer.
    reset: AtomicBool,
}

/// A worker's open connections' descriptors, which a sample reads (what each delivered,
/// what each holds unread); each is listed while its socket is open and withdrawn under
/// its lock before the socket closes.
#[derive(Debug, Default)]
pub(super) struct Sockets {
    /// TCP sender: its connections' descriptors, while they are open (published once all
    /// are up, withdrawn at stop before they close); `sample` reads what each delivered.
    pub(super) delivering: Mutex<Vec<crate::sys::RawSock>>,
    /// TCP receiver: its open connections' descriptors (added when accepted, removed
    /// under this lock before they close); `sample` adds what each holds unread.
    pub(super) receiving: Mutex<Vec<crate::sys::RawSock>>,
    /// TCP receiver: its listener's descriptor while it is open; in a connection-rate
    /// test `sample` adds the connections its kernel has established but the worker has
    /// not yet accepted, as it adds the bytes a connection holds unread.
    pub(super) listening: Mutex<Option<crate::sys::RawSock>>,
    /// What its sending connections that have closed (or been withdrawn) delivered.
    pub(super) retired: AtomicU64,
    /// Its bytes are those its connections delivered, not those it wrote: a connection
    /// whose OS says what it delivered has been listed in `delivering` (a TCP sender's
    /// stay so once it has withdrawn them). Where the OS does not say, the bytes written.
    pub(super) counts_delivered: AtomicBool,
}

/// What a worker's connections showed during a test.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Sender: TCP_INFO of each connection, read when the test stopped.
    pub(super) conn_info: Mutex<Vec<ConnInfo>>,
    /// The socket options the kernel applied, read back from a data socket.
    pub(super) applied: Mutex<Option<Applied>>,
    /// Receiver: peer addresses of the connections (UDP: flows) since the last report.
    pub(super) peers: Mutex<Vec<SocketAddr>>,
    /// TCP receiver: the most one read of its streams took since the last report (0:
    /// none), which `ReadSize::ByPath` decides per connection.
    pub(super) read_len: AtomicUsize,
    /// TCP receiver: the most SO_RCVLOWAT its streams read back since the last report
    /// (0: none), which `Lowat::ByPath` decides per connection.
    pub(super) rcvlowat: AtomicUsize,
}

/// Request/response and connection-rate state.
#[derive(Debug, Default)]
pub(super) struct Exchanges {
    /// Receiver: what the thread that answers the worker's sole request/response
    /// connection has read (`answer`); a count apart because that thread is its writer.
    pub(super) answered: Counters,
    /// Request/response sender: the round trips timed while the window was open.
    pub(super) latency: Mutex<Latency>,
    /// The request size its connections use (a receiver learns it from their headers);
    /// 0 in a stream test.
    pub(super) rr_size: AtomicU64,
    /// The worker's calls are connections opened (sender) or accepted (receiver) by a
    /// connection-rate test (`--connect-rate`), each one call of no bytes.
    pub(super) connect_rate: AtomicBool,
}

/// Which ways a receiver's connections of this test carry bytes.
#[derive(Debug, Default)]
pub(super) struct WaysUsed {
    /// Its sending count: connections of this test (reverse or both-ways) send through
    /// it.
    pub(super) sends: AtomicBool,
    /// Connections of this test carry data both ways (`--bidir`).
    pub(super) both: AtomicBool,
}

/// What a receiver's worker saw of one test, taken (and forgotten) at its end.
#[derive(Debug, Default)]
pub(crate) struct TestSeen {
    /// Peer addresses of the connections (UDP: flows).
    pub peers: Vec<SocketAddr>,
    /// The most one read took (None: nothing read).
    pub read_len: Option<usize>,
    /// The most SO_RCVLOWAT a stream read back (None: none).
    pub rcvlowat: Option<usize>,
    /// The request size of a request/response test (None: not one).
    pub rr_size: Option<usize>,
}

impl WorkerState {
    /// Counts one completed transaction or connection of `bytes`, and records how long it
    /// `took` if the window is open (None: it counts untimed). Both under the window's
    /// lock, so that with the edges' order (the first sampled before the window opens,
    /// the last after it closes) nothing is timed that the window does not count.
    pub(crate) fn completed(&self, took: Option<std::time::Duration>, bytes: usize) {
        let mut l = self.latency();
        if let (true, Some(took)) = (l.open, took) {
            let ns = took.as_nanos().clamp(1, u64::MAX as u128) as u64;
            record(&mut l.hist, ns);
            record(&mut l.interval, ns);
        }
        self.counters.add_many(bytes, 1);
    }

    /// The round trips this worker times (made on first use).
    fn latency(&self) -> std::sync::MutexGuard<'_, Latency> {
        let x = self.exchanges();
        x.latency.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens (forgetting what came before) or closes the latency window of a worker
    /// that times its exchanges.
    pub(crate) fn latency_window(&self, open: bool) {
        if self.exchanges.get().is_none() {
            return;
        }
        let mut l = self.latency();
        if open {
            (l.hist, l.interval) = (None, None);
        }
        l.open = open;
    }

    /// The round trips timed since the last call (an interval's), forgotten here.
    pub(crate) fn interval_round_trips(&self) -> Option<hdrhistogram::Histogram<u64>> {
        self.exchanges.get()?;
        self.latency().interval.take()
    }

    /// The round trips timed in the window; None if there were none.
    pub(crate) fn round_trips(&self) -> Option<hdrhistogram::Histogram<u64>> {
        self.exchanges.get()?;
        self.latency().hist.clone()
    }
}

/// A worker's counters at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sample {
    /// Bytes that count: on a TCP sender those its connections have delivered (the peer
    /// acknowledged them), elsewhere those moved through the socket calls.
    pub bytes: u64,
    /// TCP sender: bytes written into the send buffers (the C tools' figure); None where
    /// `bytes` already is what the calls moved.
    pub written: Option<u64>,
    /// Completed calls.
    pub ops: u64,
    /// UDP receive accounting (all zero otherwise).
    pub udp: udp::Tally,
    /// The CPU the worker is pinned to, if it is.
    pub cpu: Option<usize>,
}

impl WorkerState {
    /// Pins the calling worker thread to `cpu` (None: leaves it where it is) and keeps
    /// which CPU it is on for the report.
    pub(crate) fn pin(&self, cpu: Option<usize>) {
        if let Some(c) = cpu
            && crate::sys::affinity::pin_current(Some(c))
        {
            self.cpu.store(c + 1, Ordering::Relaxed);
        }
    }

    /// Samples the counters. At a window's edge (`edge`), each connection this worker
    /// reads first sends the acknowledgement it owes (see
    /// `timeline::edge::keep_acks_current`), so that its peer's delivered count at the
    /// peer's own edge stands where ours does.
    pub(crate) fn sample(&self, edge: bool) -> Sample {
        // Delivered first: what was written by the time the counter is read covers it.
        let delivered = {
            let fds = self
                .sockets
                .delivering
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let counts = self.sockets.counts_delivered.load(Ordering::Acquire);
            (counts || !fds.is_empty()).then(|| {
                let live: u64 = fds
                    .iter()
                    .filter_map(|&fd| crate::sys::socket::bytes_acked(fd))
                    .sum();
                live + self.sockets.retired.load(Ordering::Acquire)
            })
        };
        let (moved, ops) = self.counted();
        // What the receiver's kernel holds unread was delivered too: the sender counts it.
        let unread = self.unread(edge);
        let queued = if self.is_connect_rate() {
            let fd = self
                .sockets
                .listening
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            fd.and_then(crate::sys::socket::accept_queue).unwrap_or(0)
        } else {
            0
        };
        Sample {
            bytes: delivered.unwrap_or(moved + unread),
            written: delivered.map(|_| self.counters.whole()),
            ops: ops + queued,
            udp: self.udp.get().map(|u| u.sample()).unwrap_or_default(),
            cpu: self.pinned(),
        }
    }

    /// Bytes and calls so far, the worker's own and its answering thread's.
    pub(crate) fn counted(&self) -> (u64, u64) {
        let (bytes, calls) = self.counters.sample();
        let (more, more_calls) = self.exchanges.get().map_or((0, 0), |x| x.answered.sample());
        (bytes + more, calls + more_calls)
    }

    /// The CPU the worker pinned itself to, if it did.
    pub(crate) fn pinned(&self) -> Option<usize> {
        self.cpu.load(Ordering::Relaxed).checked_sub(1)
    }

    /// The bytes the kernel holds unread on the connections this worker reads (at a
    /// window's `edge` each first sends the acknowledgement it owes).
    pub(crate) fn unread(&self, edge: bool) -> u64 {
        let fds = self
            .sockets
            .receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let unread = |&fd: &crate::sys::RawSock| {
            if edge {
                crate::sys::socket::flush_ack(fd);
            }
            crate::sys::socket::unread(fd)
        };
        fds.iter().map(unread).sum()
    }

    /// Has every connection this worker reads send the acknowledgement it owes now (see
    /// `timeline::edge::keep_acks_current`); returns how many it asked.
    pub(crate) fn flush_acks(&self) -> usize {
        let fds = self
            .sockets
            .receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for &fd in fds.iter() {
            crate::sys::socket::flush_ack(fd);
        }
        fds.len()
    }

    /// Calls `each` with every open TCP connection's round-trip time in microseconds,
    /// as TCP_INFO has it: a sender's smoothed RTT, a receiver's own estimate (0, not
    /// known, is left out).
    pub(crate) fn round_trip_times(&self, mut each: impl FnMut(u32)) {
        for (list, receiving) in [
            (&self.sockets.delivering, false),
            (&self.sockets.receiving, true),
        ] {
            let fds = list.lock().unwrap_or_else(|p| p.into_inner());
            for &fd in fds.iter() {
                if let Some(us) = crate::sys::socket::rtt_us(fd, receiving).filter(|&u| u > 0) {
                    each(us);
                }
            }
        }
    }

    /// Receiver: a new connection (UDP: flow) from `peer`.
    pub(crate) fn arrived(&self, peer: SocketAddr) {
        self.seen
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(peer);
        self.connections.fetch_add(1, Ordering::Release);
    }

    /// Records the first failure of this worker.
    pub(crate) fn fail(&self, msg: String) {
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(msg);
    }

    /// Records a failed socket call: `doing` says what (and to whom), and a reset by the
    /// peer is remembered (`reset_by_peer`).
    pub(crate) fn fail_io(&self, doing: String, e: &std::io::Error) {
        use std::io::ErrorKind::{ConnectionAborted, ConnectionReset};
        if matches!(e.kind(), ConnectionReset | ConnectionAborted) {
            self.reset.store(true, Ordering::Release);
        }
        self.fail(format!("{doing}: {e}"));
    }

    /// Whether a connection of this worker was reset by its peer.
    pub(crate) fn reset_by_peer(&self) -> bool {
        self.reset.load(Ordering::Acquire)
    }

    /// The first failure, if any.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The parts a workload makes for itself.
impl WorkerState {
    /// A UDP receiver's accounting, made on first use.
    pub(super) fn datagrams(&self) -> &udp::DatagramCounters {
        self.udp.get_or_init(Default::default)
    }

    /// The request/response and connection-rate state, made on first use.
    pub(super) fn exchanges(&self) -> &Exchanges {
        self.exchanges.get_or_init(Default::default)
    }
}

/// What the control plane asks of a worker besides its samples.
impl WorkerState {
    /// Connections established (sender) or accepted (receiver) so far.
    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::Acquire)
    }

    /// Data connections open now.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Whether the worker thread has returned.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Marks the worker thread returned.
    pub(super) fn mark_finished(&self) {
        self.finished.store(true, Ordering::Release);
    }

    /// The last settle request this receiver worker answered (`Admission`).
    pub(crate) fn settled(&self) -> u64 {
        self.settled.load(Ordering::Acquire)
    }

    /// Whether its calls are a connection-rate test's connections.
    pub(crate) fn is_connect_rate(&self) -> bool {
        let x = self.exchanges.get();
        x.is_some_and(|x| x.connect_rate.load(Ordering::Acquire))
    }

    /// The request size of its request/response connections (0: not such a test).
    pub(crate) fn rr_size(&self) -> u64 {
        let x = self.exchanges.get();
        x.map_or(0, |x| x.rr_size.load(Ordering::Relaxed))
    }

    /// Receiver: whether this test's connections send through this count (so far).
    pub(crate) fn sends(&self) -> bool {
        self.ways.sends.load(Ordering::Acquire)
    }

    /// Receiver: whether this test's connections carry data both ways (so far).
    pub(crate) fn both_ways(&self) -> bool {
        self.ways.both.load(Ordering::Acquire)
    }

    /// Receiver: the ways this test used, (sends, both), forgotten for the next test.
    pub(crate) fn take_ways(&self) -> (bool, bool) {
        self.sockets
            .counts_delivered
            .store(false, Ordering::Release);
        (
            self.ways.sends.swap(false, Ordering::AcqRel),
            self.ways.both.swap(false, Ordering::AcqRel),
        )
    }

    /// Receiver: what this test's connections showed, forgotten for the next test.
    pub(crate) fn take_seen(&self) -> TestSeen {
        let some = |n: usize| (n > 0).then_some(n);
        let x = self.exchanges.get();
        let rr_size = x.map_or(0, |x| {
            x.connect_rate.store(false, Ordering::Relaxed);
            x.rr_size.swap(0, Ordering::Relaxed)
        });
        TestSeen {
            peers: std::mem::take(&mut *self.seen.peers.lock().unwrap_or_else(|p| p.into_inner())),
            read_len: some(self.seen.read_len.swap(0, Ordering::Relaxed)),
            rcvlowat: some(self.seen.rcvlowat.swap(0, Ordering::Relaxed)),
            rr_size: some(rr_size as usize),
        }
    }

    /// Sender: TCP_INFO of each connection as read when the test stopped (taken).
    pub(crate) fn take_conn_info(&self) -> Vec<ConnInfo> {
        std::mem::take(
            &mut *self
                .seen
                .conn_info
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// The socket options read back from one of its data sockets, if one was read.
    pub(crate) fn applied(&self) -> Option<Applied> {
        *self.seen.applied.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps the socket options read back from a data socket (the first one read).
    pub(crate) fn keep_applied(&self, read: impl FnOnce() -> Applied) {
        let mut applied = self.seen.applied.lock().unwrap_or_else(|p| p.into_inner());
        applied.get_or_insert_with(read);
    }
}

/// Socket options as the kernel set them (Linux doubles SO_SNDBUF/SO_RCVBUF requests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Applied {
    /// TCP_NODELAY as read back.
    pub no_delay: bool,
    /// SO_SNDBUF as read back, bytes.
    pub send_buffer: usize,
    /// SO_RCVBUF as read back, bytes.
    pub recv_buffer: usize,
    /// Receiver: SO_RCVLOWAT as a stream connection read it back, bytes (the most of
    /// any; null where no stream was read).
    pub rcvlowat: Option<usize>,
    /// TCP_CONGESTION as read back: the algorithm the connections use (null for UDP
    /// and where the OS names none).
    pub congestion: Option<crate::config::Congestion>,
    /// IP_TOS (IPv6: IPV6_TCLASS) as read back (null where the OS does not say).
    pub tos: Option<u8>,
}

impl Applied {
    /// Reads the options of `sock`.
    pub(crate) fn read(sock: &Socket) -> Self {
        Self {
            no_delay: sock.tcp_nodelay().unwrap_or(false),
            send_buffer: sock.send_buffer_size().unwrap_or(0),
            recv_buffer: sock.recv_buffer_size().unwrap_or(0),
            rcvlowat: None,
            congestion: crate::sys::socket::congestion(sock)
                .as_deref()
                .and_then(crate::config::Congestion::new),
            tos: crate::sys::socket::tos(sock),
        }
    }
}

/// Marks a worker finished when its thread ends, and failed if it ends by panicking.
pub(super) struct FinishGuard<'a>(pub(super) &'a WorkerState);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail("worker thread panicked".into());
        }
        self.0.mark_finished();
    }
}

pub(super) fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// A receiver worker's listener while it is open: listed in `WorkerState::listening`,
/// withdrawn (under its lock) before the listener closes.
pub(super) struct Listening<'a>(&'a WorkerState);

impl<'a> Listening<'a> {
    pub(super) fn register(me: &'a WorkerState, fd: crate::sys::RawSock) -> Self {
        *me.sockets
            .listening
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(fd);
        Self(me)
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        *self
            .0
            .sockets
            .listening
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
    }
}
