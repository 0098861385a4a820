//! A sync stream in memory: the peer's bytes come from the fuzzer, in reads of a size it
//! chooses, then the peer closes or goes silent; what the code writes is kept.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::control::SyncStream;

/// What the peer does once its bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum After {
    /// Closes the connection: reads end.
    Close,
    /// Sends nothing more and keeps the connection: reads wait.
    Silent,
}

/// The peer's side of one connection.
#[derive(Debug)]
pub(super) struct Script {
    input: Vec<u8>,
    at: usize,
    chunk: usize,
    after: After,
    written: Arc<Mutex<Vec<u8>>>,
}

impl Script {
    /// A peer that sends `input`, at most `chunk` bytes a read, then does `after`; the
    /// second value is what the code writes to it.
    pub(super) fn new(input: &[u8], chunk: usize, after: After) -> (Self, Arc<Mutex<Vec<u8>>>) {
        let written = Arc::new(Mutex::new(Vec::new()));
        let script = Self {
            input: input.to_vec(),
            at: 0,
            chunk: chunk.max(1),
            after,
            written: written.clone(),
        };
        (script, written)
    }
}

impl AsyncRead for Script {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let left = self.input.len() - self.at;
        if left == 0 {
            return match self.after {
                After::Close => Poll::Ready(Ok(())),
                After::Silent => Poll::Pending,
            };
        }
        let n = left.min(self.chunk).min(buf.remaining());
        let at = self.at;
        buf.put_slice(&self.input[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Script {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
        w.extend_from_slice(b);
        Poll::Ready(Ok(b.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl SyncStream for Script {
    fn peer_closed(&mut self) -> bool {
        self.at == self.input.len() && self.after == After::Close
    }
}

/// A current-thread runtime whose clock is paused (it jumps to the next timer when
/// nothing can run).
pub(super) fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// The 4-byte messages in `bytes` (a partial one at the end is dropped).
pub(super) fn messages(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(4)
        .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
