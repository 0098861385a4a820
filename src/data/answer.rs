//! The receiver's answer to a request/response connection that is its worker's only one:
//! a thread of its own (from the worker runtime's blocking pool, pinned where the worker
//! is) answers it with blocking calls, one read and one write per transaction, as the
//! sender's side of such a connection does. On the runtime each transaction also costs a
//! read that finds nothing and a wait in epoll, a tenth of a round trip when both ends
//! share a CPU. The runtime stays free for the worker's accepts and settle requests, and
//! connections that arrive beside this one are answered there.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::Arc;

use crate::stop::Flag;

use super::aligned::Aligned;
use super::header::Requests;
use super::rr::{Io, whole};
use super::sending::{WRITE_POLL, transient};
use super::worker::WorkerState;

/// Largest read of an answering thread: a request larger than this is read in parts.
const MAX_READ: usize = 1 << 16;

/// Answers `s` (requests of `size` bytes, answered from `fill`) on a thread of its own
/// until the sender closes it or this task is dropped with its runtime; gives the socket
/// back, so that the caller closes it after withdrawing its descriptor.
pub(super) async fn on_own_thread(
    s: tokio::net::TcpStream,
    me: &Arc<WorkerState>,
    size: usize,
    fill: Arc<Aligned<u8>>,
) -> Option<TcpStream> {
    let s = s.into_std().ok()?;
    let quit = Flag::new();
    // Dropped with this task (the runtime ending, the test over): the thread sees it
    // within WRITE_POLL and returns, which the runtime's drop waits for.
    let _quit = Quit(quit.clone());
    let me = me.clone();
    tokio::task::spawn_blocking(move || {
        crate::sys::affinity::pin_current(me.pinned());
        answer_all(&s, &me, size, &fill, &quit);
        s
    })
    .await
    .ok()
}

/// Triggers its flag when dropped.
struct Quit(Flag);

impl Drop for Quit {
    fn drop(&mut self) {
        self.0.trigger();
    }
}

/// Reads requests and writes each whole one's answer until the connection ends or
/// `quit`; the bytes read count in the worker's `answered` counters, whose only writer
/// this thread is.
fn answer_all(s: &TcpStream, me: &WorkerState, size: usize, fill: &[u8], quit: &Flag) {
    let ready = s
        .set_nonblocking(false)
        .and_then(|()| s.set_read_timeout(Some(WRITE_POLL)))
        .and_then(|()| s.set_write_timeout(Some(WRITE_POLL)));
    if ready.is_err() {
        return;
    }
    let Ok(mut buf) = Aligned::filled(size.min(MAX_READ), 0u8) else {
        return;
    };
    let (mut requests, mut reader) = (Requests::new(size), s);
    let answered = &me.exchanges().answered;
    while !quit.is_set() {
        let whole = match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                answered.add(n);
                requests.read(n)
            }
            Err(e) if transient(&e) => continue,
            Err(_) => return,
        };
        for _ in 0..whole {
            if !matches!(answer(s, fill, size, quit), Ok(true)) {
                return;
            }
        }
    }
}

/// Writes `size` bytes from `chunk`, repeated as often as it takes; false if `quit`
/// came first.
fn answer(s: &TcpStream, chunk: &[u8], size: usize, quit: &Flag) -> io::Result<bool> {
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len());
        if !whole(s, Io::Write(&chunk[..n]), quit, None)? {
            return Ok(false);
        }
        left -= n;
    }
    Ok(true)
}
