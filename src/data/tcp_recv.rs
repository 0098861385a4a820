//! A TCP receiver worker: a current-thread tokio runtime that accepts on its port and
//! drains every connection the gate admits into one buffer per worker thread.

use std::cell::{Cell, RefCell};
use std::io;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use socket2::SockRef;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};

use crate::admission::{Admission, Admit, WorkerGate};
use crate::stop::Flag;
use crate::sys::AsSock;

use super::aligned::{Aligned, FILL_LEN, fill};
use super::answer;
use super::close::with_reset;
use super::header::{self, Header, Opening};
use super::plan::{Flows, RecvPlan, rcvlowat};
use super::worker::{Listening, WorkerState, runtime};

/// Body of a receiver worker thread: accept on `listener` and drain every connection the
/// gate admits until `stop`, counting each connection in `flows` when its first bytes
/// arrive; connections the gate refuses are reset at once.
pub(crate) fn recv_worker(
    listener: TcpListener,
    buf: RecvBuffer,
    plan: RecvPlan,
    me: Arc<WorkerState>,
    control: PortControl,
    stop: Flag,
) {
    RECV_BUF.set(buf.0);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return me.fail(format!("start receiver worker: {e}")),
    };
    let PortControl {
        gate: WorkerGate { gate, mut settle },
        flows,
        out,
    } = control;
    let port = Port {
        plan,
        placed: Cell::new(false),
        me: me.clone(),
        out,
        gate,
        flows,
    };
    rt.block_on(async {
        let accept = async {
            listener.set_nonblocking(true)?;
            let listener = tokio::net::TcpListener::from_std(listener)?;
            // Declared after `listener`, so dropped before it closes.
            let _listed = Listening::register(&me, listener.raw_sock());
            loop {
                tokio::select! {
                    r = listener.accept() => match r {
                        Ok((s, peer)) => port.take(s, peer),
                        // Out of descriptors or a connection reset before accept: keep
                        // serving the others, pausing so a persistent error does not spin.
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    },
                    Ok(()) = settle.changed() => {
                        let epoch = *settle.borrow_and_update();
                        port.take_queued(&listener);
                        me.settled.store(epoch, Ordering::Release);
                    }
                }
            }
            #[allow(unreachable_code)]
            Ok::<(), io::Error>(())
        };
        tokio::select! {
            _ = stop.wait() => {}
            r = accept => if let Err(e) = r { me.fail(format!("receiver port: {e}")) },
        }
    });
    // Dropping the runtime cancels the drain tasks and closes their sockets.
}

/// What a receiver worker hears from its controller and tells it.
#[derive(Debug)]
pub(crate) struct PortControl {
    /// Which connections to keep, and settle requests.
    pub gate: WorkerGate,
    /// Connections that have started to carry bytes.
    pub flows: Flows,
    /// What the worker sends, counted apart from what it receives: its reverse (`-R`)
    /// and both-ways (`--bidir`) connections' outgoing bytes.
    pub out: Arc<WorkerState>,
}

/// One receiver port's worker: what it needs to take a connection.
struct Port {
    plan: RecvPlan,
    /// Whether `--placement auto` has seen the first kept connection.
    placed: Cell<bool>,
    me: Arc<WorkerState>,
    out: Arc<WorkerState>,
    gate: Arc<Admission>,
    flows: Flows,
}

impl Port {
    /// Keeps and drains a new connection if the gate admits it, else resets it.
    fn take(&self, s: tokio::net::TcpStream, peer: SocketAddr) {
        match self.gate.admit(peer) {
            Admit::Keep => {}
            Admit::Count => {
                // One call of no bytes: the connections a connection-rate test counts.
                // Closed at once with a FIN: the sender's connect stands (a reset could
                // undo it before the sender looked), and its own reset then ends our
                // orphaned end, so nothing lingers in TIME_WAIT and no descriptor waits
                // on anything: they stay bounded by the accepts in flight.
                let x = self.me.exchanges();
                x.connect_rate.store(true, Ordering::Release);
                self.me.counters.add_many(0, 1);
                return drop(s);
            }
            Admit::Refuse => return with_reset(&s),
        }
        // `--placement auto`: the first kept connection decides, once.
        if self.plan.local_cpu.is_some()
            && !self.placed.replace(true)
            && let Ok(local) = s.local_addr()
        {
            self.me.pin(self.plan.cpu_for_first(local.ip(), peer.ip()));
        }
        if self.plan.no_delay {
            let _ = s.set_nodelay(true);
        }
        // Counted open now, not when the drain task first runs: a start that follows at
        // once must see it. `Open` in the task uncounts it.
        self.me.open.fetch_add(1, Ordering::Release);
        self.me.arrived(peer);
        let ways = Directions {
            me: self.me.clone(),
            out: self.out.clone(),
        };
        let (gate, flows) = (self.gate.clone(), self.flows.clone());
        tokio::spawn(drain(s, self.plan, ways, gate, flows));
    }

    /// Takes every connection already queued on the listener (a settle request). The
    /// accepts go to the kernel directly: tokio's view of the listener only learns of new
    /// connections when its driver next polls, which a busy worker may not have done.
    fn take_queued(&self, listener: &tokio::net::TcpListener) {
        let raw = SockRef::from(listener);
        while let Ok((s, peer)) = raw.accept() {
            let s: TcpStream = s.into();
            let taken = s
                .set_nonblocking(true)
                .and_then(|()| tokio::net::TcpStream::from_std(s));
            if let (Ok(s), Some(peer)) = (taken, peer.as_socket()) {
                self.take(s, peer);
            }
        }
    }
}

thread_local! {
    /// The receive buffer of a receiver worker thread, shared by all its connections: the
    /// tasks of a current-thread runtime take turns, so a thousand connections cost one
    /// buffer, not a thousand. Never read: only the byte count matters.
    static RECV_BUF: RefCell<Aligned<MaybeUninit<u8>>> = const { RefCell::new(Aligned::empty()) };
}

/// A receiver worker thread's buffer, allocated before the worker starts so that a size
/// that cannot be had fails the run at once.
#[derive(Debug)]
pub(crate) struct RecvBuffer(Aligned<MaybeUninit<u8>>);

impl RecvBuffer {
    /// `len` bytes, or an error if the memory cannot be had (never an abort).
    pub(crate) fn new(len: usize) -> io::Result<Self> {
        Aligned::filled(len, MaybeUninit::uninit()).map(Self)
    }
}

/// A receiver worker's two counts: what it receives and what it sends.
struct Directions {
    me: Arc<WorkerState>,
    out: Arc<WorkerState>,
}

/// Serves one connection until it closes: one of our extension's connections opens with
/// a header that says what to do with it; anything else is drained.
async fn drain(
    mut s: tokio::net::TcpStream,
    plan: RecvPlan,
    Directions { me, out }: Directions,
    gate: Arc<Admission>,
    flows: Flows,
) {
    // Declared after `s`, so dropped before it closes: also when the task is cancelled.
    let _open = Open::register(&me, &gate, s.raw_sock());
    match opening(&mut s, &me).await {
        Ok(First::Header(Header::Echo { size })) => {
            let x = me.exchanges();
            x.rr_size.store(u64::from(size), Ordering::Relaxed);
            flows.send_modify(|n| *n += 1);
            // Chosen once the first request is here (a peek: the readiness left from the
            // header could say readable before it): by then the test's connections are all
            // in.
            let _ = s.peek(&mut [0u8; 1]).await;
            if me.open.load(Ordering::Acquire) > 1 {
                return echo(&mut s, &me, size as usize).await;
            }
            let Ok(fill) = fill() else { return };
            let back = answer::on_own_thread(s, &me, size as usize, fill).await;
            // Withdrawn before the socket closes, as when `s` drops.
            drop(_open);
            drop(back);
        }
        Ok(First::Header(Header::Reverse { size })) => {
            // Listed and flagged before the connection counts as flowing: a receiver
            // without sync samples its first edge then, and must see it as a sending one.
            let _listed = Pouring::register(Some(&me), &out, s.raw_sock());
            flows.send_modify(|n| *n += 1);
            pour(&s, &out, size as usize).await;
        }
        Ok(First::Header(Header::Bidir { size })) => {
            // Boxed: a plain connection's task stays as small as it was.
            Box::pin(both_ways(&s, plan, &me, &out, &flows, size as usize)).await;
        }
        Ok(First::Plain { read }) => bulk(&s, plan, &me, &flows, read > 0).await,
        // A header cut short by a reset: nothing more to read.
        Err(_) => {}
    }
}

/// Reads and writes a both-ways connection (`--bidir`) at once; whichever way ends
/// first (the sender closed, or is gone) ends both.
async fn both_ways(
    s: &tokio::net::TcpStream,
    plan: RecvPlan,
    me: &WorkerState,
    out: &WorkerState,
    flows: &Flows,
    size: usize,
) {
    me.ways.both.store(true, Ordering::Release);
    let _listed = Pouring::register(None, out, s.raw_sock());
    tokio::select! {
        () = bulk(s, plan, me, flows, true) => {}
        () = pour(s, out, size) => {}
    }
}

/// How a connection began.
enum First {
    /// With our header, consumed.
    Header(Header),
    /// As a plain stream, whose bytes stay unread for `bulk`, except `read` that began
    /// like a header and had to be read (and counted) to tell.
    Plain { read: usize },
}

/// Looks at a connection's first bytes.
async fn opening(s: &mut tokio::net::TcpStream, me: &WorkerState) -> io::Result<First> {
    let mut head = [0u8; header::LEN];
    let n = s.peek(&mut head).await?;
    match Header::read(&head[..n]) {
        Opening::Payload => return Ok(First::Plain { read: 0 }),
        Opening::Header(h) => {
            s.read_exact(&mut head).await?;
            return Ok(First::Header(h));
        }
        Opening::Partial => {}
    }
    // Too few bytes to tell (a header is written whole, so a peer that stalls here is
    // no sender of ours): read them out rather than peek again, which would spin.
    let mut got = 0;
    while got < header::LEN {
        match s.read(&mut head[got..]).await? {
            0 => break,
            k => got += k,
        }
    }
    match Header::read(&head[..got]) {
        Opening::Header(h) => Ok(First::Header(h)),
        _ => {
            me.counters.add(got);
            Ok(First::Plain { read: got })
        }
    }
}

/// Reads a plain stream until it closes, into this thread's shared buffer (or, with
/// MSG_TRUNC, into nothing at all).
async fn bulk(
    s: &tokio::net::TcpStream,
    plan: RecvPlan,
    me: &WorkerState,
    flows: &Flows,
    mut flowing: bool,
) {
    let flags = crate::sys::socket::recv_flags(plan.skip_copy);
    let sock = SockRef::from(s);
    let mss = crate::sys::socket::tcp_mss(s);
    let len = plan.read.for_mss(mss);
    me.seen.read_len.fetch_max(len, Ordering::Relaxed);
    if let Some(lowat) = rcvlowat(plan.rcvlowat, mss)
        && let Ok(kept) = crate::sys::socket::set_rcvlowat(s, lowat)
    {
        me.seen.rcvlowat.fetch_max(kept, Ordering::Relaxed);
    }
    if flowing {
        flows.send_modify(|n| *n += 1);
    }
    loop {
        let r = s
            .async_io(Interest::READABLE, || {
                RECV_BUF.with_borrow_mut(|b| {
                    let n = len.min(b.len());
                    sock.recv_with_flags(&mut b[..n], flags)
                })
            })
            .await;
        match r {
            Ok(0) => break,
            Ok(n) => {
                me.counters.add(n);
                if !flowing {
                    flowing = true;
                    flows.send_modify(|n| *n += 1);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A reset is how some senders end; either way this connection is done.
            Err(_) => break,
        }
    }
}

/// Answers a request/response connection until it closes: each whole request of `size`
/// bytes read (counted) is answered with `size` bytes, written only once all of the
/// request has come, as a server answers a request it has read. A worker's sole such
/// connection is answered on a thread of its own instead (`answer`).
async fn echo(s: &mut tokio::net::TcpStream, me: &WorkerState, size: usize) {
    let Ok(fill) = fill() else { return };
    let mut requests = header::Requests::new(size);
    loop {
        // Read into the thread's shared buffer, as a plain stream is: only the count
        // matters, and the answer is the thread's shared 'A's.
        let r = s
            .async_io(Interest::READABLE, || {
                RECV_BUF.with_borrow_mut(|b| SockRef::from(&*s).recv_with_flags(&mut b[..], 0))
            })
            .await;
        match r {
            Ok(0) => break,
            Ok(n) => {
                me.counters.add(n);
                for _ in 0..requests.read(n) {
                    if answer(s, &fill, size).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Writes `size` bytes from `chunk`, repeated as often as it takes.
async fn answer(s: &mut tokio::net::TcpStream, chunk: &[u8], size: usize) -> io::Result<()> {
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len());
        s.write_all(&chunk[..n]).await?;
        left -= n;
    }
    Ok(())
}

/// Sends on a reverse (`-R`) or both-ways connection until it fails or the sender
/// closes it, `size` bytes per write, counted in `out`; its bytes count as delivered
/// (TCP_INFO), as a sender's do.
async fn pour(s: &tokio::net::TcpStream, out: &WorkerState, size: usize) {
    let Ok(fill) = fill() else { return };
    let buf = &fill[..size.min(MAX_POUR)];
    let sock = SockRef::from(s);
    loop {
        match s.async_io(Interest::WRITABLE, || sock.send(buf)).await {
            Ok(0) => break,
            Ok(n) => out.counters.add(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Largest write of an answering or reverse connection: all of the thread's fill.
const MAX_POUR: usize = FILL_LEN;

/// A connection this worker sends on, while it is open: listed among the delivering
/// sockets of its sending count (and, for a reverse one, no longer among the receiving
/// ones of its receiving count), and counted open there; when dropped (before the socket
/// closes) what it delivered is kept in `retired`.
struct Pouring<'a> {
    out: &'a WorkerState,
    fd: crate::sys::RawSock,
}

impl<'a> Pouring<'a> {
    /// `unlist`: the receiving count that reads nothing of this connection.
    fn register(
        unlist: Option<&WorkerState>,
        out: &'a WorkerState,
        fd: crate::sys::RawSock,
    ) -> Self {
        fn lock(
            l: &std::sync::Mutex<Vec<crate::sys::RawSock>>,
        ) -> std::sync::MutexGuard<'_, Vec<crate::sys::RawSock>> {
            l.lock().unwrap_or_else(|p| p.into_inner())
        }
        if let Some(me) = unlist {
            lock(&me.sockets.receiving).retain(|&x| x != fd);
        }
        if crate::sys::socket::reports_delivery(fd) {
            lock(&out.sockets.delivering).push(fd);
            out.sockets.counts_delivered.store(true, Ordering::Release);
        }
        out.ways.sends.store(true, Ordering::Release);
        out.open.fetch_add(1, Ordering::Release);
        Self { out, fd }
    }
}

impl Drop for Pouring<'_> {
    fn drop(&mut self) {
        let mut fds = self
            .out
            .sockets
            .delivering
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Under the lock, so no sample sees the connection in neither place.
        let acked = crate::sys::socket::bytes_acked(self.fd).unwrap_or(0);
        self.out.sockets.retired.fetch_add(acked, Ordering::AcqRel);
        fds.retain(|&x| x != self.fd);
        self.out.open.fetch_sub(1, Ordering::Release);
    }
}

/// A receiver connection while it is open: listed in `WorkerState::receiving` and counted as
/// open (worker and gate); dropping it undoes all three before the socket closes, so
/// `sample` never asks about a closed descriptor.
struct Open<'a> {
    me: &'a WorkerState,
    gate: &'a Admission,
    fd: crate::sys::RawSock,
}

impl<'a> Open<'a> {
    /// `Port::take` and the gate have already counted the connection as open.
    fn register(me: &'a WorkerState, gate: &'a Admission, fd: crate::sys::RawSock) -> Self {
        me.sockets
            .receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(fd);
        Self { me, gate, fd }
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.me
            .sockets
            .receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&x| x != self.fd);
        self.me.open.fetch_sub(1, Ordering::Release);
        self.gate.closed();
    }
}
