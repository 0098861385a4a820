//! The receiver role, top to bottom: bind every data port and the sync port (failing at
//! once, naming the port), start one pinned worker per port, then serve tests: wait for
//! senders (the sync handshake; in no-sync mode the first bytes on a data connection),
//! run the timeline, report. Once, or one test after another with `-H`.
//!
//! The sync server (`sessions`) keeps answering while a test runs, so another sender
//! hears "busy" instead of hanging. A sender that disappears, or silence on every data
//! connection for the deadline, ends the test early with a fault.

mod begin;
mod monitor;
pub(crate) mod sessions;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::admission::Admission;
use crate::config::{Config, MAX_WAITING_CLIENTS, Protocol, Role, SockOpts};
use crate::control::message::State;
use crate::control::windows;
use crate::data::Flows;
use crate::data::udp;
use crate::data::{self, WorkerState};
use crate::report::{EndKind, Report, Side};
use crate::report::{Note, Notes};
use crate::role::{Crew, Interrupted, applied, this_host, warn_how_it_went};
use crate::stats;
use crate::stop::Flag;
use crate::sys::{affinity, limits};
use crate::timeline::{self, End, Plan};
use begin::{Begun, SyncParts, wait_for_flow, wait_for_senders, wait_for_tokens};
use monitor::ReceiverMonitor;
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
    let mut data = Vec::with_capacity(cfg.streams.ports.len());
    for j in 0..cfg.streams.ports.len() {
        let addr = SocketAddr::new(ip(j)?, cfg.port(j));
        let busy = || format!("cannot listen on data port {} ({addr})", addr.port());
        data.push(match cfg.data.protocol {
            Protocol::Tcp => {
                let l = data::listen(addr, &cfg.data.sockopts).with_context(busy)?;
                let buf =
                    data::RecvBuffer::new(cfg.data.recv_size).context("the receive buffer (-b)")?;
                DataPort::Tcp(l, buf)
            }
            Protocol::Udp => {
                let s = udp::bind(addr, &cfg.data.sockopts).with_context(busy)?;
                // One receive for several datagrams of a flow; an optimisation only, so a
                // kernel without it is reported, not fatal.
                if cfg.data.udp_offload
                    && !cfg.data.zero_copy.skip_rx_copy
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
    if cfg.windows_sync() {
        for j in 0..cfg.streams.ports.len() {
            let addr = SocketAddr::new(ip(j)?, cfg.port(j) + windows::TOKEN_PORT_OFFSET);
            tokens.push(Arc::new(bind_tokio(addr, "sync token port")?));
        }
    }
    let handout = cfg
        .port_handout()
        .then(|| {
            bind_tokio(
                SocketAddr::new(ip(0)?, cfg.streams.base_port),
                "port hand-out port",
            )
        })
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
        let count = cfg.streams.ports.len() as u16;
        tokio::spawn(windows::serve_ports(
            l,
            cfg.streams.base_port,
            count,
            cfg.timeout,
        ))
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
            multi_client: cfg.roles.multi_client,
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
        let udp = cfg.data.protocol == Protocol::Udp;
        let cpu = affinity::receiver_cpu(
            cfg.streams.ports[j].cpu,
            cfg.streams.placement,
            udp,
            j,
            &allowed,
        );
        let control = data::PortControl {
            gate: gate.for_worker(),
            flows: flows.clone(),
        };
        let plan = data::RecvPlan {
            cpu,
            no_delay: cfg.data.sockopts.no_delay,
            skip_copy: cfg.data.zero_copy.skip_rx_copy,
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
    workers: &'a [Arc<WorkerState>],
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
        let begun = if cfg.windows_sync() {
            wait_for_tokens(cfg, parts.tokens, interrupt).await
        } else if cfg.sync.is_on() {
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
        if !cfg.roles.hold || interrupted {
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
    let ports = cfg.streams.ports.len() as u64;
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

/// Runs one test that has begun and reports it.
async fn test(
    cfg: &Config,
    (t0, negotiated, conns): Begun,
    workers: &[Arc<WorkerState>],
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Report {
    let mut mon = ReceiverMonitor::new(cfg, conns, workers, interrupt, t0.instant());
    // The sender's proposal is its whole cycle: our cool-down must fit inside it.
    let plan = Plan {
        interval: cfg.show.interval,
        ..Plan::within(cfg.timeline, negotiated, true)
    };
    let before = Connections::now(workers);
    let progress = |p| notes(Note::Progress(Side::Receiver, p));
    let window = timeline::run(t0, plan, workers, None, &mut mon, &progress).await;
    mon.close(window.ended == End::Completed).await;
    let ports: Vec<u16> = (0..workers.len()).map(|j| cfg.port(j)).collect();
    let peers: Vec<String> = workers
        .iter()
        .flat_map(|w| std::mem::take(&mut *w.peers.lock().unwrap_or_else(|p| p.into_inner())))
        .map(|a| a.to_string())
        .collect();
    // UDP flows have no "open" state: every flow seen since the last report (the first
    // datagrams may beat our start sample) belongs to this test.
    let connections = match cfg.data.protocol {
        Protocol::Udp => peers.len(),
        Protocol::Tcp => before.of_this_test(workers),
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
    echoed(&mut report, workers);
    reversed(&mut report, workers);
    if report.end.kind == EndKind::Completed && report.connections == 0 {
        // A whole test without a single data connection (or datagram) measured nothing.
        report.fail("no data connection (or datagram) arrived during the test");
    }
    warn_how_it_went(&report, notes);
    report
}

/// A test whose senders asked for request/response (the size their headers gave): its
/// figures, and the workload, in the report; the workers forget it for the next test.
fn echoed(report: &mut Report, workers: &[Arc<WorkerState>]) {
    let size = workers
        .iter()
        .map(|w| w.rr_size.swap(0, std::sync::atomic::Ordering::Relaxed))
        .max()
        .unwrap_or(0) as usize;
    if size > 0 {
        report.params.workload = crate::config::Workload::RequestResponse { size };
        stats::rr::attach(report, size, &[]);
    }
}

/// A test whose senders asked it to send (`-R`): said in the report; the workers forget
/// it for the next test.
fn reversed(report: &mut Report, workers: &[Arc<WorkerState>]) {
    // Every worker forgets it: count them all, no short cut.
    let poured = workers
        .iter()
        .filter(|w| w.pours.swap(false, std::sync::atomic::Ordering::AcqRel))
        .count()
        > 0;
    if poured {
        report.params.workload = crate::config::Workload::Reverse;
        report.direction = crate::report::Direction::Send;
    }
}

/// The workers' connection counts when a test starts.
struct Connections {
    /// Accepted since the workers started.
    accepted: usize,
    /// Open now: in sync mode the senders connected before 'R'.
    open: usize,
}

impl Connections {
    fn now(workers: &[Arc<WorkerState>]) -> Self {
        Self {
            accepted: workers
                .iter()
                .map(|w| w.connections.load(Ordering::Acquire))
                .sum(),
            open: workers.iter().map(|w| w.open.load(Ordering::Acquire)).sum(),
        }
    }

    /// The test's connections: those open at its start and those accepted since.
    fn of_this_test(&self, workers: &[Arc<WorkerState>]) -> usize {
        Self::now(workers).accepted - self.accepted + self.open
    }
}
