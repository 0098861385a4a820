//! The receiver's sync server: accepts sync connections for as long as the receiver
//! runs, runs each sender's handshake in its own task (decoded by phase, every read
//! bounded by the deadline), and hands senders that ask to start to the controller.
//!
//! Bounded against bad peers: at most `MAX_SESSIONS` handshakes at once (more are closed
//! on accept), 4 bytes of buffer each, and a deadline on every read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};

use crate::control::Connection;
use crate::control::message::{self, Reply, Request, RequestPhase, State};

/// Most handshakes in progress at once.
pub const MAX_SESSIONS: usize = 256;

/// A sender that asked to start, with its connection (the controller replies).
#[derive(Debug)]
pub struct StartRequest {
    /// The sender's sync connection.
    pub conn: Connection,
    /// Whether it sent 'L' (the last client of a multi-client test).
    pub last: bool,
    /// The cycle time it was told.
    pub negotiated: u32,
    /// The receiver's state before this request (restored if the start falls through).
    pub previous: State,
}

/// What the sessions need to know about the receiver.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The receiver's own duration (negotiation input).
    pub duration: u32,
    /// Multi-client mode (-M).
    pub multi_client: bool,
    /// Deadline for each handshake read.
    pub deadline: Duration,
}

/// The receiver's state as the sessions report it.
pub type SharedState = Arc<Mutex<State>>;

/// Reads the shared state.
pub fn current(state: &SharedState) -> State {
    *state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets the shared state.
pub fn set(state: &SharedState, s: State) {
    *state.lock().unwrap_or_else(|p| p.into_inner()) = s;
}

/// Accepts sync connections forever; each gets its own handshake task.
pub async fn serve(
    listener: TcpListener,
    state: SharedState,
    start: mpsc::Sender<StartRequest>,
    policy: Policy,
) {
    let slots = Arc::new(Semaphore::new(MAX_SESSIONS));
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                // Over the limit: close at once rather than queue unbounded work.
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    continue;
                };
                let conn = Connection::new(s, policy.deadline);
                let (state, start, policy) = (state.clone(), start.clone(), policy.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    let _ = session(conn, state, start, policy).await;
                });
            }
            // Out of descriptors and the like: keep serving, without spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// One sender's handshake: query, proposal, start request.
async fn session(
    mut conn: Connection,
    state: SharedState,
    start: mpsc::Sender<StartRequest>,
    policy: Policy,
) -> Result<()> {
    Request::decode(RequestPhase::Query, conn.recv().await?)?;
    conn.send(Reply::State(current(&state)).value()).await?;
    let Request::Propose(p) = Request::decode(RequestPhase::Proposal, conn.recv().await?)? else {
        unreachable!("decode in the Proposal phase only yields Propose");
    };
    // Multi-client: every sender runs the receiver's own duration (ntttcp-for-linux).
    let n = if policy.multi_client {
        policy.duration
    } else {
        message::negotiate(p, policy.duration)
    };
    conn.send(Reply::Negotiated(n).value()).await?;
    loop {
        // Between the proposal and 'R' the sender opens its data connections, which its
        // own connect deadline bounds; give it that deadline twice over.
        let v = conn.recv_within(2 * policy.deadline).await?;
        let last = match Request::decode(RequestPhase::Start, v)? {
            Request::Query => {
                conn.send(Reply::State(current(&state)).value()).await?;
                continue;
            }
            Request::Start => false,
            Request::StartLast => true,
            Request::End | Request::Propose(_) => {
                return conn.send(Reply::State(current(&state)).value()).await;
            }
        };
        // Outside -M mode the first sender claims the receiver here, under the lock, so
        // two senders asking at once cannot both be queued for a start.
        let previous = {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            let previous = *s;
            if previous != State::Running && !policy.multi_client {
                *s = State::Running;
            }
            previous
        };
        if previous == State::Running || (last && !policy.multi_client) {
            // Busy, or -L against a receiver without -M: a clear reject, never a stale
            // value (ntttcp-for-linux replies its previous answer and then waits forever).
            if previous != State::Running {
                set(&state, previous);
            }
            return conn.send(Reply::Reject.value()).await;
        }
        let _ = start
            .send(StartRequest {
                conn,
                last,
                negotiated: n,
                previous,
            })
            .await;
        return Ok(());
    }
}
