//! Linux's socket calls beyond socket2: TCP_INFO (a connection's state and delivered
//! bytes), FIONREAD, the pacing rate, the memfd and sendfile of `-Z`, and UDP's
//! segmentation (GSO) and coalescing (GRO) with the `recvmsg` that reads them.

use std::os::fd::RawFd;

use crate::sys::AsSock;
use crate::sys::socket::ConnInfo;

/// Linux has TCP_NOTSENT_LOWAT and SO_RCVLOWAT, whose defaults by path a run applies.
pub(crate) const LOW_WATER_MARKS: bool = true;

/// Linux sends from an in-memory file with sendfile() (`-Z`).
#[cfg(test)]
pub(crate) const SENDFILE_FROM_MEMORY: bool = true;

/// Sets SO_MAX_PACING_RATE (bytes per second, the 64-bit form, so rates above 34 Gbit/s
/// per socket do not wrap as ntttcp-for-linux's 32-bit value does).
#[allow(unsafe_code)]
pub(crate) fn set_max_pacing_rate(sock: &impl AsSock, bytes_per_s: u64) -> std::io::Result<()> {
    // SAFETY: we pass a pointer to a u64 we own and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.raw_sock(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&bytes_per_s as *const u64).cast(),
            std::mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets TCP_NOTSENT_LOWAT: the unsent bytes a connection queues before a write waits
/// (sizes above i32::MAX are clamped).
pub(crate) fn set_notsent_lowat(sock: &impl AsSock, bytes: usize) -> std::io::Result<()> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    set_int(sock, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, v)
}

/// Sets SO_RCVLOWAT: the unread bytes that make a socket readable (sizes above
/// i32::MAX are clamped; Linux caps it at half the largest receive buffer) and returns
/// the value the kernel keeps.
pub(crate) fn set_rcvlowat(sock: &impl AsSock, bytes: usize) -> std::io::Result<usize> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    set_int(sock, libc::SOL_SOCKET, libc::SO_RCVLOWAT, v)?;
    get_int(sock, libc::SOL_SOCKET, libc::SO_RCVLOWAT).map(|v| v.max(0) as usize)
}

/// Sets TCP_CONGESTION: the congestion control algorithm of a TCP socket (ENOENT: the
/// kernel has no such algorithm; EPERM: an unprivileged process may not use it).
#[allow(unsafe_code)]
pub(crate) fn set_congestion(sock: &impl AsSock, name: &str) -> std::io::Result<()> {
    // SAFETY: we pass the name's bytes and their exact length; the kernel copies them.
    let rc = unsafe {
        libc::setsockopt(
            sock.raw_sock(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The congestion control algorithm of a TCP socket (None: not a TCP socket).
#[allow(unsafe_code)]
pub(crate) fn congestion(sock: &impl AsSock) -> Option<String> {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: we pass a buffer we own and its exact size; the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(
            sock.raw_sock(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let got = name.get(..(len as usize).min(name.len()))?;
    let text = got.split(|b| *b == 0).next()?;
    (rc == 0 && !text.is_empty()).then(|| String::from_utf8_lossy(text).into_owned())
}

/// Whether a TCP socket may use the congestion control `name` here; if not, why, with
/// the kernel's list of what it has (or allows this user).
pub(crate) fn congestion_available(name: &str) -> Result<(), String> {
    let list = |which: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/tcp_{which}_congestion_control"))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    };
    let probe = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .map_err(|e| format!("no TCP socket to try it on: {e}"))?;
    match set_congestion(&probe, name) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Err(format!(
            "this kernel has no such congestion control (it has: {})",
            list("available")
        )),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(format!(
            "this user may not use it (allowed: {})",
            list("allowed")
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether a socket is of the IPv6 family (a dual-stack one carries IPv4 too).
fn is_v6(sock: &impl AsSock) -> bool {
    get_int(sock, libc::SOL_SOCKET, libc::SO_DOMAIN).is_ok_and(|d| d == libc::AF_INET6)
}

/// Sets the type of service of a socket's packets: IP_TOS, and on an IPv6 socket
/// IPV6_TCLASS too (its IPv4-mapped peers take IP_TOS).
pub(crate) fn set_tos(sock: &impl AsSock, tos: u8) -> std::io::Result<()> {
    if is_v6(sock) {
        set_int(sock, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos.into())?;
        let _ = set_int(sock, libc::IPPROTO_IP, libc::IP_TOS, tos.into());
        Ok(())
    } else {
        set_int(sock, libc::IPPROTO_IP, libc::IP_TOS, tos.into())
    }
}

/// The type of service a socket's packets carry (IPv6: the traffic class).
pub(crate) fn tos(sock: &impl AsSock) -> Option<u8> {
    let v = if is_v6(sock) {
        get_int(sock, libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
    } else {
        get_int(sock, libc::IPPROTO_IP, libc::IP_TOS)
    };
    v.ok().and_then(|v| u8::try_from(v).ok())
}

/// The path MTU the kernel knows for a connected socket's destination (IP_MTU /
/// IPV6_MTU: the route's MTU, lowered by any ICMP "packet too big" seen).
pub(crate) fn path_mtu(sock: &impl AsSock, ipv6: bool) -> std::io::Result<usize> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    match get_int(sock, level, name)? {
        mtu if mtu > 0 => Ok(mtu as usize),
        mtu => Err(std::io::Error::other(format!("path MTU {mtu}"))),
    }
}

/// The TCP_NOTSENT_LOWAT a TCP socket has (0: none of its own, the sysctl applies).
#[cfg(test)]
pub(crate) fn notsent_lowat(sock: &impl AsSock) -> std::io::Result<usize> {
    get_int(sock, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT).map(|v| v as u32 as usize)
}

/// Reads an integer socket option.
#[allow(unsafe_code)]
fn get_int(sock: &impl AsSock, level: libc::c_int, name: libc::c_int) -> std::io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: we pass a pointer to a c_int we own and its exact size.
    let rc = unsafe {
        libc::getsockopt(
            sock.raw_sock(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(v)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// An in-memory file (memfd) holding `len` bytes of `fill`: the source of `-Z` sends.
pub(crate) fn memfd_filled(len: usize, fill: u8) -> std::io::Result<std::fs::File> {
    use rustix::fs::{MemfdFlags, memfd_create};
    use std::io::Write;
    let mut f = std::fs::File::from(memfd_create("ntttcp-sendfile", MemfdFlags::CLOEXEC)?);
    f.write_all(&vec![fill; len])?;
    Ok(f)
}

/// sendfile() of `len` bytes of `file` from `offset` to `sock` (no copy from user
/// space); WouldBlock when the socket buffer stays full (non-blocking or SO_SNDTIMEO).
pub(crate) fn sendfile(
    sock: &impl AsSock,
    file: &std::fs::File,
    offset: usize,
    len: usize,
) -> std::io::Result<usize> {
    let mut offset = offset as u64;
    // SAFETY: the caller's borrow of `sock` keeps the descriptor open for the call.
    #[allow(unsafe_code)]
    let sock = unsafe { std::os::fd::BorrowedFd::borrow_raw(sock.raw_sock()) };
    Ok(rustix::fs::sendfile(sock, file, Some(&mut offset), len)?)
}

/// Sets an integer socket option.
#[allow(unsafe_code)]
fn set_int(
    sock: &impl AsSock,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: we pass a pointer to a c_int we own and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.raw_sock(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// UDP GSO (UDP_SEGMENT): the kernel cuts every send on `sock` into datagrams of `size`
/// bytes, so one system call carries many datagrams.
pub(crate) fn set_udp_segment(sock: &impl AsSock, size: usize) -> std::io::Result<()> {
    let size = libc::c_int::try_from(size).map_err(std::io::Error::other)?;
    set_int(sock, libc::SOL_UDP, libc::UDP_SEGMENT, size)
}

/// UDP GRO (UDP_GRO): the kernel may hand several datagrams of one flow to one receive
/// (`recv_coalesced` tells their size).
pub(crate) fn set_udp_gro(sock: &impl AsSock) -> std::io::Result<()> {
    set_int(sock, libc::SOL_UDP, libc::UDP_GRO, 1)
}

/// Receives into `buf` with recvmsg(): (bytes, sender, the size of the datagrams the
/// bytes hold when the kernel coalesced several, UDP GRO).
#[allow(unsafe_code)]
pub(crate) fn recv_coalesced(
    sock: &impl AsSock,
    buf: &mut [u8],
) -> std::io::Result<(usize, std::net::SocketAddr, Option<usize>)> {
    let mut segment = None;
    // SAFETY: every pointer in `msg` refers to a local that outlives the call (`buf`,
    // `iov`, `control`, and the address storage socket2 hands us), with its true
    // length; the CMSG_* walk stays within `control` as recvmsg reports it, and the
    // option value is read unaligned.
    let (n, addr) = unsafe {
        socket2::SockAddr::try_init(|storage, len| {
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let mut control = [0u64; 8];
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_name = storage.cast();
            msg.msg_namelen = *len;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control);
            let n = libc::recvmsg(sock.raw_sock(), &mut msg, 0);
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            *len = msg.msg_namelen;
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                    let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    segment = usize::try_from(v).ok().filter(|s| *s > 0);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
            Ok(n as usize)
        })?
    };
    let addr = addr
        .as_socket()
        .ok_or_else(|| std::io::Error::other("datagram from a non-IP peer"))?;
    Ok((n, addr, segment))
}

/// Receives one datagram's first `head.len()` bytes and its sender, discarding the rest
/// without copying it (MSG_TRUNC); returns the datagram's full length.
#[allow(unsafe_code)]
pub(crate) fn recv_head(
    sock: &socket2::SockRef<'_>,
    head: &mut [u8],
) -> std::io::Result<(usize, std::net::SocketAddr)> {
    // SAFETY: [u8] and [MaybeUninit<u8>] have the same layout, and the kernel writes only
    // initialized bytes, so `head` stays initialized (socket2's documented pattern).
    let buf = unsafe { &mut *(head as *mut [u8] as *mut [std::mem::MaybeUninit<u8>]) };
    let (n, addr) = sock.recv_from_with_flags(buf, libc::MSG_TRUNC)?;
    let addr = addr
        .as_socket()
        .ok_or_else(|| std::io::Error::other("datagram from a non-IP peer"))?;
    Ok((n, addr))
}

/// TCP_INFO of a connected TCP socket; None if the kernel refuses.
pub(crate) fn tcp_info(sock: &impl AsSock, thread: usize, local_port: u16) -> Option<ConnInfo> {
    let info = read_tcp_info(sock.raw_sock())?;
    Some(ConnInfo {
        thread,
        local_port,
        rtt_us: info.tcpi_rtt,
        rttvar_us: Some(info.tcpi_rttvar),
        cwnd: info.tcpi_snd_cwnd,
        retransmits: Some(info.tcpi_total_retrans),
        mss: info.tcpi_snd_mss,
    })
}

/// Bytes of a connection that its peer has acknowledged (TCP_INFO's `tcpi_bytes_acked`,
/// Linux 4.1+): what was delivered, unlike what was written into the send buffer. `fd`
/// must be a TCP socket its owner keeps open for the call.
pub(crate) fn bytes_acked(fd: RawFd) -> Option<u64> {
    read_tcp_info(fd).map(|i| i.tcpi_bytes_acked)
}

/// Sends a connection's pending acknowledgement now rather than when its delayed-ACK
/// timer or its reader would (TCP_QUICKACK, which flushes an ACK that is due; the
/// connection keeps acknowledging as before). `fd` must be a TCP socket its owner keeps
/// open for the call; a failure only leaves the ACK to the kernel's own timing.
pub(crate) fn flush_ack(fd: RawFd) {
    // SAFETY: the caller keeps `fd` open for the call (the workers' descriptor list).
    #[allow(unsafe_code)]
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let _ = socket2::SockRef::from(&fd).set_tcp_quickack(true);
}

/// Connections a listening socket's kernel has established that wait to be accepted
/// (TCP_INFO's `tcpi_unacked` on a listener). `fd` must be a TCP listener its owner keeps
/// open for the call.
pub(crate) fn accept_queue(fd: RawFd) -> Option<u64> {
    read_tcp_info(fd).map(|i| u64::from(i.tcpi_unacked))
}

/// A connection's round-trip time in microseconds from TCP_INFO: the smoothed RTT of
/// a sending socket, or the receiver's own estimate (`tcpi_rcv_rtt`) when `receiving`.
/// `fd` must be a TCP socket its owner keeps open for the call.
pub(crate) fn rtt_us(fd: RawFd, receiving: bool) -> Option<u32> {
    read_tcp_info(fd).map(|i| {
        if receiving {
            i.tcpi_rcv_rtt
        } else {
            i.tcpi_rtt
        }
    })
}

/// Bytes a connected socket has received but the application has not read yet
/// (FIONREAD); 0 if the kernel refuses. `fd` must be open for the call.
pub(crate) fn unread(fd: RawFd) -> u64 {
    // SAFETY: the caller keeps `fd` open for the call (the workers' descriptor list).
    #[allow(unsafe_code)]
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    rustix::io::ioctl_fionread(fd).unwrap_or(0)
}

#[allow(unsafe_code)]
fn read_tcp_info(fd: RawFd) -> Option<libc::tcp_info> {
    // SAFETY: `info` is a plain C struct, zero-initialized and large enough for the
    // length we pass; getsockopt writes at most `len` bytes into it and updates `len`.
    // A descriptor that is not (or no longer) a TCP socket only makes the call fail.
    let (rc, info) = unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        (rc, info)
    };
    (rc == 0).then_some(info)
}

/// The flags of a TCP receive: with `discard`, MSG_TRUNC, which drops the bytes in the
/// kernel instead of copying them out (`--skip-rx-copy`).
pub(crate) fn recv_flags(discard: bool) -> std::ffi::c_int {
    if discard { libc::MSG_TRUNC } else { 0 }
}

/// The maximum segment size of a connected TCP socket (TCP_MAXSEG), if the kernel says.
pub(crate) fn tcp_mss(sock: &impl AsSock) -> Option<u32> {
    get_int(sock, libc::IPPROTO_TCP, libc::TCP_MAXSEG)
        .ok()
        .and_then(|v| u32::try_from(v).ok())
}

/// Whether a send failed because the host ran out of buffer space for it (ENOBUFS), which
/// a UDP sender waits out rather than ending on.
pub(crate) fn is_out_of_buffers(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Binds `sock` to the network device `name` (SO_BINDTODEVICE), so its traffic leaves
/// through that interface whatever the routes say.
pub(crate) fn bind_device(sock: &impl AsSock, name: &str) -> std::io::Result<()> {
    // SAFETY: the caller's borrow of `sock` keeps the descriptor open for the call.
    #[allow(unsafe_code)]
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(sock.raw_sock()) };
    socket2::SockRef::from(&fd).bind_device(Some(name.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tcp_info_of_a_loopback_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, _) = l.accept().unwrap();
        let port = c.local_addr().unwrap().port();
        let info = tcp_info(&c, 3, port).expect("TCP_INFO");
        assert_eq!((info.thread, info.local_port), (3, port));
        assert!(info.cwnd > 0 && info.mss > 0, "{info:?}");
        set_max_pacing_rate(&c, 5_000_000_000).expect("64-bit pacing rate accepted");
        set_notsent_lowat(&c, 131_072).unwrap();
        assert_eq!(notsent_lowat(&c).unwrap(), 131_072);
        assert_eq!(set_rcvlowat(&c, 196_608).unwrap(), 196_608);
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(tcp_info(&udp, 0, 0).is_none(), "not a TCP socket");
    }

    #[test]
    fn sendfile_from_a_memfd_and_truncating_receives() {
        use std::io::{Read, Seek, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut rx, _) = l.accept().unwrap();
        let mut f = memfd_filled(1000, b'A').unwrap();
        f.seek(std::io::SeekFrom::Start(10)).unwrap();
        f.write_all(b"xyz").unwrap();
        assert_eq!(sendfile(&tx, &f, 10, 990).unwrap(), 990);
        let mut got = vec![0u8; 990];
        rx.read_exact(&mut got).unwrap();
        assert_eq!(&got[..4], b"xyzA", "sent from the offset");
        assert!(got[3..].iter().all(|b| *b == b'A'));
        // A 300-byte datagram read with a 24-byte head: its full length comes back.
        let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut d = vec![b'B'; 300];
        d[..3].copy_from_slice(b"abc");
        a.send_to(&d, b.local_addr().unwrap()).unwrap();
        let mut head = [0u8; 24];
        let (n, from) = recv_head(&socket2::SockRef::from(&b), &mut head).unwrap();
        assert_eq!((n, from), (300, a.local_addr().unwrap()));
        assert_eq!(&head[..4], b"abcB");
    }

    #[test]
    fn udp_gso_sends_are_received_coalesced_or_one_by_one() {
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let plain = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        plain
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        set_udp_segment(&tx, 100).unwrap();
        set_udp_gro(&rx).unwrap();
        // One send of 10 x 100 bytes, each datagram marked with its index.
        let d: Vec<u8> = (0..1000).map(|i| (i / 100) as u8).collect();
        assert_eq!(tx.send_to(&d, rx.local_addr().unwrap()).unwrap(), 1000);
        let mut buf = vec![0u8; 65536];
        let mut got = Vec::new();
        while got.len() < 1000 {
            let (n, from, seg) = recv_coalesced(&rx, &mut buf).unwrap();
            assert_eq!(from, tx.local_addr().unwrap());
            assert!(seg.is_none_or(|s| s == 100), "{seg:?}");
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, d, "every datagram, in order");
        // Without UDP_GRO the receiver sees ten datagrams of 100 bytes.
        assert_eq!(tx.send_to(&d, plain.local_addr().unwrap()).unwrap(), 1000);
        for i in 0..10u8 {
            let (n, _, seg) = recv_coalesced(&plain, &mut buf).unwrap();
            assert_eq!((n, seg, buf[0]), (100, None, i));
        }
    }
}

/// The sockets one sender worker writes round-robin, waited on together with poll():
/// unlike an epoll instance or an async runtime this costs no descriptor of its own, so
/// a worker with many connections needs exactly one descriptor per connection.
#[derive(Debug)]
pub(crate) struct Writable<'a>(Vec<libc::pollfd>, std::marker::PhantomData<&'a ()>);

impl<'a> Writable<'a> {
    /// Watches `socks` for room to write (borrowed, so they stay open while watched).
    pub(crate) fn new<S: AsSock>(socks: &'a [S]) -> Self {
        Self(
            socks
                .iter()
                .map(|s| libc::pollfd {
                    fd: s.raw_sock(),
                    events: libc::POLLOUT,
                    revents: 0,
                })
                .collect(),
            std::marker::PhantomData,
        )
    }

    /// Blocks until one of the sockets can take more data (or has failed, which the next
    /// write reports), or `timeout` passes.
    #[allow(unsafe_code)]
    pub(crate) fn wait(&mut self, timeout: std::time::Duration) -> std::io::Result<()> {
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: the slice is ours and its length is passed; every fd stays open for the
        // call because the sockets are borrowed for this set's lifetime.
        let rc = unsafe { libc::poll(self.0.as_mut_ptr(), self.0.len() as libc::nfds_t, ms) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}
