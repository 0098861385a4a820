//! A connection-rate sender worker (`--connect-rate`): each of its connection slots (`-l`)
//! opens a connection to the receiver and closes it again at once, over and over, on a
//! current-thread runtime; every connect is timed (from the call until the connection is
//! established) and counted as one call of no bytes. It closes with a reset, so no
//! connection leaves a TIME_WAIT entry holding its source port. A connect that fails with
//! ECONNRESET was established first (Linux reports a reset in SYN_SENT as ECONNREFUSED):
//! it counts, untimed; so does one during which the slot's thread was preempted.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use socket2::{Protocol, Type};

use crate::stop::Flag;
use crate::sys::sched;

use super::plan::SendPlan;
use super::sending::{local_bind, sender_socket, wait_start};
use super::tasks::first_error;
use super::worker::{WorkerState, runtime};

/// Body of a connection-rate worker thread; `index` is its thread number.
pub(crate) fn connect_worker(
    _index: usize,
    plan: SendPlan,
    me: Arc<WorkerState>,
    start: Flag,
    stop: Flag,
) {
    me.exchanges().connect_rate.store(true, Ordering::Release);
    if !wait_start(&start, &stop) {
        return;
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return me.fail(format!("start connection-rate worker: {e}")),
    };
    let r = rt.block_on(async {
        let slots = (0..plan.conns.max(1))
            .map(|_| Box::pin(churn(&plan, &me)))
            .collect();
        tokio::select! {
            _ = stop.wait() => Ok(()),
            r = first_error(slots) => r,
        }
    });
    if let Err(e) = r
        && !stop.is_set()
    {
        me.fail(format!("connect to receiver {}: {e}", plan.target));
    }
}

/// One slot: connect, count, reset, again, until an error (or "stop" from outside).
async fn churn(plan: &SendPlan, me: &WorkerState) -> io::Result<()> {
    let local = local_bind(plan, 0);
    loop {
        let sock = sender_socket(
            plan.target,
            Type::STREAM,
            Protocol::TCP,
            &plan.opts,
            local.as_ref(),
        )?;
        // Closed with a reset whenever it is dropped: also one the test's end cuts off
        // after its handshake but before this slot saw it complete.
        sock.set_linger(Some(Duration::ZERO))?;
        sock.set_nonblocking(true)?;
        let sock = tokio::net::TcpSocket::from_std_stream(sock.into());
        let (preempted, began) = (sched::preemptions(), Instant::now());
        let s = match tokio::time::timeout(plan.timeout, sock.connect(plan.target))
            .await
            .map_err(|_| timed_out(plan.timeout))?
        {
            Ok(s) => {
                // A connect during which this thread was preempted measured this host's
                // CPUs as much as the path (with more slots than CPUs, a wait of many
                // time slices): counted, untimed.
                let took = began.elapsed();
                me.completed((sched::preemptions() == preempted).then_some(took), 0);
                Some(s)
            }
            // Made, then reset before this slot looked (a receiver over its descriptor
            // budget closes at once): still a connection, the receiver counted it, but
            // when its handshake completed is unknown, so it is not timed. A refusal
            // (ECONNREFUSED) never got that far and stays an error.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                me.completed(None, 0);
                None
            }
            Err(e) => return Err(e),
        };
        drop(s);
    }
}

fn timed_out(after: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no connection within {:.1} s", after.as_secs_f64()),
    )
}
