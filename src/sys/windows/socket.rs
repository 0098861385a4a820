//! Windows' socket calls beyond socket2, through Winsock: SIO_TCP_INFO (a connection's
//! state and delivered bytes, Windows 10 1703 and later), FIONREAD, IP_MTU, TCP_MAXSEG
//! and WSAPoll. What only Linux has (pacing, TCP_NOTSENT_LOWAT, SO_RCVLOWAT, sendfile from
//! memory, UDP GSO/GRO, MSG_TRUNC, device binding) fails with `Unsupported`; the command
//! line refuses the flags that would ask for it, so these errors are never the first word.

use std::io;
use std::net::SocketAddr;

use windows_sys::Win32::Networking::WinSock as ws;

use crate::sys::AsSock;
use crate::sys::socket::ConnInfo;

use super::RawSock;

/// An error for what only Linux offers.
fn linux_only(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} is available on Linux only"),
    )
}

/// Windows has neither TCP_NOTSENT_LOWAT nor a settable SO_RCVLOWAT: a run keeps the
/// stack's own behaviour, and the flags that ask for them are refused.
pub(crate) const LOW_WATER_MARKS: bool = false;

/// Sending from an in-memory file (`-Z`) is Linux's.
#[cfg(test)]
pub(crate) const SENDFILE_FROM_MEMORY: bool = false;

/// The TCP_NOTSENT_LOWAT of a socket: Windows has none.
#[cfg(test)]
pub(crate) fn notsent_lowat(_sock: &impl AsSock) -> io::Result<usize> {
    Err(linux_only("TCP_NOTSENT_LOWAT"))
}

/// Pacing by the socket (SO_MAX_PACING_RATE) is Linux's.
pub(crate) fn set_max_pacing_rate(_sock: &impl AsSock, _bytes_per_s: u64) -> io::Result<()> {
    Err(linux_only("SO_MAX_PACING_RATE"))
}

/// TCP_NOTSENT_LOWAT is Linux's.
pub(crate) fn set_notsent_lowat(_sock: &impl AsSock, _bytes: usize) -> io::Result<()> {
    Err(linux_only("TCP_NOTSENT_LOWAT"))
}

/// Windows accepts no SO_RCVLOWAT.
pub(crate) fn set_rcvlowat(_sock: &impl AsSock, _bytes: usize) -> io::Result<usize> {
    Err(linux_only("SO_RCVLOWAT"))
}

/// TCP_CONGESTION is Linux's.
pub(crate) fn set_congestion(_sock: &impl AsSock, _name: &str) -> io::Result<()> {
    Err(linux_only("TCP_CONGESTION"))
}

/// Windows sets no congestion control per socket.
pub(crate) fn congestion_available(_name: &str) -> Result<(), String> {
    Err(linux_only("TCP_CONGESTION").to_string())
}

/// Windows names no congestion control per socket.
pub(crate) fn congestion(_sock: &impl AsSock) -> Option<String> {
    None
}

/// Windows ignores IP_TOS on its sockets (DSCP comes from its QoS policies).
pub(crate) fn set_tos(_sock: &impl AsSock, _tos: u8) -> io::Result<()> {
    Err(linux_only("IP_TOS"))
}

/// The type of service is not the socket's to say on Windows.
pub(crate) fn tos(_sock: &impl AsSock) -> Option<u8> {
    None
}

/// The path MTU Windows knows for a connected socket's destination (IP_MTU / IPV6_MTU,
/// Windows 10 1607 and later).
pub(crate) fn path_mtu(sock: &impl AsSock, ipv6: bool) -> io::Result<usize> {
    let (level, name) = if ipv6 {
        (ws::IPPROTO_IPV6, ws::IPV6_MTU)
    } else {
        (ws::IPPROTO_IP, ws::IP_MTU)
    };
    match get_int(sock.raw_sock(), level, name)? {
        mtu if mtu > 0 => Ok(mtu as usize),
        mtu => Err(io::Error::other(format!("path MTU {mtu}"))),
    }
}

/// Sending from an in-memory file (`-Z`) is Linux's.
pub(crate) fn memfd_filled(_len: usize, _fill: u8) -> io::Result<std::fs::File> {
    Err(linux_only("sendfile from memory (-Z)"))
}

/// Sending from an in-memory file (`-Z`) is Linux's.
pub(crate) fn sendfile(
    _sock: &impl AsSock,
    _file: &std::fs::File,
    _offset: usize,
    _len: usize,
) -> io::Result<usize> {
    Err(linux_only("sendfile from memory (-Z)"))
}

/// UDP segmentation offload by the socket is Linux's here (UDP_SEGMENT).
pub(crate) fn set_udp_segment(_sock: &impl AsSock, _size: usize) -> io::Result<()> {
    Err(linux_only("UDP segmentation offload (UDP_SEGMENT)"))
}

/// UDP receive coalescing is Linux's here (UDP_GRO).
pub(crate) fn set_udp_gro(_sock: &impl AsSock) -> io::Result<()> {
    Err(linux_only("UDP receive coalescing (UDP_GRO)"))
}

/// Receives one datagram into `buf`: (bytes, sender, None: never coalesced here).
pub(crate) fn recv_coalesced(
    sock: &impl AsSock,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr, Option<usize>)> {
    let sock = borrow(sock.raw_sock());
    let sref = socket2::SockRef::from(&sock);
    // SAFETY: [u8] and [MaybeUninit<u8>] have the same layout, and the kernel writes only
    // initialized bytes, so `buf` stays initialized (socket2's documented pattern).
    #[allow(unsafe_code)]
    let uninit = unsafe { &mut *(buf as *mut [u8] as *mut [std::mem::MaybeUninit<u8>]) };
    let (n, addr) = sref.recv_from(uninit)?;
    let addr = addr
        .as_socket()
        .ok_or_else(|| io::Error::other("datagram from a non-IP peer"))?;
    Ok((n, addr, None))
}

/// Reading a datagram's head and dropping the rest uncopied (MSG_TRUNC) is Linux's.
pub(crate) fn recv_head(
    _sock: &socket2::SockRef<'_>,
    _head: &mut [u8],
) -> io::Result<(usize, SocketAddr)> {
    Err(linux_only("receiving without a copy (--skip-rx-copy)"))
}

/// The flags of a TCP receive: Windows has no way to discard unread bytes in the kernel,
/// and `--skip-rx-copy` is refused, so always none.
pub(crate) fn recv_flags(_discard: bool) -> i32 {
    0
}

/// The maximum segment size of a connected TCP socket (TCP_MAXSEG), if Windows says.
pub(crate) fn tcp_mss(sock: &impl AsSock) -> Option<u32> {
    get_int(sock.raw_sock(), ws::IPPROTO_TCP, ws::TCP_MAXSEG)
        .ok()
        .and_then(|v| u32::try_from(v).ok())
        .filter(|v| *v > 0)
}

/// Whether a send failed because the host ran out of buffer space (WSAENOBUFS).
pub(crate) fn is_out_of_buffers(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ws::WSAENOBUFS)
}

/// Binding a socket to a device by name is Linux's (SO_BINDTODEVICE); on Windows the
/// `-a` address alone chooses the interface.
pub(crate) fn bind_device(_sock: &impl AsSock, _name: &str) -> io::Result<()> {
    Err(linux_only("binding to a device"))
}

/// A connection's TCP state from SIO_TCP_INFO; None where Windows (or Wine) refuses.
/// Windows gives no RTT variation, and counts retransmitted bytes, not segments: the
/// retransmits are those bytes in segments of the connection's MSS, rounded up.
pub(crate) fn tcp_info(sock: &impl AsSock, thread: usize, local_port: u16) -> Option<ConnInfo> {
    let i = read_tcp_info(sock.raw_sock())?;
    Some(ConnInfo {
        thread,
        local_port,
        rtt_us: i.RttUs,
        rttvar_us: None,
        cwnd: i.Cwnd.checked_div(i.Mss).unwrap_or(0),
        retransmits: Some(i.BytesRetrans.div_ceil(i.Mss.max(1))),
        mss: i.Mss,
    })
}

/// Bytes of a connection its peer has acknowledged: those sent, less those sent again
/// and those still in flight (SIO_TCP_INFO). `sock` must be a TCP socket its owner
/// keeps open for the call.
pub(crate) fn bytes_acked(sock: RawSock) -> Option<u64> {
    let i = read_tcp_info(sock)?;
    Some(
        i.BytesOut
            .saturating_sub(u64::from(i.BytesRetrans))
            .saturating_sub(u64::from(i.BytesInFlight)),
    )
}

/// Windows has no call that sends a due acknowledgement at once (Linux's TCP_QUICKACK):
/// the ACK keeps the stack's own timing.
pub(crate) fn flush_ack(_sock: RawSock) {}

/// Windows does not say how many connections wait to be accepted.
pub(crate) fn accept_queue(_sock: RawSock) -> Option<u64> {
    None
}

/// A connection's smoothed round-trip time in microseconds (SIO_TCP_INFO's RttUs, the
/// same estimate on either end).
pub(crate) fn rtt_us(sock: RawSock, _receiving: bool) -> Option<u32> {
    read_tcp_info(sock).map(|i| i.RttUs)
}

/// Bytes a connected socket has received but the application has not read yet
/// (FIONREAD); 0 if Windows refuses. `sock` must be open for the call.
#[allow(unsafe_code)]
pub(crate) fn unread(sock: RawSock) -> u64 {
    let mut n: u32 = 0;
    // SAFETY: ioctlsocket writes one u32 into `n`, which we own; a handle that is not a
    // socket only makes the call fail.
    let rc = unsafe { ws::ioctlsocket(sock as ws::SOCKET, ws::FIONREAD, &mut n) };
    if rc == 0 { u64::from(n) } else { 0 }
}

/// SIO_TCP_INFO version 0 of a TCP socket.
#[allow(unsafe_code)]
fn read_tcp_info(sock: RawSock) -> Option<ws::TCP_INFO_v0> {
    let version: u32 = 0;
    let mut returned: u32 = 0;
    // SAFETY: the input is a u32 we own and the output a zeroed TCP_INFO_v0 (plain data)
    // whose exact size we pass; no overlapped I/O, so the call completes before it
    // returns. A handle that is not a TCP socket only makes it fail.
    let (rc, info) = unsafe {
        let mut info: ws::TCP_INFO_v0 = std::mem::zeroed();
        let rc = ws::WSAIoctl(
            sock as ws::SOCKET,
            ws::SIO_TCP_INFO,
            (&version as *const u32).cast(),
            std::mem::size_of::<u32>() as u32,
            (&mut info as *mut ws::TCP_INFO_v0).cast(),
            std::mem::size_of::<ws::TCP_INFO_v0>() as u32,
            &mut returned,
            std::ptr::null_mut(),
            None,
        );
        (rc, info)
    };
    (rc == 0).then_some(info)
}

/// Reads an integer socket option.
#[allow(unsafe_code)]
fn get_int(sock: RawSock, level: i32, name: i32) -> io::Result<i32> {
    let mut v: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as i32;
    // SAFETY: we pass a pointer to an i32 we own and its exact size.
    let rc = unsafe {
        ws::getsockopt(
            sock as ws::SOCKET,
            level,
            name,
            (&mut v as *mut i32).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A socket handle borrowed for one call.
fn borrow(sock: RawSock) -> std::os::windows::io::BorrowedSocket<'static> {
    // SAFETY: every caller holds the socket open for the length of the call it makes
    // with the borrow, which never outlives it.
    #[allow(unsafe_code)]
    unsafe {
        std::os::windows::io::BorrowedSocket::borrow_raw(sock)
    }
}

/// The sockets one sender worker writes round-robin, waited on together with WSAPoll.
pub(crate) struct Writable<'a>(Vec<ws::WSAPOLLFD>, std::marker::PhantomData<&'a ()>);

impl<'a> Writable<'a> {
    /// Watches `socks` for room to write (borrowed, so they stay open while watched).
    pub(crate) fn new<S: AsSock>(socks: &'a [S]) -> Self {
        Self(
            socks
                .iter()
                .map(|s| ws::WSAPOLLFD {
                    fd: s.raw_sock() as ws::SOCKET,
                    events: ws::POLLWRNORM,
                    revents: 0,
                })
                .collect(),
            std::marker::PhantomData,
        )
    }

    /// Blocks until one of the sockets can take more data (or has failed, which the next
    /// write reports), or `timeout` passes.
    #[allow(unsafe_code)]
    pub(crate) fn wait(&mut self, timeout: std::time::Duration) -> io::Result<()> {
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: the slice is ours and its length is passed; every socket stays open for
        // the call because the sockets are borrowed for this set's lifetime.
        let rc = unsafe { ws::WSAPoll(self.0.as_mut_ptr(), self.0.len() as u32, ms) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
