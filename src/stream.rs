//! The data path: one pinned OS thread per ntttcp worker and the loops that move bytes.
//!
//! * Sender worker: opens its connections, waits for "start", then writes `'A'`-filled
//!   buffers until "stop". One connection: blocking writes with a short send timeout (so
//!   "stop" is seen even against a zero window). Several: non-blocking writes round-robin
//!   and poll() when all are full, so a stalled connection does not stall the others and
//!   a connection costs exactly one descriptor (`--io async`: a tokio task each).
//! * Receiver worker: a current-thread tokio runtime that accepts on its port and drains
//!   every connection it gets into one buffer per worker thread.
//!
//! Counting: each worker owns one `Counters`, written only by its own thread (so plain
//! load+store, no locked instruction) and read by the control plane, which samples it at
//! the edges of the measurement window. Nothing here prints or allocates per I/O.

use std::cell::RefCell;
use std::io::{self, Write};
use std::mem::MaybeUninit;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};
use tokio::io::{AsyncWriteExt, Interest};

use crate::admission::{Admission, WorkerGate};
use crate::config::{IoMode, SockOpts};
use crate::pace::Pacers;
use crate::stop::Flag;
use crate::sys::affinity;
use crate::sys::socket::{ConnInfo, tcp_info};

/// Byte and call counters of one worker; single writer, any number of readers.
#[derive(Debug, Default)]
#[repr(align(128))] // own cache line pair: workers on different cores never share one
pub struct Counters {
    bytes: AtomicU64,
    ops: AtomicU64,
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
        let b = self.bytes.load(Ordering::Relaxed);
        self.bytes.store(b + n as u64, Ordering::Relaxed);
        let o = self.ops.load(Ordering::Relaxed);
        self.ops.store(o + calls, Ordering::Relaxed);
    }

    /// Current (bytes, calls).
    pub fn sample(&self) -> (u64, u64) {
        (
            self.bytes.load(Ordering::Relaxed),
            self.ops.load(Ordering::Relaxed),
        )
    }
}

/// What a worker shares with the control plane.
#[derive(Debug, Default)]
pub struct Worker {
    /// Bytes and calls so far.
    pub counters: Counters,
    /// Sender: connections established. Receiver: connections accepted.
    pub connections: AtomicUsize,
    /// Data connections currently open.
    pub open: AtomicUsize,
    /// The worker thread has returned.
    pub finished: AtomicBool,
    /// Sender: TCP_INFO of each connection, read when the test stopped.
    pub conn_info: Mutex<Vec<ConnInfo>>,
    /// The socket options the kernel applied, read back from a data socket.
    pub applied: Mutex<Option<Applied>>,
    /// Receiver: peer addresses of the connections accepted since the last report.
    pub peers: Mutex<Vec<SocketAddr>>,
    /// UDP receiver: loss, duplicate, reorder and jitter accounting.
    pub udp: crate::udp::Counters,
    /// TCP sender: its connections' descriptors, while they are open (published once all
    /// are up, withdrawn at stop before they close); `sample` reads what each delivered.
    pub delivering: Mutex<Vec<std::os::fd::RawFd>>,
    /// TCP receiver: its open connections' descriptors (added when accepted, removed
    /// under this lock before they close); `sample` adds what each holds unread.
    pub receiving: Mutex<Vec<std::os::fd::RawFd>>,
    /// Receiver: the last settle request this worker has answered (`Admission`).
    pub settled: AtomicU64,
    failure: Mutex<Option<String>>,
}

/// A worker's counters at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Bytes that count: on a TCP sender those its connections have delivered (the peer
    /// acknowledged them), elsewhere those moved through the socket calls.
    pub bytes: u64,
    /// TCP sender: bytes written into the send buffers (the C tools' figure); None where
    /// `bytes` already is what the calls moved.
    pub written: Option<u64>,
    /// Completed calls.
    pub ops: u64,
    /// UDP receive accounting (all zero otherwise).
    pub udp: crate::udp::Tally,
}

impl Worker {
    /// Samples the counters.
    pub fn sample(&self) -> Sample {
        // Delivered first: what was written by the time the counter is read covers it.
        let delivered = {
            let fds = self.delivering.lock().unwrap_or_else(|p| p.into_inner());
            (!fds.is_empty()).then(|| {
                fds.iter()
                    .filter_map(|&fd| crate::sys::socket::bytes_acked(fd))
                    .sum::<u64>()
            })
        };
        let (moved, ops) = self.counters.sample();
        // What the receiver's kernel holds unread was delivered too: the sender counts it.
        let unread: u64 = {
            let fds = self.receiving.lock().unwrap_or_else(|p| p.into_inner());
            fds.iter().map(|&fd| crate::sys::socket::unread(fd)).sum()
        };
        Sample {
            bytes: delivered.unwrap_or(moved + unread),
            written: delivered.map(|_| moved),
            ops,
            udp: self.udp.sample(),
        }
    }

    /// Receiver: a new connection (UDP: flow) from `peer`.
    pub(crate) fn arrived(&self, peer: SocketAddr) {
        self.peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(peer);
        self.connections.fetch_add(1, Ordering::Release);
    }

    /// Records the first failure of this worker.
    pub fn fail(&self, msg: String) {
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(msg);
    }

    /// The first failure, if any.
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Socket options as the kernel set them (Linux doubles SO_SNDBUF/SO_RCVBUF requests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    /// TCP_NODELAY as read back.
    pub no_delay: bool,
    /// SO_SNDBUF as read back, bytes.
    pub send_buffer: usize,
    /// SO_RCVBUF as read back, bytes.
    pub recv_buffer: usize,
}

impl Applied {
    /// Reads the options of `sock`.
    pub fn read(sock: &Socket) -> Self {
        Self {
            no_delay: sock.tcp_nodelay().unwrap_or(false),
            send_buffer: sock.send_buffer_size().unwrap_or(0),
            recv_buffer: sock.recv_buffer_size().unwrap_or(0),
        }
    }
}

/// Sets the buffer sizes of `opts` on `sock` (before connect or listen, so window
/// scaling is negotiated for them).
pub(crate) fn set_buffers(sock: &Socket, opts: &SockOpts) -> io::Result<()> {
    if let Some(b) = opts.send_buffer {
        sock.set_send_buffer_size(b)?;
    }
    if let Some(b) = opts.recv_buffer {
        sock.set_recv_buffer_size(b)?;
    }
    Ok(())
}

/// Sleeps `wait` in slices, returning early once `stop` is set.
pub(crate) fn nap(wait: Duration, stop: &Flag) {
    let until = Instant::now() + wait;
    while !stop.is_set() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// Marks a worker finished when its thread ends, and failed if it ends by panicking.
pub(crate) struct FinishGuard<'a>(pub(crate) &'a Worker);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail("worker thread panicked".into());
        }
        self.0.finished.store(true, Ordering::Release);
    }
}

/// Everything a sender worker needs.
#[derive(Debug, Clone)]
pub struct SendPlan {
    /// Receiver data port address.
    pub target: SocketAddr,
    /// Connections this worker owns.
    pub conns: usize,
    /// CPU to pin to.
    pub cpu: usize,
    /// Bytes per write.
    pub size: usize,
    /// Blocking or async data path.
    pub io: IoMode,
    /// When connecting must be done.
    pub connect_deadline: Instant,
    /// Socket options to set on every connection.
    pub opts: SockOpts,
    /// Rate limits this worker obeys.
    pub pacers: Pacers,
    /// What every send writes (shared by all workers).
    pub payload: Arc<Payload>,
    /// Local address to bind each connection to (`-a`), with its device.
    pub source: Option<(std::net::IpAddr, Option<String>)>,
    /// First pinned source port of this worker (`-f`): connection i uses it + i.
    pub source_port: Option<u16>,
    /// Paces connection setup over all workers.
    pub gate: Arc<crate::pace::ConnectGate>,
    /// UDP: datagrams per send (more than one with segmentation offload, GSO).
    pub datagrams_per_send: usize,
}

/// What a sender writes: a buffer of `'A'` (copied into the kernel on every send) or an
/// in-memory file of them that sendfile() hands over without that copy (`-Z`). One
/// payload serves every worker of a sender: it is only read.
///
/// The file holds `SPAN` sends' worth and each send starts where the last ended: pages
/// still referenced by queued segments are not handed out again at once, which measured
/// faster than resending the first `len` bytes every time.
#[derive(Debug)]
pub enum Payload {
    /// A buffer copied by send().
    Copy(Box<[u8]>),
    /// An in-memory file for sendfile(), and the bytes per send.
    File(std::fs::File, usize),
}

/// Sends' worth of data in a `-Z` file (1 MiB with the default 128 KiB sends).
const SPAN: usize = 8;

/// `len` copies of `value` (bytes of a buffer), or an error if the memory cannot be had
/// (never an abort).
pub(crate) fn filled<T: Clone>(len: usize, value: T) -> io::Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!("cannot allocate a {len}-byte buffer"),
        )
    })?;
    v.resize(len, value);
    Ok(v)
}

impl Payload {
    /// `size` bytes per send, copied or (`sendfile`) from an in-memory file.
    pub fn new(size: usize, sendfile: bool) -> io::Result<Self> {
        Ok(if sendfile {
            let f = crate::sys::socket::memfd_filled(size * (SPAN + 1), b'A')
                .map_err(|e| io::Error::new(e.kind(), format!("-Z in-memory file: {e}")))?;
            Self::File(f, size)
        } else {
            Self::Copy(filled(size, b'A')?.into_boxed_slice())
        })
    }

    fn len(&self) -> usize {
        match self {
            Self::Copy(b) => b.len(),
            Self::File(_, n) => *n,
        }
    }

    /// Where the next send of a file starts after `n` bytes were sent from `at`.
    fn advance(&self, at: &mut usize, n: usize) {
        if let Self::File(_, size) = self {
            *at = (*at + n) % (size * SPAN);
        }
    }

    /// One blocking send of `len` bytes (`at`: the file offset it starts from).
    fn send(&self, s: &TcpStream, len: usize, at: &mut usize) -> io::Result<usize> {
        let n = match self {
            Self::Copy(b) => (&*s).write(&b[..len])?,
            Self::File(f, _) => crate::sys::socket::sendfile(s.as_fd(), f, *at, len)?,
        };
        self.advance(at, n);
        Ok(n)
    }

    /// One send of `len` bytes when the socket is writable.
    async fn send_async(
        &self,
        s: &mut tokio::net::TcpStream,
        len: usize,
        at: &mut usize,
    ) -> io::Result<usize> {
        let n = match self {
            Self::Copy(b) => s.write(&b[..len]).await?,
            Self::File(f, _) => {
                let from = *at;
                s.async_io(Interest::WRITABLE, || {
                    crate::sys::socket::sendfile(s.as_fd(), f, from, len)
                })
                .await?
            }
        };
        self.advance(at, n);
        Ok(n)
    }
}

/// Send timeout of blocking writes: how late a blocked writer may notice "stop".
pub(crate) const WRITE_POLL: Duration = Duration::from_millis(100);

/// Body of a sender worker thread; `index` is its thread number (for TCP_INFO rows).
pub fn send_worker(index: usize, plan: SendPlan, me: Arc<Worker>, start: Flag, stop: Flag) {
    let _guard = FinishGuard(&me);
    affinity::pin_current(plan.cpu);
    let mut socks = Vec::with_capacity(plan.conns);
    for i in 0..plan.conns {
        let local = local_bind(&plan, i);
        let slot = plan.gate.enter(plan.connect_deadline);
        let r = match slot {
            Some(_) => connect(
                plan.target,
                plan.connect_deadline,
                &stop,
                &plan.opts,
                local.as_ref(),
            ),
            None => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no connection before the connect deadline (waiting to connect)",
            )),
        };
        drop(slot);
        match r {
            Ok(s) => {
                let mut applied = me.applied.lock().unwrap_or_else(|p| p.into_inner());
                applied.get_or_insert_with(|| Applied::read(&SockRef::from(&s)));
                drop(applied);
                socks.push(s);
                me.connections.fetch_add(1, Ordering::Release);
                me.open.fetch_add(1, Ordering::Release);
            }
            Err(e) => {
                if !stop.is_set() {
                    me.fail(format!("connect to receiver {}: {e}", plan.target));
                }
                return;
            }
        }
    }
    // The control plane reads what each connection delivered from these descriptors: the
    // sockets stay open until "stop", whatever happens to them meanwhile.
    *me.delivering.lock().unwrap_or_else(|p| p.into_inner()) =
        socks.iter().map(|s| s.as_raw_fd()).collect();
    let _withdraw = Withdraw(&me);
    if !wait_start(&start, &stop) {
        return;
    }
    let (payload, pacers) = (&*plan.payload, &plan.pacers);
    let (socks, result) = if plan.io == IoMode::Async {
        let payload = plan.payload.clone();
        send_async(socks, payload, plan.target, &me, &stop, pacers)
    } else {
        let polled = plan.io == IoMode::Auto && socks.len() > 1;
        let r = send_round_robin(&socks, polled, payload, &me.counters, &stop, pacers);
        (socks, r)
    };
    // TCP_INFO from the sockets themselves: no descriptor is ever duplicated.
    let info = socks.iter().filter_map(|s| {
        let port = s.local_addr().map_or(0, |a| a.port());
        tcp_info(s, index, port)
    });
    me.conn_info
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(info);
    if let Err(e) = result
        && !stop.is_set()
    {
        me.fail(format!("send to receiver {}: {e}", plan.target));
    }
    // A failed worker keeps its sockets (and so its descriptors' meaning) until "stop".
    while !stop.wait_timeout(WRITE_POLL) {}
    drop(_withdraw);
    drop(socks);
}

/// Withdraws a worker's published descriptors when dropped, before its sockets close.
struct Withdraw<'a>(&'a Worker);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.0
            .delivering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// Errors after which a blocking loop just tries again: a full buffer, a timeout that
/// lets it poll "stop", a signal.
pub(crate) fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Counts `n` bytes just sent in `calls` calls (UDP: datagrams) and sleeps as long as
/// the rate limits ask (cut short by "stop").
pub(crate) fn sent(n: usize, calls: u64, counters: &Counters, pacers: &Pacers, stop: &Flag) {
    counters.add_many(n, calls);
    let wait = pacers.after(n);
    if !wait.is_zero() {
        nap(wait, stop);
    }
}

/// Waits for "start"; false if "stop" came first.
pub(crate) fn wait_start(start: &Flag, stop: &Flag) -> bool {
    while !start.wait_timeout(Duration::from_millis(100)) {
        if stop.is_set() {
            return false;
        }
    }
    true
}

/// Where connection `i` of a worker binds: the `-a` address and/or its `-f` port.
pub(crate) fn local_bind(plan: &SendPlan, i: usize) -> Option<(SocketAddr, Option<String>)> {
    if plan.source.is_none() && plan.source_port.is_none() {
        return None;
    }
    let (ip, device) = match &plan.source {
        Some((ip, dev)) => (*ip, dev.clone()),
        None if plan.target.is_ipv6() => (std::net::Ipv6Addr::UNSPECIFIED.into(), None),
        None => (std::net::Ipv4Addr::UNSPECIFIED.into(), None),
    };
    let port = plan.source_port.map_or(0, |p| p + i as u16);
    Some((SocketAddr::new(ip, port), device))
}

/// A sender's data socket towards `target`: `opts`' buffer sizes, bound to `local` (the
/// `-a` address and its device, and/or a `-f` port) when given.
pub(crate) fn sender_socket(
    target: SocketAddr,
    ty: Type,
    proto: Protocol,
    opts: &SockOpts,
    local: Option<&(SocketAddr, Option<String>)>,
) -> io::Result<Socket> {
    let sock = Socket::new(Domain::for_address(target), ty, Some(proto))?;
    set_buffers(&sock, opts)?;
    if let Some((addr, device)) = local {
        // A pinned port may still be in TIME_WAIT from the previous run.
        sock.set_reuse_address(true)?;
        if let Some(dev) = device {
            sock.bind_device(Some(dev.as_bytes()))?;
        }
        sock.bind(&SockAddr::from(*addr))
            .map_err(|e| io::Error::new(e.kind(), format!("bind source {addr}: {e}")))?;
    }
    Ok(sock)
}

/// Connects, retrying "refused" (the receiver may still be starting) until the deadline.
fn connect(
    target: SocketAddr,
    deadline: Instant,
    stop: &Flag,
    opts: &SockOpts,
    local: Option<&(SocketAddr, Option<String>)>,
) -> io::Result<TcpStream> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no connection before the connect deadline",
            ));
        }
        let sock = sender_socket(target, Type::STREAM, Protocol::TCP, opts, local)?;
        match sock.connect_timeout(&SockAddr::from(target), left) {
            Ok(()) => {
                sock.set_tcp_nodelay(opts.no_delay)?;
                if let Some(rate) = opts.pacing_rate {
                    crate::sys::socket::set_max_pacing_rate(&sock, rate)?;
                }
                let s: TcpStream = sock.into();
                s.set_write_timeout(Some(WRITE_POLL))?;
                return Ok(s);
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && !stop.is_set() => {
                let pause = Duration::from_millis(100).min(left);
                std::thread::sleep(pause);
                if Instant::now() >= deadline {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// One connection's progress through the buffer it is sending: NTttcp counts a
/// completion when a whole buffer has been written, however many calls that took.
#[derive(Debug, Clone, Copy, Default)]
struct Buffer {
    done: usize,
}

impl Buffer {
    /// Bytes of a `len`-byte buffer still to write.
    fn left(&self, len: usize) -> usize {
        len - self.done
    }

    /// Records `n` more bytes written; returns the completions (0 or 1) that made.
    fn wrote(&mut self, n: usize, len: usize) -> u64 {
        self.done += n;
        if self.done >= len {
            self.done = 0;
            1
        } else {
            0
        }
    }
}

/// Writes every socket in turn until "stop". Blocking sockets (one connection, or
/// `--io blocking`) wait in write() up to their send timeout; with `polled` the sockets
/// are non-blocking and the worker waits in poll() only when every one is full, so a
/// stalled connection never holds up the others.
fn send_round_robin(
    socks: &[TcpStream],
    polled: bool,
    payload: &Payload,
    counters: &Counters,
    stop: &Flag,
    pacers: &Pacers,
) -> io::Result<()> {
    for s in socks.iter().filter(|_| polled) {
        s.set_nonblocking(true)?;
    }
    let mut writable = polled.then(|| crate::sys::socket::Writable::new(socks));
    let len = pacers.chunk(payload.len());
    let mut at = 0;
    let mut buffers = vec![Buffer::default(); socks.len()];
    while !stop.is_set() {
        let mut moved = false;
        for (s, b) in socks.iter().zip(&mut buffers) {
            match payload.send(s, b.left(len), &mut at) {
                Ok(n) => {
                    sent(n, b.wrote(n, len), counters, pacers, stop);
                    moved = true;
                }
                Err(e) if retry(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if let (false, Some(w)) = (moved, writable.as_mut()) {
            w.wait(WRITE_POLL)?;
        }
    }
    Ok(())
}

/// `--io async`: a current-thread tokio runtime with one task per connection. The tasks
/// hand their sockets back when "stop" comes, for the TCP_INFO read.
fn send_async(
    socks: Vec<TcpStream>,
    payload: Arc<Payload>,
    target: SocketAddr,
    me: &Arc<Worker>,
    stop: &Flag,
    pacers: &Pacers,
) -> (Vec<TcpStream>, io::Result<()>) {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return (socks, Err(e)),
    };
    let len = pacers.chunk(payload.len());
    rt.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        let mut back = Vec::with_capacity(socks.len());
        for s in socks {
            let mut s = match s
                .set_nonblocking(true)
                .and_then(|()| tokio::net::TcpStream::from_std(s))
            {
                Ok(s) => s,
                Err(e) => return (back, Err(e)),
            };
            let (payload, me, pacers, stop) =
                (payload.clone(), me.clone(), pacers.clone(), stop.clone());
            tasks.spawn(async move {
                let pump = async {
                    let (mut at, mut b) = (0, Buffer::default());
                    loop {
                        let n = payload.send_async(&mut s, b.left(len), &mut at).await?;
                        me.counters.add_many(n, b.wrote(n, len));
                        let wait = pacers.after(n);
                        if !wait.is_zero() {
                            tokio::time::sleep(wait).await;
                        }
                    }
                };
                let r: io::Result<()> = tokio::select! {
                    _ = stop.wait() => Ok(()),
                    r = pump => r,
                };
                (s, r)
            });
        }
        let mut result = Ok(());
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok((s, r)) => {
                    if let Err(e) = r {
                        // One connection failed: say so now, the others go on until stop.
                        me.fail(format!("send to receiver {target}: {e}"));
                        result = result.and(Err(e));
                    }
                    back.extend(s.into_std().ok());
                }
                Err(e) => result = result.and(Err(io::Error::other(e.to_string()))),
            }
        }
        (back, result)
    })
}

/// Creates a listening socket (SO_REUSEADDR, deep backlog, `opts`' buffer sizes).
pub fn listen(addr: SocketAddr, opts: &SockOpts) -> io::Result<TcpListener> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    // Accepted connections inherit the buffer sizes (and TCP_NODELAY) of the listener.
    set_buffers(&sock, opts)?;
    sock.set_tcp_nodelay(opts.no_delay)?;
    if addr.is_ipv6() {
        sock.set_only_v6(false).ok();
    }
    sock.bind(&SockAddr::from(addr))?;
    sock.listen(4096)?;
    Ok(sock.into())
}

/// Counts data connections that have started to carry bytes, over all receiver workers.
/// A no-sync receiver starts its clock when it grows: that lines our clock up with the
/// sender's (which starts once all its connections are up) better than the first accept.
pub type Flows = Arc<tokio::sync::watch::Sender<u64>>;

/// How a receiver worker reads.
#[derive(Debug, Clone, Copy)]
pub struct RecvPlan {
    /// CPU to pin to.
    pub cpu: usize,
    /// Bytes per recv() call.
    pub size: usize,
    /// TCP_NODELAY on accepted connections.
    pub no_delay: bool,
    /// `--skip-rx-copy`: discard with MSG_TRUNC instead of copying.
    pub skip_copy: bool,
}

/// Body of a receiver worker thread: accept on `listener` and drain every connection the
/// gate admits until `stop`, counting each connection in `flows` when its first bytes
/// arrive; connections the gate refuses are reset at once.
pub fn recv_worker(
    listener: TcpListener,
    buf: RecvBuffer,
    plan: RecvPlan,
    me: Arc<Worker>,
    control: PortControl,
    stop: Flag,
) {
    let _guard = FinishGuard(&me);
    affinity::pin_current(plan.cpu);
    RECV_BUF.set(buf.0);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return me.fail(format!("start receiver worker: {e}")),
    };
    let PortControl {
        gate: WorkerGate { gate, mut settle },
        flows,
    } = control;
    let port = Port {
        plan,
        me: me.clone(),
        gate,
        flows,
    };
    rt.block_on(async {
        let accept = async {
            listener.set_nonblocking(true)?;
            let listener = tokio::net::TcpListener::from_std(listener)?;
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
pub struct PortControl {
    /// Which connections to keep, and settle requests.
    pub gate: WorkerGate,
    /// Connections that have started to carry bytes.
    pub flows: Flows,
}

/// One receiver port's worker: what it needs to take a connection.
struct Port {
    plan: RecvPlan,
    me: Arc<Worker>,
    gate: Arc<Admission>,
    flows: Flows,
}

impl Port {
    /// Keeps and drains a new connection if the gate admits it, else resets it.
    fn take(&self, s: tokio::net::TcpStream, peer: SocketAddr) {
        if !self.gate.admit() {
            // RST rather than FIN: nothing lingers in TIME_WAIT on our side.
            let _ = SockRef::from(&s).set_linger(Some(Duration::ZERO));
            return;
        }
        if self.plan.no_delay {
            let _ = s.set_nodelay(true);
        }
        // Counted open now, not when the drain task first runs: a start that follows at
        // once must see it. `Open` in the task uncounts it.
        self.me.open.fetch_add(1, Ordering::Release);
        self.me.arrived(peer);
        let (me, gate, flows) = (self.me.clone(), self.gate.clone(), self.flows.clone());
        tokio::spawn(drain(s, self.plan, me, gate, flows));
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
    static RECV_BUF: RefCell<Vec<MaybeUninit<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A receiver worker thread's buffer, allocated before the worker starts so that a size
/// that cannot be had fails the run at once.
#[derive(Debug)]
pub struct RecvBuffer(Vec<MaybeUninit<u8>>);

impl RecvBuffer {
    /// `len` bytes, or an error if the memory cannot be had (never an abort).
    pub fn new(len: usize) -> io::Result<Self> {
        filled(len, MaybeUninit::uninit()).map(Self)
    }
}

/// Reads one connection until it closes, into this thread's shared buffer (or, with
/// MSG_TRUNC, into nothing at all).
async fn drain(
    s: tokio::net::TcpStream,
    plan: RecvPlan,
    me: Arc<Worker>,
    gate: Arc<Admission>,
    flows: Flows,
) {
    let mut flowing = false;
    let flags = if plan.skip_copy { libc::MSG_TRUNC } else { 0 };
    let sock = SockRef::from(&s);
    // Declared after `s`, so dropped before it closes: also when the task is cancelled.
    let _open = Open::register(&me, &gate, s.as_raw_fd());
    loop {
        let r = s
            .async_io(Interest::READABLE, || {
                RECV_BUF.with_borrow_mut(|b| sock.recv_with_flags(b, flags))
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

/// A receiver connection while it is open: listed in `Worker::receiving` and counted as
/// open (worker and gate); dropping it undoes all three before the socket closes, so
/// `sample` never asks about a closed descriptor.
struct Open<'a> {
    me: &'a Worker,
    gate: &'a Admission,
    fd: std::os::fd::RawFd,
}

impl<'a> Open<'a> {
    /// `Port::take` and the gate have already counted the connection as open.
    fn register(me: &'a Worker, gate: &'a Admission, fd: std::os::fd::RawFd) -> Self {
        me.receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(fd);
        Self { me, gate, fd }
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.me
            .receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&x| x != self.fd);
        self.me.open.fetch_sub(1, Ordering::Release);
        self.gate.closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_completes_once_when_all_of_it_is_written() {
        let mut b = Buffer::default();
        assert_eq!(b.left(100), 100);
        assert_eq!(b.wrote(60, 100), 0, "a short write is no completion");
        assert_eq!(b.left(100), 40, "the rest of the buffer goes next");
        assert_eq!(b.wrote(40, 100), 1);
        assert_eq!((b.left(100), b.wrote(100, 100)), (100, 1));
    }
}
