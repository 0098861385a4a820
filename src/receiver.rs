//! The receiver role, top to bottom: bind every data port and the sync port (failing at
//! once, naming the port), start one pinned worker per port, wait for a sender (the sync
//! handshake, or in no-sync mode the first bytes on any data connection), run the timeline,
//! report.
//!
//! The sync listener keeps answering while a test runs, so a second sender hears
//! "busy" instead of hanging; a dead sender ends the test early with a fault.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::config::Config;
use crate::control::message::{self, Reply, Request, RequestPhase, State};
use crate::control::{Connection, Incoming, Writer};
use crate::report::{Report, Side};
use crate::stop::Flag;
use crate::stream::{self, Worker};
use crate::sys::affinity;
use crate::timeline::{self, End, Event, Monitor, Phase, Plan};
use crate::{Interrupted, Note, Notes, StopOnDrop, join_workers};

/// Runs the receiver side of one test.
pub async fn run(cfg: &Config, interrupt: &Flag, notes: Notes<'_>) -> Result<Report> {
    let ip = |j: usize| -> Result<IpAddr> {
        let h = cfg.host_of(j);
        h.parse()
            .with_context(|| format!("receiver address '{h}' is not an IP address"))
    };
    let mut listeners = Vec::with_capacity(cfg.ports.len());
    for j in 0..cfg.ports.len() {
        let addr = SocketAddr::new(ip(j)?, cfg.port(j));
        listeners.push(
            stream::listen(addr)
                .with_context(|| format!("cannot listen on data port {} ({addr})", addr.port()))?,
        );
    }
    let sync_listener = if cfg.sync {
        let addr = SocketAddr::new(ip(0)?, cfg.sync_port());
        let l = stream::listen(addr)
            .and_then(|l| {
                l.set_nonblocking(true)?;
                TcpListener::from_std(l)
            })
            .with_context(|| format!("cannot listen on sync port {} ({addr})", addr.port()))?;
        Some(l)
    } else {
        None
    };

    let stop = Flag::new();
    let _stop_guard = StopOnDrop(stop.clone());
    let first = Flag::new();
    let allowed = affinity::allowed_cpus();
    let workers: Vec<Arc<Worker>> = listeners.iter().map(|_| Arc::default()).collect();
    let mut handles = Vec::with_capacity(workers.len());
    for (j, (l, w)) in listeners.into_iter().zip(&workers).enumerate() {
        let cpu = affinity::cpu_for(cfg.ports[j].cpu, j, &allowed);
        let (w, first, stop, size) = (w.clone(), first.clone(), stop.clone(), cfg.recv_size);
        handles.push(
            std::thread::Builder::new()
                .name(format!("recv-{j}"))
                .spawn(move || stream::recv_worker(l, cpu, size, w, first, stop))
                .context("create receiver worker thread")?,
        );
    }

    let state = Arc::new(Mutex::new(State::NotStarted));
    let (incoming_tx, incoming) = mpsc::channel(8);
    let (t0, negotiated, writer, acceptor) = match sync_listener {
        Some(listener) => {
            let (start_tx, mut start_rx) = mpsc::channel(1);
            let acceptor = tokio::spawn(serve_sync(
                listener,
                state.clone(),
                start_tx,
                cfg.timeline.duration,
                cfg.connect_timeout,
            ));
            let (mut conn, n): (Connection, u32) = tokio::select! {
                Some(s) = start_rx.recv() => s,
                _ = interrupt.wait() => { acceptor.abort(); return Err(Interrupted.into()) }
            };
            // As upstream, the clock starts before the 'R' reply goes out.
            let t0 = Instant::now();
            conn.send(Reply::Go.value()).await?;
            notes(Note::Info(format!("sync connection from {}", conn.peer())));
            if n != cfg.timeline.duration {
                notes(Note::Warn(match n {
                    0 => "test is negotiated to run in continuous mode".into(),
                    n => format!("Test cycle time negotiated is: {n} seconds"),
                }));
            }
            (t0, n, Some(conn.monitor(0, incoming_tx)), Some(acceptor))
        }
        None => {
            tokio::select! {
                _ = first.wait() => {}
                _ = interrupt.wait() => return Err(Interrupted.into()),
            }
            (Instant::now(), cfg.timeline.cycle(), None, None)
        }
    };
    notes(Note::Started);

    // The sender's proposal is its whole cycle: our cool-down must fit inside it.
    let plan = Plan::within(cfg.timeline, negotiated, true);
    let mut mon = ReceiverMonitor {
        incoming: Some(incoming),
        writer,
        interrupt: interrupt.clone(),
        workers: &workers,
        tick: tokio::time::interval(Duration::from_millis(100)),
        peer_ended: false,
        sync: cfg.sync,
    };
    let window = timeline::run(t0, plan, &workers, &mut mon).await;
    *state.lock().unwrap_or_else(|p| p.into_inner()) = State::Finished;
    if window.ended == End::Completed {
        mon.linger(Duration::from_secs(1)).await;
    }
    // An 'E' (during the test or while lingering) is answered once the test has stopped.
    if mon.peer_ended
        && let Some(w) = mon.writer.as_mut()
    {
        let _ = w.send(Reply::State(State::Finished).value()).await;
    }
    if let Some(w) = mon.writer.take() {
        w.close().await;
    }
    if let Some(a) = acceptor {
        a.abort();
    }
    stop.trigger();
    join_workers(handles, &workers, Duration::from_secs(1)).await;

    let ports: Vec<u16> = (0..workers.len()).map(|j| cfg.port(j)).collect();
    let connections = workers
        .iter()
        .map(|w| w.connections.load(Ordering::Acquire))
        .sum();
    Ok(Report::from_window(
        Side::Receiver,
        cfg.recv_size,
        &ports,
        connections,
        cfg.sync.then_some(negotiated),
        &window,
    ))
}

/// Accepts sync connections for as long as the receiver runs; each gets its own task.
async fn serve_sync(
    listener: TcpListener,
    state: Arc<Mutex<State>>,
    start: mpsc::Sender<(Connection, u32)>,
    duration: u32,
    deadline: Duration,
) {
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                let conn = Connection::new(s, deadline);
                tokio::spawn(sync_session(
                    conn,
                    state.clone(),
                    start.clone(),
                    duration,
                    deadline,
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// One sender's handshake, decoded by phase: query, proposal, start. The first sender to
/// ask for a start wins; later ones hear "running" and are rejected.
async fn sync_session(
    mut conn: Connection,
    state: Arc<Mutex<State>>,
    start: mpsc::Sender<(Connection, u32)>,
    duration: u32,
    start_wait: Duration,
) -> Result<()> {
    let current = |s: &Arc<Mutex<State>>| *s.lock().unwrap_or_else(|p| p.into_inner());
    Request::decode(RequestPhase::Query, conn.recv().await?)?;
    conn.send(Reply::State(current(&state)).value()).await?;
    let Request::Propose(p) = Request::decode(RequestPhase::Proposal, conn.recv().await?)? else {
        unreachable!("decode in the Proposal phase only yields Propose");
    };
    let n = message::negotiate(p, duration);
    conn.send(Reply::Negotiated(n).value()).await?;
    loop {
        // Between the proposal and 'R' the sender opens its data connections, which its
        // own connect deadline bounds; give it that deadline twice over.
        let v = conn.recv_within(2 * start_wait).await?;
        match Request::decode(RequestPhase::Start, v)? {
            Request::Query => conn.send(Reply::State(current(&state)).value()).await?,
            Request::Start => {
                let won = {
                    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                    let free = *s != State::Running;
                    if free {
                        *s = State::Running;
                    }
                    free
                };
                if won {
                    let _ = start.send((conn, n)).await;
                } else {
                    conn.send(Reply::Reject.value()).await?;
                }
                return Ok(());
            }
            // Multi-client tests are not implemented yet: a clear reject, not a stale value.
            Request::StartLast => return conn.send(Reply::Reject.value()).await,
            Request::End | Request::Propose(_) => {
                return conn.send(Reply::State(current(&state)).value()).await;
            }
        }
    }
}

/// Events on the receiver side: Ctrl+C, the sender's 'E' or its disappearance, every data
/// connection gone.
struct ReceiverMonitor<'a> {
    incoming: Option<mpsc::Receiver<(usize, Incoming)>>,
    writer: Option<Writer>,
    interrupt: Flag,
    workers: &'a [Arc<Worker>],
    tick: tokio::time::Interval,
    peer_ended: bool,
    sync: bool,
}

impl ReceiverMonitor<'_> {
    /// Every data connection that was opened has closed again.
    fn all_closed(&self) -> bool {
        let opened: usize = self
            .workers
            .iter()
            .map(|w| w.connections.load(Ordering::Acquire))
            .sum();
        opened > 0
            && self
                .workers
                .iter()
                .all(|w| w.open.load(Ordering::Acquire) == 0)
    }

    /// After a completed test, keeps draining until the sender is done (its sync channel
    /// or all its connections close) or `within` passes, so a sender whose clock started
    /// a little later is not cut off by our close.
    async fn linger(&mut self, within: Duration) {
        let _ = tokio::time::timeout(within, self.next(Phase::Cooldown)).await;
    }
}

impl Monitor for ReceiverMonitor<'_> {
    async fn next(&mut self, _phase: Phase) -> Event {
        loop {
            let msg = async {
                match self.incoming.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.interrupt.wait() => return Event::Interrupted,
                m = msg => match m {
                    Some((_, Incoming::Message(v))) => {
                        match Request::decode(RequestPhase::Running, v) {
                            Ok(Request::End) => {
                                self.peer_ended = true;
                                return Event::PeerEnded;
                            }
                            Ok(_) => {
                                if let Some(w) = self.writer.as_mut() {
                                    let _ = w.send(Reply::State(State::Running).value()).await;
                                }
                            }
                            Err(_) => {} // stray value: the test goes on
                        }
                    }
                    Some((_, Incoming::Closed(reason))) => {
                        self.incoming = None;
                        return Event::Fault(format!("sender {reason}"));
                    }
                    None => {
                        self.incoming = None;
                        return Event::Fault("sender closed the sync connection".into());
                    }
                },
                _ = self.tick.tick() => {
                    if self.all_closed() {
                        let how = if self.sync { "" } else { " (no-sync mode)" };
                        return Event::Fault(format!("all data connections closed{how}"));
                    }
                }
            }
        }
    }
}
