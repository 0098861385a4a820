//! The sender-side worker of a both-ways test (`--bidir`): it opens its connections as a
//! sender does, asks the receiver (in each connection's header) to send on them too, and
//! on every connection writes and reads at once, each connection a pair of loops on a
//! current-thread runtime. What it writes counts in its own state, delivered as a
//! sender's (TCP_INFO); what it reads in its second state, as a receiver's.

use std::io;
use std::sync::Arc;

use socket2::SockRef;
use tokio::io::Interest;

use crate::stop::Flag;

use super::aligned::Aligned;
use super::header::Header;
use super::plan::SendPlan;
use super::reverse::{Receiving, read_all, scratch};
use super::sending::{closed, wait_start};
use super::tasks::on_runtime;
use super::tcp_send::{Withdraw, delivering, open_announced, wind_up};
use super::worker::WorkerState;

/// Body of a both-ways worker thread; `index` is its thread number.
pub(crate) fn bidir_worker(
    index: usize,
    plan: SendPlan,
    me: Arc<WorkerState>,
    start: Flag,
    stop: Flag,
) {
    let (Some(back), Some(buf)) = (plan.back.clone(), plan.payload.buffer()) else {
        return me.fail("a both-ways worker needs its reading count and a send buffer".into());
    };
    let scratch = match scratch() {
        Ok(scratch) => scratch,
        Err(e) => return me.fail(format!("receive buffer: {e}")),
    };
    let head = Header::Bidir {
        size: plan.size as u32,
    };
    let Some(socks) = open_announced(&plan, &me, &stop, head) else {
        return;
    };
    *me.sockets
        .delivering
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = delivering(&socks);
    let withdraw = Withdraw(&me);
    let listed = Receiving::register(&back, &socks);
    if !wait_start(&start, &stop) {
        return;
    }
    let (socks, r) = on_runtime(socks, &stop, async |s| {
        both(s, buf, &scratch, &me, &back).await
    });
    wind_up(index, &socks, r, "exchange with", &plan, &me, &stop);
    // Withdrawn before they close, so no sample asks about a closed descriptor.
    drop((listed, withdraw));
    drop(socks);
}

/// Writes `buf` again and again and reads whatever comes on one connection, at once,
/// until either way fails ("stop" ends it from outside).
async fn both(
    s: &mut tokio::net::TcpStream,
    buf: &[u8],
    scratch: &std::cell::RefCell<Aligned<std::mem::MaybeUninit<u8>>>,
    me: &WorkerState,
    back: &WorkerState,
) -> io::Result<()> {
    let s = &*s;
    let sock = SockRef::from(s);
    let send = async {
        loop {
            match s.async_io(Interest::WRITABLE, || sock.send(buf)).await {
                Ok(0) => return Err(closed()),
                Ok(n) => me.counters.add(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    };
    let recv = read_all(s, scratch, back);
    tokio::select! {
        r = send => r,
        r = recv => r,
    }
}
