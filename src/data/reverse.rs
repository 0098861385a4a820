//! The sender-side worker of a reverse test (`-R`): it opens its connections as a sender
//! does, asks the receiver (in each connection's header) to send on them, and reads
//! what comes, counted as a receiver counts: bytes read plus what its kernel holds
//! unread at the edges. One connection: blocking reads; several: a task each on a
//! current-thread runtime.

use std::cell::RefCell;
use std::io;
use std::mem::MaybeUninit;
use std::net::TcpStream;
use std::sync::Arc;

use socket2::SockRef;
use tokio::io::Interest;

use crate::stop::Flag;
use crate::sys::AsSock;

use super::aligned::Aligned;
use super::header::Header;
use super::plan::SendPlan;
use super::sending::{WRITE_POLL, closed, transient, wait_start};
use super::tasks::on_runtime;
use super::tcp_send::{open_announced, wind_up};
use super::worker::WorkerState;

/// Bytes per read.
pub(super) const READ: usize = 64 << 10;

/// Body of a reverse-test worker thread; `index` is its thread number.
pub(crate) fn reverse_worker(
    index: usize,
    plan: SendPlan,
    me: Arc<WorkerState>,
    start: Flag,
    stop: Flag,
) {
    let scratch = match scratch() {
        Ok(scratch) => scratch,
        Err(e) => return me.fail(format!("receive buffer: {e}")),
    };
    let head = Header::Reverse {
        size: plan.size as u32,
    };
    let Some(socks) = open_announced(&plan, &me, &stop, head) else {
        return;
    };
    let listed = Receiving::register(&me, &socks);
    if !wait_start(&start, &stop) {
        return;
    }
    let (socks, r) = if socks.len() == 1 {
        let r = blocking(&socks[0], &me, &stop, &mut scratch.borrow_mut());
        (socks, r)
    } else {
        on_runtime(socks, &stop, async |s| read_all(&*s, &scratch, &me).await)
    };
    wind_up(index, &socks, r, "receive from", &plan, &me, &stop);
    // Withdrawn before they close, so no sample asks about a closed descriptor.
    drop(listed);
    drop(socks);
}

/// One receive buffer for all of a worker's connections, on a page boundary: they take
/// turns on its thread, and a read borrows it only while the call runs.
pub(super) fn scratch() -> io::Result<RefCell<Aligned<MaybeUninit<u8>>>> {
    Aligned::filled(READ, MaybeUninit::uninit()).map(RefCell::new)
}

/// One connection, blocking reads into `buf` that wake every `WRITE_POLL` to look at
/// "stop".
fn blocking(
    s: &TcpStream,
    me: &WorkerState,
    stop: &Flag,
    buf: &mut [MaybeUninit<u8>],
) -> io::Result<()> {
    s.set_read_timeout(Some(WRITE_POLL))?;
    let sock = SockRef::from(s);
    while !stop.is_set() {
        match sock.recv(buf) {
            Ok(0) => return Err(closed()),
            Ok(n) => me.counters.add(n),
            Err(e) if transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One connection read on the runtime, into the worker's shared `scratch`, until an
/// error ("stop" ends it from outside).
pub(super) async fn read_all(
    s: &tokio::net::TcpStream,
    scratch: &RefCell<Aligned<MaybeUninit<u8>>>,
    me: &WorkerState,
) -> io::Result<()> {
    let sock = SockRef::from(s);
    loop {
        let read = || sock.recv(&mut scratch.borrow_mut());
        match s.async_io(Interest::READABLE, read).await {
            Ok(0) => return Err(closed()),
            Ok(n) => me.counters.add(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A worker's connections listed among its receiving sockets while they are open, so
/// the edges count what their kernel holds unread; withdrawn before they close.
pub(super) struct Receiving<'a> {
    me: &'a WorkerState,
}

impl<'a> Receiving<'a> {
    pub(super) fn register(me: &'a WorkerState, socks: &[TcpStream]) -> Self {
        me.sockets
            .receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(socks.iter().map(|s| s.raw_sock()));
        Self { me }
    }
}

impl Drop for Receiving<'_> {
    fn drop(&mut self) {
        self.me
            .sockets
            .receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}
