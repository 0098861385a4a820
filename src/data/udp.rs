//! The UDP data path (`-u`): datagram sizing and offloads, and the two worker loops;
//! what the stamps tell is in `udp_accounting`.
//!
//! Every datagram our sender writes starts with a 24-byte stamp: a magic, the sending
//! socket's random session id, its sequence number and its send time. From these the
//! receiver counts, per flow (peer address + session), datagrams received, lost,
//! duplicated and out of order, and the RFC 3550 interarrival jitter; the sender alone
//! cannot know any of this (ntttcp-for-linux's UDP sender reports what `send()` accepted).
//! Datagrams without the stamp (a stock ntttcp or NTttcp sender fills them with `'B'`)
//! are counted as bytes and as "unstamped"; their loss is unknown and reported as such.
//!
//! Counting follows the TCP loops: each worker owns its counters, written only by its thread
//! and sampled by the control plane at the edges of the measurement window, so loss in
//! the window is Δexpected − Δreceived.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use super::udp_accounting::session_id;
pub(crate) use super::udp_accounting::{Accounting, STAMP_LEN, Stamp, now_ns};

use super::aligned::Aligned;
use super::plan::{Flows, RecvPlan, SendPlan};
use super::sending::{
    WRITE_POLL, local_bind, sender_socket, sent, set_options, transient, wait_start,
};
use super::worker::{Applied, WorkerState};
use crate::config::SockOpts;
use crate::pace::Pacers;
use crate::stop::Flag;

/// Largest UDP payload over IPv4 (65535 − 20 − 8).
pub(crate) const MAX_PAYLOAD_V4: usize = 65_507;
/// Largest UDP payload over IPv6 without jumbograms (65535 − 8).
pub(crate) const MAX_PAYLOAD_V6: usize = 65_527;
/// Receive buffer: any datagram fits, whatever `-b` the receiver was given (Windows
/// NTttcp fails with error 10040 when its buffer is smaller than the datagram).
const RECV_BUF: usize = 65_536;

/// Most datagrams one UDP GSO send may carry (the kernel's UDP_MAX_SEGMENTS).
pub(crate) const GSO_MAX_SEGMENTS: usize = 64;

/// Whether this kernel takes UDP GSO for datagrams of `size` bytes towards `target`.
pub(crate) fn gso_available(target: SocketAddr, size: usize) -> io::Result<()> {
    let probe = open(target, &SockOpts::default(), None)?;
    crate::sys::socket::set_udp_segment(&probe, size)
}

/// The largest payload for a target's address family.
pub(crate) fn max_payload(target: &SocketAddr) -> usize {
    if target.is_ipv6() {
        MAX_PAYLOAD_V6
    } else {
        MAX_PAYLOAD_V4
    }
}

/// UDP errors a loop rides out: the transient ones of any socket (`sending::transient`), an ICMP error reported for an
/// earlier datagram (the peer not yet or no longer bound) and a full device queue.
fn retry(e: &io::Error) -> bool {
    transient(e)
        || e.kind() == io::ErrorKind::ConnectionRefused
        || crate::sys::socket::is_out_of_buffers(e)
}

/// A connected UDP socket to `target` with `opts`' buffer sizes, bound to `local`.
fn open(
    target: SocketAddr,
    opts: &SockOpts,
    local: Option<&(SocketAddr, Option<String>)>,
) -> io::Result<UdpSocket> {
    let sock = sender_socket(target, Type::DGRAM, Protocol::UDP, opts, local)?;
    if let Some(rate) = opts.pacing_rate {
        crate::sys::socket::set_max_pacing_rate(&sock, rate)?;
    }
    sock.connect(&SockAddr::from(target))?;
    let s: UdpSocket = sock.into();
    s.set_write_timeout(Some(WRITE_POLL))?;
    Ok(s)
}

/// The largest datagram that crosses the path to `target` unfragmented (the route's MTU
/// less the IP and UDP headers), capped to what UDP can carry; `source` is the `-a`
/// address and device the data sockets will be bound to (their route may differ).
pub(crate) fn path_payload(
    target: SocketAddr,
    source: Option<&(SocketAddr, Option<String>)>,
) -> io::Result<usize> {
    let probe = open(target, &SockOpts::default(), source)?;
    let mtu = crate::sys::socket::path_mtu(&probe, target.is_ipv6())?;
    let headers = if target.is_ipv6() { 48 } else { 28 };
    Ok(mtu
        .saturating_sub(headers)
        .clamp(STAMP_LEN, max_payload(&target)))
}

/// Body of a UDP sender worker thread: one connected socket per ntttcp connection, each
/// with its own session and sequence, written round-robin until "stop".
pub(crate) fn send_worker(
    index: usize,
    plan: SendPlan,
    me: Arc<WorkerState>,
    start: Flag,
    stop: Flag,
) {
    let size = plan.size.max(STAMP_LEN);
    let mut flows = Vec::with_capacity(plan.conns);
    for i in 0..plan.conns {
        let local = local_bind(&plan, i);
        let opened = open(plan.target, &plan.opts, local.as_ref()).and_then(|s| {
            if plan.datagrams_per_send > 1 {
                crate::sys::socket::set_udp_segment(&s, size)?;
            }
            Ok(s)
        });
        match opened {
            Ok(s) => {
                let mut applied = me.seen.applied.lock().unwrap_or_else(|p| p.into_inner());
                applied.get_or_insert_with(|| Applied::read(&SockRef::from(&s)));
                drop(applied);
                let salt = ((index as u64) << 32) | i as u64;
                flows.push((s, session_id(salt), 0u64));
                me.connections.fetch_add(1, Ordering::Release);
            }
            Err(e) => {
                me.fail(format!("open UDP socket to receiver {}: {e}", plan.target));
                return;
            }
        }
    }
    if !wait_start(&start, &stop) {
        return;
    }
    // With GSO one send carries several datagrams; a rate limit keeps bursts to about
    // 5 ms of traffic (at least one datagram).
    let per_send = (plan.pacers.chunk(size * plan.datagrams_per_send) / size)
        .clamp(1, plan.datagrams_per_send.max(1));
    let mut buf = match Aligned::filled(size * per_send, b'B') {
        Ok(buf) => buf,
        Err(e) => return me.fail(format!("send buffer: {e}")),
    };
    if let Err(e) = send_loop(&mut flows, &mut buf, size, &me, &stop, &plan.pacers)
        && !stop.is_set()
    {
        me.fail(format!("send to receiver {}: {e}", plan.target));
    }
}

/// Sends `buf` (whole datagrams of `size` bytes, each stamped) on every socket in turn.
fn send_loop(
    flows: &mut [(UdpSocket, u32, u64)],
    buf: &mut [u8],
    size: usize,
    me: &WorkerState,
    stop: &Flag,
    pacers: &Pacers,
) -> io::Result<()> {
    let count = (buf.len() / size) as u64;
    while !stop.is_set() {
        for (s, session, seq) in flows.iter_mut() {
            let sent_ns = now_ns();
            for (i, d) in buf.chunks_mut(size).enumerate() {
                let seq = *seq + i as u64;
                Stamp {
                    session: *session,
                    seq,
                    sent_ns,
                }
                .write(d);
            }
            match s.send(buf) {
                // GSO sends all the datagrams of a send or none.
                Ok(n) => {
                    *seq += count;
                    sent(n, count, &me.counters, pacers, stop);
                }
                // Not sent: the datagrams keep their sequence numbers.
                Err(e) if retry(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Binds a receiver's UDP data port with `opts`' buffer sizes.
pub(crate) fn bind(addr: SocketAddr, opts: &SockOpts) -> io::Result<UdpSocket> {
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    set_options(&sock, opts, false)?;
    if addr.is_ipv6() {
        sock.set_only_v6(false).ok();
    }
    sock.bind(&SockAddr::from(addr))?;
    let s: UdpSocket = sock.into();
    s.set_read_timeout(Some(Duration::from_millis(100)))?;
    Ok(s)
}

/// Body of a UDP receiver worker thread: receive every datagram on `sock` until `stop`,
/// accounting each; a new flow counts as a connection (and in `flows`, for a no-sync
/// receiver's clock). With `--skip-rx-copy` only each datagram's stamp is copied; with
/// UDP GRO on the socket one receive may hold several datagrams of one flow.
pub(crate) fn recv_worker(
    sock: UdpSocket,
    plan: RecvPlan,
    me: Arc<WorkerState>,
    flows: Flows,
    stop: Flag,
) {
    let len = if plan.skip_copy { STAMP_LEN } else { RECV_BUF };
    let mut buf = match Aligned::filled(len, 0u8) {
        Ok(buf) => buf,
        Err(e) => return me.fail(format!("receive buffer: {e}")),
    };
    let sref = SockRef::from(&sock);
    let mut acct = Accounting::default();
    let published = me.datagrams();
    while !stop.is_set() {
        // (bytes, sender, size of each datagram when the kernel coalesced several)
        let r = if plan.skip_copy {
            crate::sys::socket::recv_head(&sref, &mut buf).map(|(n, p)| (n, p, None))
        } else {
            crate::sys::socket::recv_coalesced(&sock, &mut buf)
        };
        match r {
            Ok((n, peer, segment)) => {
                let now = now_ns();
                let mut new = false;
                let received = &buf[..n.min(len)];
                let mut count = 0;
                for d in received.chunks(segment.unwrap_or(n).max(1)) {
                    new |= acct.record(peer, d, now);
                    count += 1;
                }
                me.counters.add_many(n, count.max(1));
                acct.tick(now);
                if new {
                    me.arrived(peer);
                    flows.send_modify(|n| *n += 1);
                }
                published.publish(&acct.tally);
            }
            Err(e) if retry(&e) => {
                // Quiet: flows go inactive, and the published jitter follows.
                acct.tick(now_ns());
                published.publish(&acct.tally);
            }
            Err(e) => return me.fail(format!("receive on UDP port: {e}")),
        }
    }
}
