//! The receiver role, top to bottom: bind every data port and the sync port (failing at
//! once, naming the port), start one pinned worker per port, then serve tests: wait for
//! senders (the sync handshake; in no-sync mode the first bytes on a data connection),
//! run the timeline, report. Once, or one test after another with `-H`.
//!
//! The sync server (`sessions`) keeps answering while a test runs, so another sender
//! hears "busy" instead of hanging. A sender that disappears, or silence on every data
//! connection for the deadline, ends the test early with a fault.

pub(crate) mod sessions;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::admission::Admission;
use crate::config::{Config, MAX_WAITING_CLIENTS, Protocol, Role, SockOpts};
use crate::control::message::{Reply, Request, RequestPhase, State};
use crate::control::{Connection, Incoming, Writer, windows};
use crate::data::Flows;
use crate::data::udp;
use crate::data::{self, Worker};
use crate::report::{EndKind, Report, Side};
use crate::report::{Note, Notes};
use crate::role::{Crew, Interrupted, applied, this_host, warn_how_it_went, warn_negotiated};
use crate::stats;
use crate::stop::Flag;
use crate::sys::{affinity, limits};
use crate::timeline::{self, End, Event, Monitor, Phase, Plan, Silence};
use sessions::{Policy, SharedState, StartRequest};

/// Runs the receiver: one test, or (with `-H`) tests until interrupted. Every report is
/// also handed to `notes` as soon as it is measured.
pub(crate) async fn run(cfg: &Config, interrupt: &Flag, notes: Notes<'_>) -> Result<Vec<Report>> {
    let ports = bind(cfg, notes)?;
    notes(Note::Ready);
    serve(cfg, ports, interrupt, notes).await
}

/// Every port a receiver listens on, bound and listening.
#[derive(Debug)]
pub(crate) struct Bound {
    data: Vec<DataPort>,
    tokens: Vec<Arc<TcpListener>>,
    handout: Option<TcpListener>,
    sync: Option<TcpListener>,
}

/// Binds every port the receiver needs (data, sync, Windows token and hand-out ports),
/// failing at once with the port that could not be bound. Nothing is accepted yet, so a
/// caller (`--loopback`) can start its sender only once its own receiver is listening.
/// Needs a tokio runtime (the control ports are tokio listeners).
pub(crate) fn bind(cfg: &Config, notes: Notes<'_>) -> Result<Bound> {
    let ip = |j: usize| -> Result<IpAddr> {
        let h = cfg.host_of(j);
        h.parse()
            .with_context(|| format!("receiver address '{h}' is not an IP address"))
    };
    // A receiver cannot know how many connections will come: take all it may have.
    limits::raise_nofile();
    let mut data = Vec::with_capacity(cfg.ports.len());
    for j in 0..cfg.ports.len() {
        let addr = SocketAddr::new(ip(j)?, cfg.port(j));
        let busy = || format!("cannot listen on data port {} ({addr})", addr.port());
        data.push(match cfg.protocol {
            Protocol::Tcp => {
                let l = data::listen(addr, &cfg.sockopts).with_context(busy)?;
                let buf =
                    data::RecvBuffer::new(cfg.recv_size).context("the receive buffer (-b)")?;
                DataPort::Tcp(l, buf)
            }
            Protocol::Udp => {
                let s = udp::bind(addr, &cfg.sockopts).with_context(busy)?;
                // One receive for several datagrams of a flow; an optimisation only, so a
                // kernel without it is reported, not fatal.
                if cfg.udp_offload
                    && !cfg.zero_copy.skip_rx_copy
                    && let Err(e) = crate::sys::socket::set_udp_gro(&s)
                {
                    notes(Note::Warn(format!(
                        "UDP receive coalescing (GRO) is not available on port {}: {e}",
                        addr.port()
                    )));
                }
                DataPort::Udp(s)
            }
        });
    }
    let bind_tokio = |addr: SocketAddr, what: &str| {
        data::listen(addr, &SockOpts::default())
            .and_then(|l| {
                l.set_nonblocking(true)?;
                TcpListener::from_std(l)
            })
            .with_context(|| format!("cannot listen on {what} {} ({addr})", addr.port()))
    };
    // Windows sync: one token port per thread, and with -sp the port hand-out.
    let mut tokens = Vec::new();
    if cfg.windows_sync {
        for j in 0..cfg.ports.len() {
            let addr = SocketAddr::new(ip(j)?, cfg.port(j) + windows::TOKEN_PORT_OFFSET);
            tokens.push(Arc::new(bind_tokio(addr, "sync token port")?));
        }
    }
    let handout = cfg
        .port_handout
        .then(|| bind_tokio(SocketAddr::new(ip(0)?, cfg.base_port), "port hand-out port"))
        .transpose()?;
    let sync = cfg
        .linux_sync()
        .then(|| bind_tokio(SocketAddr::new(ip(0)?, cfg.sync_port()), "sync port"))
        .transpose()?;
    Ok(Bound {
        data,
        tokens,
        handout,
        sync,
    })
}

/// Serves tests on the bound ports: one, or (with `-H`) until interrupted.
pub(crate) async fn serve(
    cfg: &Config,
    ports: Bound,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<Vec<Report>> {
    let Bound {
        data: listeners,
        tokens,
        handout,
        sync,
    } = ports;
    let handout = handout.map(|l| {
        let count = cfg.ports.len() as u16;
        tokio::spawn(windows::serve_ports(l, cfg.base_port, count, cfg.timeout))
    });
    let budget = data_budget(cfg)?;
    notes(Note::Info(format!(
        "data connections kept at most: {budget}"
    )));
    let gate = Arc::new(Admission::new(cfg.linux_sync(), budget));
    let flows = Arc::new(watch::Sender::new(0u64));
    let crew = launch(cfg, listeners, &gate, &flows)?;
    let state: SharedState = Arc::new(std::sync::Mutex::new(State::NotStarted));
    let (start_tx, start_rx) = mpsc::channel(MAX_WAITING_CLIENTS + 1);
    let acceptor = sync.map(|l| {
        let policy = Policy {
            duration: cfg.timeline.duration,
            multi_client: cfg.multi_client,
            deadline: cfg.timeout,
        };
        tokio::spawn(sessions::serve(
            l,
            state.clone(),
            start_tx,
            policy,
            gate.clone(),
        ))
    });
    let parts = Serving {
        state: &state,
        gate: &gate,
        workers: &crew.workers,
        flows: &flows,
        tokens: &tokens,
    };
    let reports = serve_tests(cfg, &parts, start_rx, interrupt, notes).await;
    for task in acceptor.into_iter().chain(handout) {
        task.abort();
    }
    crew.join(Duration::from_secs(1)).await;
    if reports.is_empty() {
        return Err(Interrupted.into());
    }
    Ok(reports)
}

/// Starts one pinned worker per data port; the first reads back the socket options.
fn launch(
    cfg: &Config,
    listeners: Vec<DataPort>,
    gate: &Arc<Admission>,
    flows: &Flows,
) -> Result<Crew> {
    let mut crew = Crew::new();
    let allowed = affinity::allowed_cpus();
    for (j, l) in listeners.into_iter().enumerate() {
        let cpu = match cfg.protocol {
            Protocol::Tcp => affinity::cpu_for(cfg.ports[j].cpu, j, &allowed),
            Protocol::Udp => affinity::udp_receiver_cpu_for(cfg.ports[j].cpu, j, &allowed),
        };
        let control = data::PortControl {
            gate: gate.for_worker(),
            flows: flows.clone(),
        };
        let plan = data::RecvPlan {
            cpu,
            no_delay: cfg.sockopts.no_delay,
            skip_copy: cfg.zero_copy.skip_rx_copy,
        };
        let applied = (j == 0).then(|| {
            let sock = match &l {
                DataPort::Tcp(l, _) => socket2::SockRef::from(l),
                DataPort::Udp(s) => socket2::SockRef::from(s),
            };
            data::Applied::read(&sock)
        });
        let flows = flows.clone();
        crew.add(format!("recv-{j}"), move |w, stop| match l {
            DataPort::Tcp(l, buf) => data::recv_worker(l, buf, plan, w, control, stop),
            DataPort::Udp(s) => udp::recv_worker(s, plan, w, flows, stop),
        })?;
        if let (Some(a), Some(w)) = (applied, crew.workers.last()) {
            *w.applied.lock().unwrap_or_else(|p| p.into_inner()) = Some(a);
        }
    }
    Ok(crew)
}

/// What the receiver's tests are served with.
struct Serving<'a> {
    state: &'a SharedState,
    gate: &'a Admission,
    workers: &'a [Arc<Worker>],
    flows: &'a Flows,
    tokens: &'a [Arc<TcpListener>],
}

/// Serves tests until one ends (`-H`: until interrupted); returns their reports.
async fn serve_tests(
    cfg: &Config,
    parts: &Serving<'_>,
    mut start_rx: mpsc::Receiver<StartRequest>,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Vec<Report> {
    let mut reports = Vec::new();
    let mut flows_seen = 0;
    loop {
        let begun = if cfg.windows_sync {
            wait_for_tokens(cfg, parts.tokens, interrupt).await
        } else if cfg.sync {
            let sync = SyncParts {
                state: parts.state,
                gate: parts.gate,
                workers: parts.workers,
            };
            wait_for_senders(cfg, &mut start_rx, &sync, interrupt, notes).await
        } else {
            wait_for_flow(cfg, parts.flows, &mut flows_seen, interrupt).await
        };
        let Some(begun) = begun else {
            break; // interrupted while no test was running
        };
        if cfg.role != Role::Loopback {
            notes(Note::Started);
        }
        let report = test(cfg, begun, parts.workers, interrupt, notes).await;
        parts.gate.set_running(false);
        sessions::set(parts.state, State::Finished);
        let refused = parts.gate.take_refused();
        if refused > 0 {
            notes(Note::Info(format!(
                "{refused} data connections arrived outside a test (or beyond its \
                 connections) and were closed"
            )));
        }
        flows_seen = *parts.flows.borrow();
        notes(Note::Report(Box::new(report.clone())));
        let interrupted = report.end.kind == EndKind::Interrupted;
        reports.push(report);
        if !cfg.hold || interrupted {
            break;
        }
    }
    reports
}

/// How many data connections this receiver may keep: what its descriptor limit leaves
/// after what is open, its workers' runtimes, and a reserve that keeps the sync port
/// (every handshake slot) and the Windows token ports served whatever the data ports get.
fn data_budget(cfg: &Config) -> Result<usize> {
    let (soft, _) = limits::raise_nofile();
    if soft == 0 {
        return Ok(usize::MAX);
    }
    let ports = cfg.ports.len() as u64;
    let reserve = ports * limits::RUNTIME_FDS
        + sessions::MAX_SESSIONS as u64
        + ports
        + limits::TRANSIENT_FDS
        + 8;
    let budget = soft.saturating_sub(limits::open_descriptors() + reserve);
    if budget < ports {
        anyhow::bail!(
            "this process may open {soft} file descriptors: too few to serve {ports} ports \
             and the sync port (raise it: ulimit -n {})",
            soft + ports - budget
        );
    }
    Ok(budget as usize)
}

/// A bound data port.
#[derive(Debug)]
enum DataPort {
    /// A TCP listener and the receive buffer of the worker that serves it.
    Tcp(std::net::TcpListener, data::RecvBuffer),
    Udp(std::net::UdpSocket),
}

/// A test that has begun: when, the negotiated cycle, the senders' sync connections.
type Begun = (timeline::Start, u32, Vec<Connection>);

/// Sync mode: waits for a sender's start request (in `-M` mode, for the last client),
/// starts the clock and tells the senders to go.
async fn wait_for_senders(
    cfg: &Config,
    start_rx: &mut mpsc::Receiver<StartRequest>,
    sync: &SyncParts<'_>,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Option<Begun> {
    let state = sync.state;
    let mut waiting: Vec<Connection> = Vec::new();
    loop {
        let req = tokio::select! {
            Some(r) = start_rx.recv() => r,
            _ = interrupt.wait() => return None,
        };
        // Every connection this sender opened before its 'R' is taken before the gate
        // can close (the request keeps it open until it is dropped).
        if cfg.protocol == Protocol::Tcp {
            let ports: Vec<u16> = (0..cfg.ports.len()).map(|j| cfg.port(j)).collect();
            settle(sync.gate, sync.workers, &ports, cfg.timeout).await;
        }
        let peer = req.conn.peer().to_string();
        if cfg.multi_client && !req.last {
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
        sync.gate.set_running(true);
        // As upstream, the clock starts before the 'R' replies go out; each sender gets
        // exactly one (ntttcp-for-linux sends the last client two). The window's first
        // edge is sampled now too, before any sender can send a byte. From here to the
        // window's last edge this thread keeps a real-time priority where allowed, so
        // that the answers leave right after the sample however busy the CPUs are (a
        // late answer would start the senders' windows late; the timeline drops it).
        affinity::prompt_wakeups(true);
        let t0 = timeline::Edge::take(sync.workers);
        let mut started = Vec::with_capacity(waiting.len());
        for mut c in waiting.drain(..) {
            if c.send(Reply::Go.value()).await.is_ok() {
                notes(Note::Info(format!("test started with {}", c.peer())));
                started.push(c);
            }
        }
        if started.is_empty() {
            affinity::prompt_wakeups(false);
            sync.gate.set_running(false);
            sessions::set(state, req.previous);
            continue; // the sender vanished between asking and our answer
        }
        warn_negotiated(req.negotiated, cfg.timeline.duration, notes);
        return Some((
            timeline::Start::Sampled(Box::new(t0)),
            req.negotiated,
            started,
        ));
    }
}

/// What the sync-mode controller works with.
struct SyncParts<'a> {
    state: &'a SharedState,
    gate: &'a Admission,
    workers: &'a [Arc<Worker>],
}

/// Has every worker accept what is queued on its port (thousands of connections take a
/// busy receiver a while), again while connections to the ports are still half-open (on a
/// lossy path a handshake's last ACK may come a retransmission later); waits at most
/// `within`.
async fn settle(gate: &Admission, workers: &[Arc<Worker>], ports: &[u16], within: Duration) {
    let give_up = Instant::now() + within;
    loop {
        let epoch = gate.request_settle();
        while Instant::now() < give_up
            && workers.iter().any(|w| {
                w.settled.load(Ordering::Acquire) < epoch && !w.finished.load(Ordering::Acquire)
            })
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
async fn wait_for_tokens(
    cfg: &Config,
    listeners: &[Arc<TcpListener>],
    interrupt: &Flag,
) -> Option<Begun> {
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
    Some((
        timeline::Start::At(Instant::now()),
        cfg.timeline.cycle(),
        Vec::new(),
    ))
}

/// No-sync mode: waits until a new data connection starts to carry bytes.
async fn wait_for_flow(
    cfg: &Config,
    flows: &watch::Sender<u64>,
    seen: &mut u64,
    interrupt: &Flag,
) -> Option<Begun> {
    let mut rx = flows.subscribe();
    let before = *seen;
    tokio::select! {
        r = rx.wait_for(|n| *n > before) => { r.ok()?; }
        _ = interrupt.wait() => return None,
    }
    Some((
        timeline::Start::At(Instant::now()),
        cfg.timeline.cycle(),
        Vec::new(),
    ))
}

/// Runs one test that has begun and reports it.
async fn test(
    cfg: &Config,
    (t0, negotiated, conns): Begun,
    workers: &[Arc<Worker>],
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Report {
    let (tx, rx) = mpsc::channel(8);
    let writers: Vec<Option<Writer>> = conns
        .into_iter()
        .enumerate()
        .map(|(i, c)| Some(c.monitor(i, tx.clone())))
        .collect();
    drop(tx);
    let mut mon = ReceiverMonitor {
        open_sessions: writers.len(),
        owed: vec![false; writers.len()],
        writers,
        incoming: rx,
        interrupt: interrupt.clone(),
        workers,
        tick: tokio::time::interval(Duration::from_millis(100)),
        silence: Silence::new(workers, cfg.timeout),
        seen_open: false,
        started: t0.instant(),
        deadline: cfg.timeout,
        sync: cfg.linux_sync(),
        udp: cfg.protocol == Protocol::Udp,
    };
    // The sender's proposal is its whole cycle: our cool-down must fit inside it.
    let plan = Plan {
        interval: cfg.interval,
        ..Plan::within(cfg.timeline, negotiated, true)
    };
    let count = |f: fn(&Worker) -> usize| workers.iter().map(|w| f(w)).sum::<usize>();
    let accepted_before = count(|w| w.connections.load(Ordering::Acquire));
    // Sync mode: the senders connected before 'R', so their connections are open now.
    let open_at_start = count(|w| w.open.load(Ordering::Acquire));
    let progress = |p| notes(Note::Progress(Side::Receiver, p));
    let window = timeline::run(t0, plan, workers, None, &mut mon, &progress).await;
    // An 'E' that ended the measurement is answered now that the test has stopped.
    for (w, owed) in mon.writers.iter_mut().zip(&mon.owed) {
        if let (Some(w), true) = (w.as_mut(), *owed) {
            let _ = w.send(Reply::State(State::Finished).value()).await;
        }
    }
    if window.ended == End::Completed {
        // Keep draining until the senders are done (their clocks started a handshake
        // later than ours), at most a second, so our close does not cut them off.
        let _ = tokio::time::timeout(Duration::from_secs(1), mon.drained()).await;
    }
    for w in mon.writers.into_iter().flatten() {
        w.close().await;
    }
    let ports: Vec<u16> = (0..workers.len()).map(|j| cfg.port(j)).collect();
    let peers: Vec<String> = workers
        .iter()
        .flat_map(|w| std::mem::take(&mut *w.peers.lock().unwrap_or_else(|p| p.into_inner())))
        .map(|a| a.to_string())
        .collect();
    // UDP flows have no "open" state: every flow seen since the last report (the first
    // datagrams may beat our start sample) belongs to this test.
    let connections = match cfg.protocol {
        Protocol::Udp => peers.len(),
        Protocol::Tcp => {
            count(|w| w.connections.load(Ordering::Acquire)) - accepted_before + open_at_start
        }
    };
    let mut report = stats::from_window(
        Side::Receiver,
        cfg,
        this_host(),
        &ports,
        connections,
        cfg.linux_sync().then_some(negotiated),
        &window,
    );
    report.socket.applied = applied(workers, cfg, notes);
    report.peers = peers;
    if report.end.kind == EndKind::Completed && report.connections == 0 {
        // A whole test without a single data connection (or datagram) measured nothing.
        report.fail("no data connection (or datagram) arrived during the test");
    }
    warn_how_it_went(&report, notes);
    report
}

/// Events on the receiver side: Ctrl+C, a sender's 'E' or its disappearance, every data
/// connection gone, no data at all for the deadline.
struct ReceiverMonitor<'a> {
    incoming: mpsc::Receiver<(usize, Incoming)>,
    writers: Vec<Option<Writer>>,
    /// Senders whose 'E' ended the measurement and still await the finished state.
    owed: Vec<bool>,
    open_sessions: usize,
    interrupt: Flag,
    workers: &'a [Arc<Worker>],
    tick: tokio::time::Interval,
    silence: Silence,
    seen_open: bool,
    /// When the test started, and how long it may run without a data connection.
    started: Instant,
    deadline: Duration,
    sync: bool,
    /// UDP data: no connection ever closes, so only the sync channel tells the end.
    udp: bool,
}

impl ReceiverMonitor<'_> {
    /// Every data connection of this test has closed again.
    fn all_closed(&mut self) -> bool {
        let open: usize = self
            .workers
            .iter()
            .map(|w| w.open.load(Ordering::Acquire))
            .sum();
        self.seen_open |= open > 0;
        self.seen_open && open == 0
    }

    /// Resolves when the senders are done: every sync session (or, without sync, every
    /// data connection) has closed.
    async fn drained(&mut self) {
        if !self.sync && self.udp {
            return;
        }
        while self.sync && self.open_sessions > 0 || !self.sync && !self.all_closed() {
            match self.next(Phase::Cooldown).await {
                Event::Interrupted => return,
                Event::PeerEnded | Event::Fault(_) => {}
            }
        }
    }
}

impl Monitor for ReceiverMonitor<'_> {
    async fn next(&mut self, phase: Phase) -> Event {
        loop {
            tokio::select! {
                _ = self.interrupt.wait() => return Event::Interrupted,
                Some((i, m)) = self.incoming.recv() => match m {
                    Incoming::Message(v) => match Request::decode(RequestPhase::Running, v) {
                        Ok(Request::End) => {
                            if phase == Phase::Cooldown {
                                // Measurement is over: answer at once.
                                if let Some(w) = self.writers[i].as_mut() {
                                    let _ = w.send(Reply::State(State::Finished).value()).await;
                                }
                            } else {
                                self.owed[i] = true;
                            }
                            return Event::PeerEnded;
                        }
                        Ok(_) => {
                            if let Some(w) = self.writers[i].as_mut() {
                                let _ = w.send(Reply::State(State::Running).value()).await;
                            }
                        }
                        Err(_) => {} // a stray value: the test goes on
                    },
                    Incoming::Closed(reason) => {
                        self.open_sessions = self.open_sessions.saturating_sub(1);
                        let peer = self.writers[i].as_ref().map_or("?", |w| w.peer()).to_string();
                        self.writers[i] = None;
                        return Event::Fault(format!("sender {peer} {reason}"));
                    }
                },
                _ = self.tick.tick() => {
                    if self.all_closed() {
                        let how = if self.sync { "" } else { " (no-sync mode)" };
                        return Event::Fault(format!("all data connections closed{how}"));
                    }
                    // A sender that started a test without opening a data connection (a
                    // hostile or broken peer) must not hold the receiver for its cycle.
                    if !self.udp && !self.seen_open && self.started.elapsed() >= self.deadline {
                        return Event::Fault(format!(
                            "no data connection within {:.1} s of the start",
                            self.deadline.as_secs_f64()
                        ));
                    }
                    if phase != Phase::Cooldown
                        && let Some(quiet) = self.silence.check(self.workers)
                    {
                        return Event::Fault(format!(
                            "no data received for {:.1} s (sender or path silent)",
                            quiet.as_secs_f64()
                        ));
                    }
                }
            }
        }
    }
}
