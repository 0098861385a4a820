//! The sync (control) channel: a TCP connection carrying 4-byte messages, every read and
//! write bounded by a deadline. `message` gives the bytes their meaning.
//!
//! During the test the connection is split: a reader task forwards whatever arrives (or
//! the connection's end) on a channel, so the timeline can wait on it alongside timers
//! without cancelling a half-finished read.

pub(crate) mod connect;
pub(crate) mod message;
pub(crate) mod windows;

use std::fmt;
use std::io;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::timeout;

/// What a sync connection runs over: a TCP stream, or bytes in memory (the fuzz targets
/// drive the real handshakes over those).
pub(crate) trait SyncStream:
    AsyncRead + AsyncWrite + Send + Unpin + fmt::Debug + 'static
{
    /// Whether the peer has closed its side (nothing is consumed).
    fn peer_closed(&mut self) -> bool;
}

impl SyncStream for TcpStream {
    fn peer_closed(&mut self) -> bool {
        // A zero-time peek.
        let mut b = [0u8; 1];
        matches!(futures_now(self.peek(&mut b)), Some(Ok(0)) | Some(Err(_)))
    }
}

/// One sync connection with a deadline on every operation.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: Box<dyn SyncStream>,
    deadline: Duration,
    peer: String,
    /// The sender asked for the receiver's report at the end (`WANT_REPORT`), and was
    /// promised it.
    report: bool,
    /// The instant the sender asked the measured window to begin at (`START_AT`).
    start_at: Option<std::time::SystemTime>,
}

/// What the reader task saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// A whole 4-byte message.
    Message(i32),
    /// A report frame's JSON (`message::REPORT_FRAME`).
    Report(Vec<u8>),
    /// The peer closed the connection or it failed (with the reason).
    Closed(String),
}

impl Connection {
    /// Wraps a connected stream; `deadline` bounds each read and write. With `keepalive`
    /// the kernel probes the connection after that long idle and every as long after,
    /// so that NAT and firewalls keep a quiet connection for a test of any length (a
    /// socket that refuses it still serves the test).
    pub(crate) fn new(stream: TcpStream, deadline: Duration, keepalive: Option<Duration>) -> Self {
        let _ = stream.set_nodelay(true);
        if let Some(every) = keepalive {
            let probes = socket2::TcpKeepalive::new()
                .with_time(every)
                .with_interval(every);
            let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&probes);
        }
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        Self::over(stream, peer, deadline)
    }

    /// A connection over any stream, named `peer` in messages.
    pub(crate) fn over(stream: impl SyncStream, peer: String, deadline: Duration) -> Self {
        Self {
            stream: Box::new(stream),
            deadline,
            peer,
            report: false,
            start_at: None,
        }
    }

    /// The instant the sender asked the window to begin at, if it did.
    pub(crate) fn start_at(&self) -> Option<std::time::SystemTime> {
        self.start_at
    }

    /// Keeps the instant the sender asked the window to begin at.
    pub(crate) fn set_start_at(&mut self, at: std::time::SystemTime) {
        self.start_at = Some(at);
    }

    /// Whether the report was asked for and promised on this connection.
    pub(crate) fn wants_report(&self) -> bool {
        self.report
    }

    /// Marks the report asked for and promised.
    pub(crate) fn promise_report(&mut self) {
        self.report = true;
    }

    /// The peer's address, for messages.
    pub(crate) fn peer(&self) -> &str {
        &self.peer
    }

    /// Sends one message.
    pub(crate) async fn send(&mut self, value: i32) -> Result<()> {
        write_int(&mut self.stream, value, self.deadline, &self.peer).await
    }

    /// Receives one message; a clean close before any byte is an error too.
    pub(crate) async fn recv(&mut self) -> Result<i32> {
        self.recv_within(self.deadline).await
    }

    /// Receives one message, waiting at most `deadline` instead of the usual one.
    pub(crate) async fn recv_within(&mut self, deadline: Duration) -> Result<i32> {
        let mut buf = [0u8; 4];
        match timeout(deadline, self.stream.read_exact(&mut buf)).await {
            Err(_) => bail!("sync peer {} sent nothing for {deadline:?}", self.peer),
            Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                bail!("sync peer {} closed the connection", self.peer)
            }
            Ok(r) => r.with_context(|| format!("read from sync peer {}", self.peer))?,
        };
        Ok(message::decode(buf))
    }

    /// Whether the peer has closed its side (nothing is consumed).
    pub(crate) fn peer_closed(&mut self) -> bool {
        self.stream.peer_closed()
    }

    /// Splits the connection: a spawned task forwards what arrives, tagged with `tag`, on
    /// `tx`; the returned writer sends.
    pub(crate) fn monitor(self, tag: usize, tx: mpsc::Sender<(usize, Incoming)>) -> Writer {
        let (read, write) = tokio::io::split(self.stream);
        tokio::spawn(read_loop(read, tag, tx));
        Writer {
            half: write,
            deadline: self.deadline,
            peer: self.peer,
            report: self.report,
        }
    }
}

/// The sending half of a monitored connection.
#[derive(Debug)]
pub(crate) struct Writer {
    half: WriteHalf<Box<dyn SyncStream>>,
    deadline: Duration,
    peer: String,
    /// The report was asked for and promised on this connection.
    report: bool,
}

impl Writer {
    /// The peer's address, for messages.
    pub(crate) fn peer(&self) -> &str {
        &self.peer
    }

    /// Sends one message.
    pub(crate) async fn send(&mut self, value: i32) -> Result<()> {
        write_int(&mut self.half, value, self.deadline, &self.peer).await
    }

    /// Whether the report was asked for and promised on this connection.
    pub(crate) fn wants_report(&self) -> bool {
        self.report
    }

    /// Sends a report frame: its tag, the length of `json` and `json`.
    pub(crate) async fn send_report(&mut self, json: &[u8]) -> Result<()> {
        let Ok(len) = u32::try_from(json.len()) else {
            bail!("a report of {} bytes is too long to send", json.len());
        };
        let mut frame = Vec::with_capacity(8 + json.len());
        frame.extend_from_slice(&message::encode(message::REPORT_FRAME));
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(json);
        match timeout(self.deadline, self.half.write_all(&frame)).await {
            Err(_) => bail!(
                "sync peer {} did not take the report for {:?}",
                self.peer,
                self.deadline
            ),
            Ok(r) => r.with_context(|| format!("send the report to sync peer {}", self.peer)),
        }
    }

    /// Closes our side (FIN), bounded by the deadline.
    pub(crate) async fn close(mut self) {
        let _ = timeout(self.deadline, self.half.shutdown()).await;
    }
}

async fn write_int<W: AsyncWriteExt + Unpin>(
    w: &mut W,
    value: i32,
    deadline: Duration,
    peer: &str,
) -> Result<()> {
    match timeout(deadline, w.write_all(&message::encode(value))).await {
        Err(_) => bail!("sync peer {peer} did not accept data for {deadline:?}"),
        Ok(r) => r.with_context(|| format!("write to sync peer {peer}")),
    }
}

/// The rest of a report frame: its length, at most `MAX_REPORT_BYTES`, and its bytes.
async fn report<R: AsyncRead + Unpin>(read: &mut R) -> Incoming {
    let mut len = [0u8; 4];
    if let Err(e) = read.read_exact(&mut len).await {
        return Incoming::Closed(format!("sync connection failed within a report: {e}"));
    }
    let len = u32::from_be_bytes(len);
    if len > message::MAX_REPORT_BYTES {
        return Incoming::Closed(format!(
            "sent a report of {len} bytes, more than the {} a report may have",
            message::MAX_REPORT_BYTES
        ));
    }
    // Read as it arrives: what is kept is what the peer sent, never the length it gave.
    let mut json = Vec::new();
    match (&mut *read)
        .take(u64::from(len))
        .read_to_end(&mut json)
        .await
    {
        Ok(n) if n == len as usize => Incoming::Report(json),
        Ok(n) => Incoming::Closed(format!(
            "closed the sync connection {n} bytes into a {len}-byte report"
        )),
        Err(e) => Incoming::Closed(format!("sync connection failed within a report: {e}")),
    }
}

async fn read_loop(
    mut read: ReadHalf<Box<dyn SyncStream>>,
    tag: usize,
    tx: mpsc::Sender<(usize, Incoming)>,
) {
    let mut buf = [0u8; 4];
    loop {
        let event = match read.read_exact(&mut buf).await {
            Ok(_) if message::decode(buf) == message::REPORT_FRAME => report(&mut read).await,
            Ok(_) => Incoming::Message(message::decode(buf)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Incoming::Closed("closed the sync connection".into())
            }
            Err(e) => Incoming::Closed(format!("sync connection failed: {e}")),
        };
        let closed = matches!(event, Incoming::Closed(_));
        if tx.send((tag, event)).await.is_err() || closed {
            return;
        }
    }
}

/// Polls `fut` exactly once: its output if it is ready now, None if it would wait.
fn futures_now<F: std::future::Future>(fut: F) -> Option<F::Output> {
    use std::task::{Context, Poll, Waker};
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}
