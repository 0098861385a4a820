//! How a test begins on the receiver: a sender's start request (sync mode), every
//! Windows token exchanged, or the first bytes of a new data connection (no-sync mode).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use super::sessions::{self, SharedState, StartRequest};
use crate::admission::Admission;
use crate::config::{Config, MAX_WAITING_CLIENTS, Protocol};
use crate::control::message::{Reply, State};
use crate::control::{Connection, windows};
use crate::data::WorkerState;
use crate::report::{Note, Notes};
use crate::role::warn_negotiated;
use crate::stop::Flag;
use crate::sys::affinity;
use crate::timeline;

/// A test that has begun.
pub(crate) struct StartedTest {
    /// Where its clock starts.
    pub clock: timeline::Start,
    /// The negotiated cycle.
    pub negotiated: u32,
    /// The senders' sync connections (none without Linux sync).
    pub conns: Vec<Connection>,
    /// Its senders announced a connection-rate test.
    pub connect_rate: bool,
}

impl StartedTest {
    /// A test that began at `at` without a handshake.
    fn unsynced(cfg: &Config, at: Instant) -> Self {
        Self {
            clock: timeline::Start::At(at),
            negotiated: cfg.timeline.cycle(),
            conns: Vec::new(),
            connect_rate: false,
        }
    }
}

/// What a syncing receiver says once, when a data connection comes that no handshake
/// asked for: the likeliest cause is a sender without sync.
fn stray_connection(peer: std::net::SocketAddr) -> String {
    format!(
        "a data connection from {peer} came without the sync handshake and was closed: \
         that sender runs without sync (-ns / -N); give this receiver -N (-ns in Windows \
         NTttcp's spelling) too, or start the sender without it. Still waiting for a \
         sender that syncs"
    )
}

/// The first data connection that came with no handshake asking for it; after it, none
/// (the watch is dropped, and this waits for ever).
async fn first_stray(
    strays: &mut Option<tokio::sync::watch::Receiver<Option<std::net::SocketAddr>>>,
) -> std::net::SocketAddr {
    let mut peer = None;
    if let Some(watch) = strays {
        while peer.is_none() && watch.changed().await.is_ok() {
            peer = *watch.borrow_and_update();
        }
    }
    *strays = None;
    match peer {
        Some(peer) => peer,
        None => std::future::pending().await,
    }
}

/// Sync mode: waits for a sender's start request (in `-M` mode, for the last client),
/// starts the clock and tells the senders to go. A data connection that comes with no
/// handshake is closed, and the first one is named on stderr (`stray_connection`).
pub(crate) async fn wait_for_senders(
    cfg: &Config,
    start_rx: &mut mpsc::Receiver<StartRequest>,
    sync: &SyncParts<'_>,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Option<StartedTest> {
    let state = sync.state;
    let mut waiting: Vec<Connection> = Vec::new();
    // A multi-client test is a connection-rate one if any of its senders said so.
    let mut connect_rate = false;
    let mut strays = Some(sync.gate.strays());
    loop {
        let req = tokio::select! {
            Some(r) = start_rx.recv() => r,
            _ = interrupt.wait() => return None,
            peer = first_stray(&mut strays) => {
                notes(Note::Warn(stray_connection(peer)));
                continue;
            }
        };
        settle_sender(cfg, sync).await;
        let peer = req.conn.peer().to_string();
        connect_rate |= req.connect_rate;
        if cfg.roles.multi_client && !req.last {
            let mut conn = req.conn;
            waiting.retain_mut(|c| !c.peer_closed());
            if waiting.len() >= MAX_WAITING_CLIENTS {
                notes(Note::Warn(format!(
                    "too many clients waiting for the last one; rejected {peer}"
                )));
                let _ = conn.send(Reply::Reject.value()).await;
            } else if conn.send(Reply::Wait.value()).await.is_ok() {
                notes(Note::Info(format!("{peer} waits for the last client")));
                waiting.push(conn);
            }
            continue;
        }
        waiting.retain_mut(|c| !c.peer_closed());
        waiting.push(req.conn);
        sessions::set(state, State::Running);
        sync.gate.set_running(true, connect_rate);
        // As upstream, the clock starts before the 'R' replies go out; each sender gets
        // exactly one (ntttcp-for-linux sends the last client two). The window's first
        // edge is sampled now too, before any sender can send a byte. From here to the
        // window's last edge this thread keeps a real-time priority where allowed, so
        // that the answers leave right after the sample however busy the CPUs are (a
        // late answer would start the senders' windows late; the timeline drops it).
        affinity::prompt_wakeups(true);
        if !start_instant(&mut waiting, cfg, interrupt).await {
            affinity::prompt_wakeups(false);
            return None;
        }
        let t0 = timeline::Edge::before_traffic(sync.all);
        let mut started = Vec::with_capacity(waiting.len());
        for mut c in waiting.drain(..) {
            if c.send(Reply::Go.value()).await.is_ok() {
                notes(Note::Info(format!("test started with {}", c.peer())));
                started.push(c);
            }
        }
        if started.is_empty() {
            affinity::prompt_wakeups(false);
            sync.gate.set_running(false, false);
            sessions::set(state, req.previous);
            continue; // the sender vanished between asking and our answer
        }
        warn_negotiated(req.negotiated, cfg.timeline.duration, notes);
        return Some(StartedTest {
            clock: timeline::Start::Sampled(Box::new(t0)),
            negotiated: req.negotiated,
            conns: started,
            connect_rate,
        });
    }
}

/// Every connection a sender opened before its 'R' is taken before the gate can close
/// (its start request keeps the gate open until it is dropped).
async fn settle_sender(cfg: &Config, sync: &SyncParts<'_>) {
    if cfg.data.protocol == Protocol::Tcp {
        let ports: Vec<u16> = (0..cfg.streams.ports.len()).map(|j| cfg.port(j)).collect();
        settle(sync.gate, sync.workers, &ports, cfg.timeout).await;
    }
}

/// `--start-at`: waits until the instant the senders gave comes (less this receiver's
/// warm-up); false when interrupted first. No instant: at once. A sender that goes away
/// meanwhile is let go; when none is left the wait ends with `senders` empty, and no
/// test starts.
async fn start_instant(senders: &mut Vec<Connection>, cfg: &Config, interrupt: &Flag) -> bool {
    let Some(at) = senders.iter().filter_map(Connection::start_at).max() else {
        return true;
    };
    let warmup = std::time::Duration::from_secs(cfg.timeline.warmup.into());
    let wait = timeline::until_wall(at, warmup, interrupt);
    tokio::pin!(wait);
    loop {
        tokio::select! {
            reached = &mut wait => return reached,
            () = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                senders.retain_mut(|c| !c.peer_closed());
                if senders.is_empty() {
                    return true;
                }
            }
        }
    }
}

/// What the sync-mode controller works with.
pub(crate) struct SyncParts<'a> {
    pub(crate) state: &'a SharedState,
    pub(crate) gate: &'a Admission,
    pub(crate) workers: &'a [Arc<WorkerState>],
    /// Every count the timeline samples (`Directions::all`).
    pub(crate) all: &'a [Arc<WorkerState>],
}

/// Has every worker accept what is queued on its port (thousands of connections take a
/// busy receiver a while), again while connections to the ports are still half-open (on a
/// lossy path a handshake's last ACK may come a retransmission later); waits at most
/// `within`.
async fn settle(gate: &Admission, workers: &[Arc<WorkerState>], ports: &[u16], within: Duration) {
    let give_up = Instant::now() + within;
    loop {
        let epoch = gate.request_settle();
        while Instant::now() < give_up
            && workers
                .iter()
                .any(|w| w.settled() < epoch && !w.is_finished())
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if Instant::now() >= give_up || crate::sys::net::half_open(ports) == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Windows sync: waits until every thread's token has been exchanged (a failed exchange,
/// such as a port scanner's connection, just waits for the next one).
pub(crate) async fn wait_for_tokens(
    cfg: &Config,
    listeners: &[Arc<TcpListener>],
    interrupt: &Flag,
) -> Option<StartedTest> {
    let mut set = tokio::task::JoinSet::new();
    for l in listeners {
        let (l, per_peer) = (l.clone(), cfg.timeout);
        set.spawn(async move {
            while windows::exchange_as_receiver(&l, per_peer).await.is_err() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
    }
    let all = async { while set.join_next().await.is_some() {} };
    tokio::select! {
        _ = all => {}
        _ = interrupt.wait() => return None,
    }
    Some(StartedTest::unsynced(cfg, Instant::now()))
}

/// No-sync mode: waits until a new data connection starts to carry bytes.
pub(crate) async fn wait_for_flow(
    cfg: &Config,
    flows: &watch::Sender<u64>,
    seen: &mut u64,
    interrupt: &Flag,
) -> Option<StartedTest> {
    let mut rx = flows.subscribe();
    let before = *seen;
    tokio::select! {
        r = rx.wait_for(|n| *n > before) => { r.ok()?; }
        _ = interrupt.wait() => return None,
    }
    Some(StartedTest::unsynced(cfg, Instant::now()))
}
