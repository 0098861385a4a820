//! The data path: one pinned OS thread per ntttcp worker and the loops that move bytes,
//! for TCP (`tcp_send`, `tcp_recv`) and UDP (`udp`, whose stamps `udp_accounting` reads).
//!
//! The arrows run one way: `threads` starts every worker with one prologue; the loops
//! use `sending` (socket set-up, pacing, bounded waits), `plan` (what a worker is given)
//! and `worker` (what it shares with the control plane: counters, descriptors, failures,
//! what its connections showed); `worker` uses `counters` and `udp_accounting` for the
//! counts it carries. Each worker owns its counters, written only by its own
//! thread (and a second set by the thread that `answer` gives a receiver worker's sole
//! request/response connection) and sampled by the control plane at the edges of the
//! measurement window.

mod aligned;
mod answer;
mod bidir;
mod close;
mod connect;
mod counters;
pub(crate) mod header;
mod plan;
mod reverse;
mod rr;
mod sending;
mod tasks;
mod tcp_recv;
mod tcp_send;
mod threads;
pub(crate) mod udp;
pub(crate) mod udp_accounting;
mod worker;

pub(crate) use bidir::bidir_worker;
pub(crate) use connect::connect_worker;
pub(crate) use counters::{merged, record};
pub(crate) use plan::{Flows, Payload, ReadSize, RecvPlan, SendPlan, WIDE_READ};
pub(crate) use reverse::reverse_worker;
pub(crate) use rr::rr_worker;
pub(crate) use sending::listen;
pub(crate) use tcp_recv::{PortControl, RecvBuffer, recv_worker};
pub(crate) use tcp_send::send_worker;
pub(crate) use threads::WorkerThreads;
pub(crate) use worker::{Applied, Sample, TestSeen, WorkerState};
