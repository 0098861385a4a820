//! What both protocols' sockets and loops share: socket set-up, the bounded waits of a
//! send loop, and how a sent buffer is counted and paced.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::config::SockOpts;
use crate::pace::Pacers;
use crate::stop::Flag;

use super::counters::Counters;
use super::plan::SendPlan;

/// Sets what of `opts` a socket must have before it connects or listens: the buffer
/// sizes (window scaling is negotiated for them), the type of service (the first
/// packet carries it) and, on a TCP socket (`tcp`), the congestion control. A listener's
/// accepted connections inherit them.
pub(crate) fn set_options(sock: &Socket, opts: &SockOpts, tcp: bool) -> io::Result<()> {
    if let Some(b) = opts.send_buffer {
        sock.set_send_buffer_size(b)?;
    }
    if let Some(b) = opts.recv_buffer {
        sock.set_recv_buffer_size(b)?;
    }
    if let Some(tos) = opts.tos {
        crate::sys::socket::set_tos(sock, tos)
            .map_err(|e| io::Error::new(e.kind(), format!("--tos {tos:#04x}: {e}")))?;
    }
    if let (true, Some(c)) = (tcp, opts.congestion) {
        crate::sys::socket::set_congestion(sock, c.as_str())
            .map_err(|e| io::Error::new(e.kind(), format!("--congestion {c}: {e}")))?;
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

/// Send timeout of blocking writes: how late a blocked writer may notice "stop".
pub(crate) const WRITE_POLL: Duration = Duration::from_millis(100);

/// The error of a connection the receiver closed while a whole request, response or
/// read was still due.
pub(crate) fn closed() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the receiver closed the connection",
    )
}

/// Errors after which a blocking loop just tries again: a full buffer, a timeout that
/// lets it poll "stop", a signal.
pub(crate) fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Counts `n` bytes just sent in `calls` calls (UDP: datagrams) and sleeps as long as
/// the rate limits ask (cut short by "stop").
pub(crate) fn sent(n: usize, calls: u64, counters: &Counters, pacers: &Pacers, stop: &Flag) {
    counters.add_many(n, calls);
    pace(n, pacers, stop);
}

/// Sleeps as long as the rate limits ask after `n` more bytes (cut short by "stop").
pub(crate) fn pace(n: usize, pacers: &Pacers, stop: &Flag) {
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
    set_options(&sock, opts, proto == Protocol::TCP)?;
    if let Some((addr, device)) = local {
        // A pinned port may still be in TIME_WAIT from the previous run.
        sock.set_reuse_address(true)?;
        if let Some(dev) = device {
            crate::sys::socket::bind_device(&sock, dev)?;
        }
        sock.bind(&SockAddr::from(*addr))
            .map_err(|e| io::Error::new(e.kind(), format!("bind source {addr}: {e}")))?;
    }
    Ok(sock)
}

/// Creates a listening socket (SO_REUSEADDR, deep backlog, `opts`' buffer sizes).
pub(crate) fn listen(addr: SocketAddr, opts: &SockOpts) -> io::Result<TcpListener> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    // Accepted connections inherit the listener's options (and TCP_NODELAY).
    set_options(&sock, opts, true)?;
    sock.set_tcp_nodelay(opts.no_delay)?;
    if addr.is_ipv6() {
        sock.set_only_v6(false).ok();
    }
    sock.bind(&SockAddr::from(addr))?;
    sock.listen(4096)?;
    Ok(sock.into())
}
