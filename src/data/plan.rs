//! What a worker is given: the plans of sender and receiver workers, and the payload a
//! sender writes.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncWriteExt, Interest};

use crate::config::{IoMode, SockOpts};
use crate::pace::Pacers;

/// Everything a sender worker needs.
#[derive(Debug, Clone)]
pub(crate) struct SendPlan {
    /// Receiver data port address.
    pub target: SocketAddr,
    /// Connections this worker owns.
    pub conns: usize,
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
    pub(crate) fn new(size: usize, sendfile: bool) -> io::Result<Self> {
        Ok(if sendfile {
            let f = crate::sys::socket::memfd_filled(size * (SPAN + 1), b'A')
                .map_err(|e| io::Error::new(e.kind(), format!("-Z in-memory file: {e}")))?;
            Self::File(f, size)
        } else {
            Self::Copy(filled(size, b'A')?.into_boxed_slice())
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
    pub(super) fn send(&self, s: &TcpStream, len: usize, at: &mut usize) -> io::Result<usize> {
        let n = match self {
            Self::Copy(b) => (&*s).write(&b[..len])?,
            Self::File(f, _) => crate::sys::socket::sendfile(s.as_fd(), f, *at, len)?,
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

/// Counts data connections that have started to carry bytes, over all receiver workers.
/// A no-sync receiver starts its clock when it grows: that lines our clock up with the
/// sender's (which starts once all its connections are up) better than the first accept.
pub(crate) type Flows = Arc<tokio::sync::watch::Sender<u64>>;

/// How a receiver worker reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvPlan {
    /// CPU to pin to, if any.
    pub cpu: Option<usize>,
    /// TCP_NODELAY on accepted connections.
    pub no_delay: bool,
    /// `--skip-rx-copy`: discard with MSG_TRUNC instead of copying.
    pub skip_copy: bool,
    /// How long a connection-rate test's connection is held for its sender to close it.
    pub timeout: std::time::Duration,
}
