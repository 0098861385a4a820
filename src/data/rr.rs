//! A request/response sender worker (`--rr SIZE`): each connection opens with our header,
//! then sends SIZE bytes, waits until the receiver has echoed all of them, and times the
//! round trip; one transaction at a time per connection. A worker that owns one
//! connection uses blocking calls (nothing between the socket and the clock); one with
//! several runs a task per connection on a current-thread runtime.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::stop::Flag;

use super::aligned::Aligned;
use super::header::Header;
use super::plan::SendPlan;
use super::sending::{WRITE_POLL, closed, transient, wait_start};
use super::tasks::on_runtime;
use super::tcp_send::{open_announced, wind_up};
use super::worker::WorkerState;

/// Body of a request/response sender worker thread; `index` is its thread number.
pub(crate) fn rr_worker(
    index: usize,
    plan: SendPlan,
    me: Arc<WorkerState>,
    start: Flag,
    stop: Flag,
) {
    let head = Header::Echo {
        size: plan.size as u32,
    };
    let Some(socks) = open_announced(&plan, &me, &stop, head) else {
        return;
    };
    me.exchanges()
        .rr_size
        .store(plan.size as u64, std::sync::atomic::Ordering::Relaxed);
    if !wait_start(&start, &stop) {
        return;
    }
    let (socks, r) = if socks.len() == 1 {
        let r = blocking(&socks[0], &plan, &me, &stop);
        (socks, r)
    } else {
        let (size, timeout) = (plan.size, plan.timeout);
        on_runtime(socks, &stop, async |s| {
            round_trips(s, size, timeout, &me).await
        })
    };
    wind_up(index, &socks, r, "request/response with", &plan, &me, &stop);
}

/// One connection, blocking calls that wake every `WRITE_POLL` to look at "stop".
fn blocking(s: &TcpStream, plan: &SendPlan, me: &WorkerState, stop: &Flag) -> io::Result<()> {
    s.set_read_timeout(Some(WRITE_POLL))?;
    s.set_write_timeout(Some(WRITE_POLL))?;
    let request = Aligned::filled(plan.size, b'A')?;
    let mut response = Aligned::filled(plan.size, 0u8)?;
    while !stop.is_set() {
        let sent = Instant::now();
        let deadline = sent + plan.timeout;
        if !whole(s, Io::Write(&request), stop, Some(deadline))?
            || !whole(s, Io::Read(&mut response), stop, Some(deadline))?
        {
            return Ok(());
        }
        me.completed(Some(sent.elapsed()), plan.size);
    }
    Ok(())
}

/// A whole request to write or response to read.
pub(super) enum Io<'a> {
    Write(&'a [u8]),
    Read(&'a mut [u8]),
}

/// Moves all of `io`; false if "stop" came first. A transaction not done by `deadline`
/// (the `--timeout` after its request went out) is an error.
pub(super) fn whole(
    mut s: &TcpStream,
    mut io: Io<'_>,
    stop: &Flag,
    deadline: Option<Instant>,
) -> io::Result<bool> {
    let len = match &io {
        Io::Write(b) => b.len(),
        Io::Read(b) => b.len(),
    };
    let mut done = 0;
    while done < len {
        let r = match &mut io {
            Io::Write(b) => s.write(&b[done..]),
            Io::Read(b) => s.read(&mut b[done..]),
        };
        match r {
            Ok(0) => return Err(closed()),
            Ok(n) => done += n,
            Err(e) if transient(&e) => {
                if stop.is_set() {
                    return Ok(false);
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(no_response());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn no_response() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "no response within --timeout: the receiver does not echo requests (it must be this \
         ntttcp), or the path is gone",
    )
}

/// One connection's transactions until an error ("stop" ends it from outside).
async fn round_trips(
    s: &mut tokio::net::TcpStream,
    size: usize,
    timeout: Duration,
    me: &WorkerState,
) -> io::Result<()> {
    let request = Aligned::filled(size, b'A')?;
    let mut response = Aligned::filled(size, 0u8)?;
    loop {
        let sent = Instant::now();
        let exchange = async {
            s.write_all(&request).await?;
            s.read_exact(&mut response).await
        };
        match tokio::time::timeout(timeout, exchange).await {
            Err(_) => return Err(no_response()),
            Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(closed()),
            Ok(r) => r?,
        };
        me.completed(Some(sent.elapsed()), size);
    }
}
