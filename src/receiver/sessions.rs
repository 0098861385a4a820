//! The receiver's sync server: accepts sync connections for as long as the receiver
//! runs, runs each sender's handshake in its own task (decoded by phase, every read
//! bounded by the deadline), and hands senders that ask to start to the controller.
//!
//! Bounded against bad peers: at most `MAX_SESSIONS` handshakes at once, 4 bytes of
//! buffer each, a deadline on every read and one on the whole handshake (counted from the
//! connect, whatever the peer sends meanwhile). When every slot is taken, the session
//! that has made no progress for longest (a re-query is not progress) is closed to make
//! room, so a real sender always gets in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::admission::{Admission, HandshakeGuard};
use crate::control::Connection;
use crate::control::message::{self, Reply, Request, RequestPhase, State};

/// Most handshakes in progress at once.
pub(crate) const MAX_SESSIONS: usize = 256;

/// A sender that asked to start, with its connection (the controller replies).
#[derive(Debug)]
pub(crate) struct StartRequest {
    /// The sender's sync connection.
    pub conn: Connection,
    /// Whether it sent 'L' (the last client of a multi-client test).
    pub last: bool,
    /// The cycle time it was told.
    pub negotiated: u32,
    /// It announced a connection-rate test: its connections are counted and closed.
    pub connect_rate: bool,
    /// The receiver's state before this request (restored if the start falls through).
    pub previous: State,
    /// Keeps data connections welcome until the controller has handled this request
    /// (held for its drop, never read).
    pub _admitting: HandshakeGuard,
}

/// What the sessions need to know about the receiver.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    /// The receiver's own duration (negotiation input).
    pub duration: u32,
    /// Multi-client mode (-M).
    pub multi_client: bool,
    /// Deadline for each handshake read.
    pub deadline: Duration,
    /// Keepalive probes on an idle session (`--sync-keepalive`).
    pub keepalive: Option<Duration>,
}

impl Policy {
    /// The whole handshake, from connect to the start request: the query and the
    /// proposal, then the sender's data connections (bounded by its own connect deadline).
    pub(crate) fn session_limit(&self) -> Duration {
        3 * self.deadline
    }
}

/// The receiver's state as the sessions report it.
pub(crate) type SharedState = Arc<Mutex<State>>;

/// Reads the shared state.
pub(crate) fn current(state: &SharedState) -> State {
    *state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets the shared state.
pub(crate) fn set(state: &SharedState, s: State) {
    *state.lock().unwrap_or_else(|p| p.into_inner()) = s;
}

/// One handshake in progress, as the accept loop sees it.
struct Slot {
    task: AbortHandle,
    /// When the session last made progress, ms since the server started; `HANDED_OVER`
    /// once it is handing its connection to the controller (never evicted then).
    progress: Arc<AtomicU64>,
}

/// A session's progress stamp once it starts a test.
const HANDED_OVER: u64 = u64::MAX;

/// Where a session records its progress.
#[derive(Clone)]
struct Progress {
    epoch: Instant,
    stamp: Arc<AtomicU64>,
}

impl Progress {
    fn now(&self) {
        let ms = self.epoch.elapsed().as_millis() as u64;
        self.stamp.store(ms, Ordering::Relaxed);
    }

    fn handed_over(&self) {
        self.stamp.store(HANDED_OVER, Ordering::Relaxed);
    }
}

/// Accepts sync connections forever; each gets its own handshake task, bounded by
/// `Policy::session_limit` from its connect.
pub(crate) async fn serve(
    listener: TcpListener,
    state: SharedState,
    start: mpsc::Sender<StartRequest>,
    policy: Policy,
    gate: Arc<Admission>,
) {
    let epoch = Instant::now();
    let mut slots: Vec<Slot> = Vec::new();
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                slots.retain(|s| !s.task.is_finished());
                if slots.len() >= MAX_SESSIONS {
                    evict(&mut slots);
                }
                let progress = Progress {
                    epoch,
                    stamp: Arc::default(),
                };
                progress.now();
                let conn = Connection::new(s, policy.deadline, policy.keepalive);
                let (state, start, policy) = (state.clone(), start.clone(), policy.clone());
                let gate = gate.clone();
                let stamp = progress.stamp.clone();
                let task = tokio::spawn(async move {
                    let limit = policy.session_limit();
                    let run = session(conn, state, start, policy, progress, gate);
                    let _ = tokio::time::timeout(limit, run).await;
                });
                slots.push(Slot {
                    task: task.abort_handle(),
                    progress: stamp,
                });
            }
            // Out of descriptors and the like: keep serving, without spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Closes the session that has gone longest without progress.
fn evict(slots: &mut Vec<Slot>) {
    let oldest = slots
        .iter()
        .enumerate()
        .min_by_key(|(_, s)| s.progress.load(Ordering::Relaxed))
        .map(|(i, _)| i);
    if let Some(i) = oldest {
        let victim = slots.swap_remove(i);
        if victim.progress.load(Ordering::Relaxed) != HANDED_OVER {
            victim.task.abort();
        }
    }
}

/// The sender's proposal, and whether it announced a connection-rate test; a sender
/// that needs our extension sends its probe first, and is told what this receiver serves
/// (a sender that asks for this receiver's report at the end is promised it).
async fn proposal(conn: &mut Connection) -> Result<(u32, bool)> {
    let (mut probed, mut connect_rate) = (false, false);
    loop {
        match Request::decode(RequestPhase::Proposal, conn.recv().await?)? {
            Request::Propose(p) => return Ok((p, connect_rate)),
            Request::Probe if !probed => {
                probed = true;
                conn.send(Reply::Features(message::Features::ALL).value())
                    .await?;
            }
            Request::ConnectRate if probed && !connect_rate => {
                connect_rate = true;
                conn.send(Reply::ConnectRateTaken.value()).await?;
            }
            Request::WantReport if probed && !conn.wants_report() => {
                conn.promise_report();
                conn.send(Reply::ReportPromised.value()).await?;
            }
            Request::StartAt if probed && conn.start_at().is_none() => {
                let (hi, lo) = (conn.recv().await? as u32, conn.recv().await? as u32);
                let at = start_instant(u64::from(hi) << 32 | u64::from(lo))?;
                conn.set_start_at(at);
                conn.send(Reply::StartAtTaken.value()).await?;
            }
            other => bail!("unexpected {other:?} while waiting for a proposal"),
        }
    }
}

/// The start instant a sender gave, in Unix microseconds: no later than a day and a
/// minute from now (a sender checks a day; a peer's clock may be a little ahead), so no
/// peer can hold this receiver longer.
fn start_instant(micros: u64) -> Result<std::time::SystemTime> {
    let at = std::time::UNIX_EPOCH + Duration::from_micros(micros);
    let latest = std::time::SystemTime::now() + Duration::from_secs(86_400 + 60);
    if at > latest {
        bail!("a start instant more than a day ahead");
    }
    Ok(at)
}

/// One handshake on `conn`, as the sync server runs it but without the server's limit
/// on the whole session (the fuzz target checks that each read has a deadline of its
/// own): how it ended, and the start request it handed over, if any.
#[cfg(feature = "fuzzing")]
pub(crate) async fn one_session(
    conn: Connection,
    state: State,
    policy: Policy,
) -> (Result<()>, Option<StartRequest>) {
    let (tx, mut rx) = mpsc::channel(1);
    let progress = Progress {
        epoch: Instant::now(),
        stamp: Arc::default(),
    };
    let gate = Arc::new(Admission::new(true, 16));
    let state = Arc::new(Mutex::new(state));
    let ended = session(conn, state, tx, policy, progress, gate).await;
    (ended, rx.try_recv().ok())
}

/// One sender's handshake: query, proposal, start request.
async fn session(
    mut conn: Connection,
    state: SharedState,
    start: mpsc::Sender<StartRequest>,
    policy: Policy,
    progress: Progress,
    gate: Arc<Admission>,
) -> Result<()> {
    Request::decode(RequestPhase::Query, conn.recv().await?)?;
    conn.send(Reply::State(current(&state)).value()).await?;
    progress.now();
    let (p, connect_rate) = proposal(&mut conn).await?;
    // Multi-client: every sender runs the receiver's own duration (ntttcp-for-linux).
    let n = if policy.multi_client {
        policy.duration
    } else {
        message::negotiate(p, policy.duration)
    };
    // The sender opens its data connections as soon as it reads the reply: they are
    // welcome from before it is sent, for as long as this lives.
    let admitting = gate.handshake();
    conn.send(Reply::Negotiated(n).value()).await?;
    progress.now();
    loop {
        // Between the proposal and 'R' the sender opens its data connections, which its
        // own connect deadline bounds; give it that deadline twice over.
        let v = conn.recv_within(2 * policy.deadline).await?;
        let last = match Request::decode(RequestPhase::Start, v)? {
            // Answered, but not progress: a session that only queries is idle.
            Request::Query => {
                conn.send(Reply::State(current(&state)).value()).await?;
                continue;
            }
            Request::Start => false,
            Request::StartLast => true,
            // 'E', or a value of the handshake again: the state, and the session ends.
            _ => return conn.send(Reply::State(current(&state)).value()).await,
        };
        // From here to the hand-over nothing awaits, so neither eviction nor the session
        // deadline can cut in between the claim and the controller getting the request.
        progress.handed_over();
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
        let busy = previous == State::Running || (last && !policy.multi_client);
        let request = StartRequest {
            conn,
            last,
            negotiated: n,
            connect_rate,
            previous,
            _admitting: admitting,
        };
        let refused = if busy {
            Some(request)
        } else {
            start.try_send(request).err().map(|e| e.into_inner())
        };
        if let Some(mut r) = refused {
            // Busy, -L against a receiver without -M, or too many start requests queued:
            // a clear reject, never a stale value (ntttcp-for-linux replies its previous
            // answer and then waits forever).
            if previous != State::Running {
                set(&state, previous);
            }
            r.conn.send(Reply::Reject.value()).await?;
            bail!("start refused");
        }
        return Ok(());
    }
}
