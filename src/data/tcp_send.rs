//! A TCP sender worker: opens its connections, waits for "start", then writes `'A'`-filled
//! buffers until "stop". One connection: blocking writes with a short send timeout (so
//! "stop" is seen even against a zero window). Several: non-blocking writes round-robin
//! and poll() when all are full, so a stalled connection does not stall the others and
//! a connection costs exactly one descriptor (`--io async`: a tokio task each).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use socket2::{Protocol, SockAddr, SockRef, Type};

use crate::config::{IoMode, Lowat, SockOpts};
use crate::pace::Pacers;
use crate::stop::Flag;
use crate::sys::AsSock;
use crate::sys::socket::tcp_info;

use super::counters::Counters;
use super::header::Header;
use super::plan::{Payload, SendPlan};
use super::sending::{WRITE_POLL, local_bind, pace, sender_socket, transient, wait_start};
use super::worker::{Applied, WorkerState, runtime};

/// Body of a sender worker thread; `index` is its thread number (for TCP_INFO rows).
pub(crate) fn send_worker(
    index: usize,
    plan: SendPlan,
    me: Arc<WorkerState>,
    start: Flag,
    stop: Flag,
) {
    let Some(socks) = open_all(&plan, &me, &stop) else {
        return;
    };
    // The control plane reads what each connection delivered from these descriptors: the
    // sockets stay open until "stop", whatever happens to them meanwhile.
    *me.sockets
        .delivering
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = delivering(&socks);
    let _withdraw = Withdraw(&me);
    if !wait_start(&start, &stop) {
        return;
    }
    let (payload, pacers) = (&*plan.payload, &plan.pacers);
    let (socks, result) = if plan.io == IoMode::Async {
        let payload = plan.payload.clone();
        send_async(socks, payload, plan.target, &me, &stop, pacers)
    } else {
        let polled = plan.io == IoMode::Auto;
        let r = send_round_robin(&socks, polled, payload, &me.counters, &stop, pacers);
        (socks, r)
    };
    wind_up(index, &socks, result, "send to", &plan, &me, &stop);
    drop(_withdraw);
    drop(socks);
}

/// The end of a TCP sender-side worker's test: each connection's TCP_INFO (read from the
/// sockets themselves: no descriptor is ever duplicated), `result` as the worker's failure
/// ("{doing} receiver ...") unless "stop" came first, then the wait for "stop": a failed
/// worker keeps its sockets (and so its descriptors' meaning) until then.
pub(super) fn wind_up(
    index: usize,
    socks: &[TcpStream],
    result: io::Result<()>,
    doing: &str,
    plan: &SendPlan,
    me: &WorkerState,
    stop: &Flag,
) {
    let info = socks.iter().filter_map(|s| {
        let port = s.local_addr().map_or(0, |a| a.port());
        tcp_info(s, index, port)
    });
    me.seen
        .conn_info
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(info);
    if let Err(e) = result
        && !stop.is_set()
    {
        me.fail_io(format!("{doing} receiver {}", plan.target), &e);
    }
    while !stop.wait_timeout(WRITE_POLL) {}
}

/// A worker's connections of one of our extension's tests, each opened with `head`;
/// None after a failure, which the worker has recorded.
pub(super) fn open_announced(
    plan: &SendPlan,
    me: &WorkerState,
    stop: &Flag,
    head: Header,
) -> Option<Vec<TcpStream>> {
    let socks = open_all(plan, me, stop)?;
    let head = head.encode();
    match socks.iter().try_for_each(|mut s| s.write_all(&head)) {
        Ok(()) => Some(socks),
        Err(e) => {
            me.fail_io(format!("send to receiver {}", plan.target), &e);
            None
        }
    }
}

/// Opens a worker's connections one after another (each through the connect gate), and
/// counts them; None after a failure, which the worker has recorded.
fn open_all(plan: &SendPlan, me: &WorkerState, stop: &Flag) -> Option<Vec<TcpStream>> {
    let mut socks = Vec::with_capacity(plan.conns);
    for i in 0..plan.conns {
        let local = local_bind(plan, i);
        let slot = plan.gate.enter(plan.connect_deadline);
        let r = match slot {
            Some(_) => connect(
                plan.target,
                plan.connect_deadline,
                stop,
                (&plan.opts, plan.sole),
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
                let mut applied = me.seen.applied.lock().unwrap_or_else(|p| p.into_inner());
                applied.get_or_insert_with(|| Applied::read(&SockRef::from(&s)));
                drop(applied);
                socks.push(s);
                me.connections.fetch_add(1, Ordering::Release);
                me.open.fetch_add(1, Ordering::Release);
            }
            Err(e) => {
                if !stop.is_set() {
                    me.fail_io(format!("connect to receiver {}", plan.target), &e);
                }
                return None;
            }
        }
    }
    Some(socks)
}

/// The handles of `socks` the control plane can read delivered bytes from (all of them on
/// Linux; none where the OS does not say, and then the worker's written bytes count).
pub(super) fn delivering(socks: &[TcpStream]) -> Vec<crate::sys::RawSock> {
    socks
        .iter()
        .map(|s| s.raw_sock())
        .filter(|&s| crate::sys::socket::reports_delivery(s))
        .collect()
}

/// Withdraws a worker's published descriptors when dropped, before its sockets close;
/// what they delivered stays counted (`retired`), so that a sample taken after (a late
/// edge on a loaded machine) still gives delivered bytes, not the bytes written.
pub(super) struct Withdraw<'a>(pub(super) &'a WorkerState);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let mut fds = self
            .0
            .sockets
            .delivering
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if fds.is_empty() {
            return;
        }
        let acked: u64 = fds
            .iter()
            .filter_map(|&fd| crate::sys::socket::bytes_acked(fd))
            .sum();
        self.0.sockets.retired.fetch_add(acked, Ordering::AcqRel);
        self.0
            .sockets
            .counts_delivered
            .store(true, Ordering::Release);
        fds.clear();
    }
}

/// Connects, retrying "refused" (the receiver may still be starting) until the deadline;
/// `sole`: this is the sender's only data connection (`notsent_lowat`).
fn connect(
    target: SocketAddr,
    deadline: Instant,
    stop: &Flag,
    (opts, sole): (&SockOpts, bool),
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
                if let Some(bytes) =
                    notsent_lowat(opts.notsent_lowat, crate::sys::socket::tcp_mss(&sock), sole)
                {
                    crate::sys::socket::set_notsent_lowat(&sock, bytes)?;
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

/// The TCP_NOTSENT_LOWAT to set on a connection whose segments are `mss` bytes (None:
/// leave the kernel's); `sole`: the sender's only data connection. By path: 64 KiB where
/// segments are large (loopback, 64 KiB MTUs: one stream x1.7 against 128 KiB, two x1.7,
/// four x1.6); 128 KiB where they are NIC-sized and the sender has several connections
/// (veth at 1500 bytes: 64 KiB lost x0.86 at two streams); the kernel's for a sole
/// connection over NIC-sized segments. Its writer then waits on the receiver's
/// acknowledgements at every 128 KiB, each wake-up on the path's critical path with no
/// other writer to cover it: one veth stream measured x0.96 on one Intel VM and x0.76 on an
/// AMD one whose cross-core wake-up costs 32 us (docs/benchmarks.md).
fn notsent_lowat(how: Lowat, mss: Option<u32>, sole: bool) -> Option<usize> {
    let large = mss.is_some_and(|m| m > LARGE_SEGMENTS);
    let by_path = match (large, sole) {
        (true, _) => Some(64 << 10),
        (false, false) => Some(128 << 10),
        (false, true) => None,
    };
    how.bytes(by_path)
}

/// Segments above this size (TCP_MAXSEG, read just after connect, when Linux reports
/// 32,741 bytes on loopback and the MTU's worth on a NIC, 8,948 at 9000 bytes) take the
/// smaller TCP_NOTSENT_LOWAT.
const LARGE_SEGMENTS: u32 = 16 << 10;

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

    /// Records `n` more bytes written and counts them: the bytes at once, the completion
    /// once the buffer of `len` bytes is all written.
    fn wrote(&mut self, n: usize, len: usize, counters: &Counters) {
        self.done += n;
        let finished = self.done >= len;
        if finished {
            self.done = 0;
        }
        counters.add_toward(n, finished.then_some(len));
    }
}

/// Writes every socket in turn until "stop". Blocking sockets (`--io blocking`) wait in
/// write() up to their send timeout; with `polled` (the default, one connection or
/// several) the sockets are non-blocking and the worker waits in poll() only when every
/// one is full, so a stalled connection never holds up the others. A sole connection
/// gains too: x1.10 over one veth stream and x1.01 on loopback against blocking writes
/// on an AMD VM (docs/benchmarks.md), where a write that waits for room inside the
/// kernel holds the socket through each wake-up.
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
                    b.wrote(n, len, counters);
                    pace(n, pacers, stop);
                    moved = true;
                }
                Err(e) if transient(&e) => {}
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
    me: &Arc<WorkerState>,
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
                        b.wrote(n, len, &me.counters);
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
                        me.fail_io(format!("send to receiver {target}"), &e);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_connection_gets_the_notsent_lowat_it_is_given() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        let soon = Instant::now() + Duration::from_secs(30);
        let opts = |notsent_lowat| SockOpts {
            no_delay: false,
            pacing_rate: None,
            send_buffer: None,
            recv_buffer: None,
            notsent_lowat,
            rcvlowat: Lowat::Kernel,
            ..SockOpts::default()
        };
        let connected = |o| connect(at, soon, &Flag::default(), (&opts(o), false), None);
        if !crate::sys::socket::LOW_WATER_MARKS {
            // Where the OS has no TCP_NOTSENT_LOWAT, one asked for fails the connection,
            // and none asked for leaves it alone.
            assert!(connected(Lowat::Fixed(98_304)).is_err());
            assert!(connected(Lowat::Kernel).is_ok());
            return;
        }
        let lowat = |o| crate::sys::socket::notsent_lowat(&connected(o).unwrap()).unwrap();
        assert_eq!(lowat(Lowat::Fixed(98_304)), 98_304);
        // 0 = the socket has no value of its own: net.ipv4.tcp_notsent_lowat applies.
        assert_eq!(lowat(Lowat::Kernel), 0, "leaves the kernel's setting");
        assert_eq!(lowat(Lowat::ByPath), 64 << 10, "loopback's large segments");
    }

    #[test]
    fn the_default_notsent_lowat_follows_the_segment_size() {
        let by = |mss| notsent_lowat(Lowat::ByPath, mss, false);
        assert_eq!(
            by(Some(32_741)),
            Some(64 << 10),
            "loopback, just after connect"
        );
        assert_eq!(by(Some(65_483)), Some(64 << 10));
        assert_eq!(by(Some((16 << 10) + 1)), Some(64 << 10));
        assert_eq!(by(Some(16 << 10)), Some(128 << 10));
        assert_eq!(by(Some(8948)), Some(128 << 10), "9000-byte MTU");
        assert_eq!(by(Some(1448)), Some(128 << 10), "1500-byte MTU");
        assert_eq!(by(None), Some(128 << 10), "unknown");
        assert_eq!(notsent_lowat(Lowat::Fixed(1), Some(65_483), false), Some(1));
        assert_eq!(notsent_lowat(Lowat::Kernel, Some(1448), false), None);
        // A sole connection: large segments keep 64 KiB, NIC-sized ones the kernel's,
        // and a given size stays given.
        let sole = |how, mss| notsent_lowat(how, mss, true);
        assert_eq!(sole(Lowat::ByPath, Some(32_741)), Some(64 << 10));
        assert_eq!(sole(Lowat::ByPath, Some(1448)), None, "one veth stream");
        assert_eq!(sole(Lowat::ByPath, None), None);
        assert_eq!(sole(Lowat::Fixed(131_072), Some(1448)), Some(131_072));
        assert_eq!(sole(Lowat::Kernel, Some(32_741)), None);
    }

    #[test]
    fn a_buffer_completes_once_when_all_of_it_is_written() {
        let (mut b, c) = (Buffer::default(), Counters::default());
        assert_eq!(b.left(100), 100);
        b.wrote(60, 100, &c);
        // A window edge here sees the bytes move, but no completion and none of them
        // whole: bytes per completion stays the buffer's length at any edge.
        assert_eq!((c.sample(), c.whole()), ((60, 0), 0), "a short write");
        assert_eq!(b.left(100), 40, "the rest of the buffer goes next");
        b.wrote(40, 100, &c);
        assert_eq!((c.sample(), c.whole()), ((100, 1), 100));
        assert_eq!(b.left(100), 100);
        b.wrote(100, 100, &c);
        assert_eq!((c.sample(), c.whole()), ((200, 2), 200));
    }
}
