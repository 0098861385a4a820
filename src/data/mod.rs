//! The data path: one pinned OS thread per ntttcp worker and the loops that move bytes,
//! for TCP (`tcp_send`, `tcp_recv`) and UDP (`udp`, whose stamps `udp_accounting` reads).
//!
//! The arrows run one way: the loops use `sending` (socket set-up, pacing, bounded
//! waits), `plan` (what a worker is given) and `worker` (what it shares with the control
//! plane: counters, descriptors, failures); `worker` uses `udp_accounting` for the
//! datagram counts it carries. Each worker owns its counters, written only by its own
//! thread and sampled by the control plane at the edges of the measurement window.

mod plan;
mod sending;
mod tcp_recv;
mod tcp_send;
pub mod udp;
pub mod udp_accounting;
mod worker;

pub use plan::{Flows, Payload, RecvPlan, SendPlan};
pub use sending::listen;
pub use tcp_recv::{PortControl, RecvBuffer, recv_worker};
pub use tcp_send::send_worker;
pub use worker::{Applied, Counters, Sample, Worker};
