//! What a worker is given: the plans of sender and receiver workers, and the payload a
//! sender writes.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncWriteExt, Interest};

use super::aligned::Aligned;
use crate::config::{DEFAULT_RECV_SIZE, IoMode, Lowat, SockOpts};
use crate::pace::Pacers;

/// Everything a sender worker needs.
#[derive(Debug, Clone)]
pub(crate) struct SendPlan {
    /// Receiver data port address.
    pub target: SocketAddr,
    /// Connections this worker owns.
    pub conns: usize,
    /// The sender's only data connection: the by-path TCP_NOTSENT_LOWAT then leaves a
    /// path of NIC-sized segments to the kernel (`tcp_send::notsent_lowat`).
    pub sole: bool,
    /// CPU to pin to, if any.
    pub cpu: Option<usize>,
    /// Bytes per write.
    pub size: usize,
    /// Blocking or async data path.
    pub io: IoMode,
    /// When connecting must be done.
    pub connect_deadline: Instant,
    /// How long a request/response transaction may take (`--timeout`).
    pub timeout: std::time::Duration,
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
    /// `--bidir`: where this worker counts what it reads (its own state counts what it
    /// sends); None otherwise.
    pub back: Option<Arc<super::WorkerState>>,
}

/// What a sender writes: a buffer of `'A'` (copied into the kernel on every send) or an
/// in-memory file of them that sendfile() hands over without that copy (`-Z`). One
/// payload serves every worker of a sender: it is only read.
///
/// The file holds `SPAN` sends' worth and each send starts where the last ended: pages
/// still referenced by queued segments are not handed out again at once, which measured
/// faster than resending the first `len` bytes every time.
#[derive(Debug)]
pub(crate) enum Payload {
    /// A buffer copied by send(), on a page boundary.
    Copy(Aligned<u8>),
    /// An in-memory file for sendfile(), the bytes per send and how many sends' worth
    /// the file cycles through.
    File(std::fs::File, usize, usize),
}

/// Sends' worth of data in a `-Z` file (1 MiB with the default 128 KiB sends).
const SPAN: usize = 8;
/// The least size of a `-Z` file for one connection: more than the 4 MiB of its send
/// buffer (Linux's default most), so that few pages are in two of its packets at once
/// (the receiver's unread queue holds some more). A smaller file has each page's
/// reference count raised on the sender's CPU and dropped on the receiver's for
/// several packets at a time; between two namespaces one stream measured x1.26-1.37
/// with this size against 1 MiB. Several connections on one shared file measured faster with 1 MiB
/// (x0.80-0.91 with this size at two and four): there the larger file's pages no
/// longer stay in the CPU caches.
const ONE_CONNECTION_FILE: usize = 16 << 20;

/// Sends' worth of data in the `-Z` file of a sender with `connections` connections.
fn file_span(size: usize, connections: usize) -> usize {
    if connections == 1 {
        SPAN.max(ONE_CONNECTION_FILE.div_ceil(size.max(1)))
    } else {
        SPAN
    }
}

impl Payload {
    /// `size` bytes per send, copied or (`sendfile`) from an in-memory file shared by
    /// the sender's `connections`.
    pub(crate) fn new(size: usize, sendfile: bool, connections: usize) -> io::Result<Self> {
        Ok(if sendfile {
            let span = file_span(size, connections);
            let f = crate::sys::socket::memfd_filled(size * (span + 1), b'A')
                .map_err(|e| io::Error::new(e.kind(), format!("-Z in-memory file: {e}")))?;
            Self::File(f, size, span)
        } else {
            Self::Copy(Aligned::filled(size, b'A')?)
        })
    }

    /// The buffer copied by send(); None for a `-Z` file.
    pub(super) fn buffer(&self) -> Option<&[u8]> {
        match self {
            Self::Copy(b) => Some(b),
            Self::File(..) => None,
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Self::Copy(b) => b.len(),
            Self::File(_, n, _) => *n,
        }
    }

    /// Where the next send of a file starts after `n` bytes were sent from `at`.
    fn advance(&self, at: &mut usize, n: usize) {
        if let Self::File(_, size, span) = self {
            *at = (*at + n) % (size * span);
        }
    }

    /// One blocking send of `len` bytes (`at`: the file offset it starts from).
    pub(super) fn send(&self, s: &TcpStream, len: usize, at: &mut usize) -> io::Result<usize> {
        let n = match self {
            Self::Copy(b) => (&*s).write(&b[..len])?,
            Self::File(f, ..) => crate::sys::socket::sendfile(s, f, *at, len)?,
        };
        self.advance(at, n);
        Ok(n)
    }

    /// One send of `len` bytes when the socket is writable.
    pub(super) async fn send_async(
        &self,
        s: &mut tokio::net::TcpStream,
        len: usize,
        at: &mut usize,
    ) -> io::Result<usize> {
        let n = match self {
            Self::Copy(b) => s.write(&b[..len]).await?,
            Self::File(f, ..) => {
                let from = *at;
                s.async_io(Interest::WRITABLE, || {
                    crate::sys::socket::sendfile(s, f, from, len)
                })
                .await?
            }
        };
        self.advance(at, n);
        Ok(n)
    }
}

/// Counts data connections that have started to carry bytes, over all receiver workers.
/// A no-sync receiver starts its clock when it grows: that lines our clock up with the
/// sender's (which starts once all its connections are up) better than the first accept.
pub(crate) type Flows = Arc<tokio::sync::watch::Sender<u64>>;

/// How a receiver worker reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvPlan {
    /// CPU to pin to, if any.
    pub cpu: Option<usize>,
    /// `--placement auto`: the CPU to move to when the worker's first connection comes
    /// from this host (beside its sender's worker, which pins to the same one).
    pub local_cpu: Option<usize>,
    /// TCP_NODELAY on accepted connections.
    pub no_delay: bool,
    /// `--skip-rx-copy`: discard with MSG_TRUNC instead of copying.
    pub skip_copy: bool,
    /// The most one read of a connection takes.
    pub read: ReadSize,
    /// SO_RCVLOWAT of a stream connection (`--rcvlowat`).
    pub rcvlowat: Lowat,
}

impl RecvPlan {
    /// Where the worker moves once it has kept its first connection, from `peer` to our
    /// `local` address: `local_cpu` when the peer is on this host, else nowhere.
    pub(crate) fn cpu_for_first(&self, local: IpAddr, peer: IpAddr) -> Option<usize> {
        let (local, peer) = (local.to_canonical(), peer.to_canonical());
        let here = peer.is_loopback() || peer == local;
        self.local_cpu.filter(|_| here)
    }
}

/// The most one read of a TCP connection takes: `-b`, or without it what the
/// connection's path wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadSize {
    /// `-b`: this many bytes, every connection.
    Fixed(usize),
    /// 64 KiB where the path's segments are 32 KiB or more (loopback, 64 KiB MTUs),
    /// else 128 KiB. Where segments are that large the sender waits on the window
    /// update a read sends, and smaller reads send it sooner (one loopback stream
    /// measured x1.5 with 64 KiB reads against 128 KiB, one veth stream with a 64 KiB
    /// MTU x1.31). With NIC-sized segments the receiver acknowledges as data arrives,
    /// and fewer, larger reads win (one veth stream: x1.10 at 1500 bytes, x1.08 at 9000).
    ByPath,
}

/// Segments at least this large (TCP_MAXSEG) get `DEFAULT_RECV_SIZE` reads by path.
const LARGE_SEGMENTS: u32 = 32 << 10;
/// What one read by path takes where the path's segments are NIC-sized.
pub(crate) const WIDE_READ: usize = 128 << 10;

impl ReadSize {
    /// The buffer a worker needs for any connection's reads.
    pub(crate) fn buffer(self) -> usize {
        match self {
            Self::Fixed(n) => n,
            Self::ByPath => WIDE_READ,
        }
    }

    /// The most one read takes on a connection whose segments are `mss` bytes (None:
    /// unknown, as ntttcp-for-linux's 64 KiB).
    pub(crate) fn for_mss(self, mss: Option<u32>) -> usize {
        match (self, mss) {
            (Self::Fixed(n), _) => n,
            (Self::ByPath, Some(m)) if m < LARGE_SEGMENTS => WIDE_READ,
            (Self::ByPath, _) => DEFAULT_RECV_SIZE,
        }
    }
}

/// The SO_RCVLOWAT to set on a stream connection whose segments are `mss` bytes (None:
/// leave the kernel's, one byte). By path: 192 KiB where segments are NIC-sized, so a
/// reader wakes once for a read and a half instead of for every burst the path
/// delivers (one veth stream x1.3, two x1.2, four x1.45; more than 224 KiB left our
/// 128 KiB-unsent sender waiting); where they are large (loopback) the kernel's, which
/// measured no steady gain; docs/benchmarks.md.
pub(crate) fn rcvlowat(how: Lowat, mss: Option<u32>) -> Option<usize> {
    let nic_sized = mss.is_some_and(|m| m < LARGE_SEGMENTS);
    how.bytes(nic_sized.then_some(WIDE_READ + WIDE_READ / 2))
}

#[cfg(test)]
mod tests {
    use super::{Lowat, Payload, ReadSize, RecvPlan, WIDE_READ, file_span, rcvlowat};

    #[test]
    fn a_copied_payload_starts_on_a_page() {
        // 128 KiB (the sender's default) and more come from the allocator 16 bytes past
        // a page; the payload must not.
        for size in [1, 65_536, 131_072, 1 << 20] {
            let p = Payload::new(size, false, 1).unwrap();
            let b = p.buffer().unwrap();
            assert_eq!(b.as_ptr() as usize % 4096, 0, "{size}-byte payload");
            assert_eq!((b.len(), p.len()), (size, size));
            assert!(b.iter().all(|&x| x == b'A'));
        }
    }

    #[test]
    fn the_default_rcvlowat_follows_the_segment_size_and_a_given_one_is_kept() {
        let by = |mss| rcvlowat(Lowat::ByPath, mss);
        assert_eq!(by(Some(1448)), Some(196_608), "veth at 1500 bytes");
        assert_eq!(by(Some(8948)), Some(196_608), "9000 bytes");
        assert_eq!(by(Some(65_483)), None, "loopback: the kernel's");
        assert_eq!(by(None), None, "unknown: the kernel's");
        assert_eq!(rcvlowat(Lowat::Fixed(1), Some(65_483)), Some(1));
        assert_eq!(rcvlowat(Lowat::Kernel, Some(1448)), None);
    }

    #[test]
    fn auto_placement_moves_a_receiver_only_for_a_peer_on_this_host() {
        let plan = |local_cpu| RecvPlan {
            cpu: None,
            local_cpu,
            no_delay: false,
            skip_copy: false,
            read: ReadSize::ByPath,
            rcvlowat: Lowat::ByPath,
        };
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        let auto = plan(Some(1));
        let on = |local, peer| auto.cpu_for_first(ip(local), ip(peer));
        assert_eq!(on("127.0.0.1", "127.0.0.1"), Some(1));
        assert_eq!(on("127.0.0.1", "127.0.0.2"), Some(1), "all of 127/8");
        assert_eq!(on("10.0.0.5", "10.0.0.5"), Some(1), "our own address");
        assert_eq!(on("::ffff:10.0.0.5", "10.0.0.5"), Some(1), "v4-mapped");
        assert_eq!(on("::1", "::1"), Some(1));
        assert_eq!(on("10.0.0.5", "10.0.0.6"), None, "another host");
        let none = plan(None).cpu_for_first(ip("127.0.0.1"), ip("127.0.0.1"));
        assert_eq!(none, None, "not auto");
    }

    #[test]
    fn reads_by_path_follow_the_segment_size_and_b_is_kept() {
        let by = ReadSize::ByPath;
        assert_eq!(by.for_mss(Some(65_483)), 64 << 10, "loopback");
        assert_eq!(by.for_mss(Some(32 << 10)), 64 << 10);
        assert_eq!(by.for_mss(Some((32 << 10) - 1)), WIDE_READ);
        assert_eq!(by.for_mss(Some(1448)), WIDE_READ, "1500-byte MTU");
        assert_eq!(by.for_mss(Some(8948)), WIDE_READ, "9000-byte MTU");
        assert_eq!(by.for_mss(None), 64 << 10, "unknown: ntttcp-for-linux's");
        assert_eq!(by.buffer(), WIDE_READ);
        let fixed = ReadSize::Fixed(16 << 10);
        assert_eq!(fixed.for_mss(Some(1448)), 16 << 10);
        assert_eq!(fixed.buffer(), 16 << 10);
    }

    #[test]
    fn one_connection_cycles_through_16_mib_and_several_share_1_mib() {
        assert_eq!(file_span(128 << 10, 1), 128);
        assert_eq!(file_span(128 << 10, 2), 8);
        assert_eq!(file_span(4 << 20, 1), 8);
        let made = Payload::new(128 << 10, true, 1);
        if !crate::sys::socket::SENDFILE_FROM_MEMORY {
            assert!(made.is_err(), "-Z's in-memory file is Linux's");
            return;
        }
        let p = made.unwrap();
        let Payload::File(f, size, span) = &p else {
            panic!("-Z gives a file");
        };
        assert_eq!((*size, *span), (128 << 10, 128));
        assert_eq!(f.metadata().unwrap().len(), 129 * (128 << 10));
        let mut at = 127 * (128 << 10);
        p.advance(&mut at, 128 << 10);
        assert_eq!(at, 0, "the offset wraps at the span");
    }
}
