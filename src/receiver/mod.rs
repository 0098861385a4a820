//! The receiver role, top to bottom: bind every data port and the sync port (failing at
//! once, naming the port), start one pinned worker per port, then serve tests: wait for
//! senders (the sync handshake; in no-sync mode the first bytes on a data connection),
//! run the timeline, report. Once, or one test after another with `-H`.
//!
//! The sync server (`sessions`) keeps answering while a test runs, so another sender
//! hears "busy" instead of hanging. A sender that disappears, or silence on every data
//! connection for the deadline, ends the test early with a fault.

mod begin;
mod measure;
mod monitor;
pub(crate) mod sessions;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::admission::Admission;
use crate::config::{Config, Direction, MAX_WAITING_CLIENTS, Protocol, Role, SockOpts};
use crate::control::message::State;
use crate::control::windows;
use crate::data::Flows;
use crate::data::udp;
use crate::data::{self, WorkerState, WorkerThreads};
use crate::plan::RunPlan;
use crate::report::{EndKind, Report};
use crate::report::{Note, Notes};
use crate::role::Interrupted;
use crate::stop::Flag;
use crate::sys::affinity::{self, Peer};
use crate::sys::limits;
use crate::timeline::Directions;
use begin::{SyncParts, wait_for_flow, wait_for_senders, wait_for_tokens};
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
                let buf = data::RecvBuffer::new(read_size(cfg).buffer())
                    .context("the receive buffer (-b)")?;
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
    notes(Note::Info(match budget {
        usize::MAX => "data connections kept at most: no limit (no descriptor limit)".into(),
        n => format!("data connections kept at most: {n}"),
    }));
    let gate = Arc::new(Admission::new(cfg.linux_sync(), budget));
    let flows = Arc::new(watch::Sender::new(0u64));
    let (crew, outs) = launch(cfg, listeners, &gate, &flows)?;
    let ways = Directions::two(
        (Direction::Receive, &crew.workers),
        (Direction::Send, &outs),
    );
    let state: SharedState = Arc::new(std::sync::Mutex::new(State::NotStarted));
    let (start_tx, start_rx) = mpsc::channel(MAX_WAITING_CLIENTS + 1);
    let acceptor = sync.map(|l| {
        let policy = Policy {
            duration: cfg.timeline.duration,
            multi_client: cfg.roles.multi_client,
            deadline: cfg.timeout,
            keepalive: cfg.sync_keepalive,
        };
        tokio::spawn(sessions::serve(
            l,
            state.clone(),
            start_tx,
            policy,
            gate.clone(),
        ))
    });
    let plan = RunPlan::as_configured(cfg);
    let parts = Serving {
        plan: &plan,
        state: &state,
        gate: &gate,
        workers: &crew.workers,
        outs: &outs,
        ways: &ways,
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
/// Each worker counts what it receives in its own state, what it sends in the one of
/// the same index in the second list.
fn launch(
    cfg: &Config,
    listeners: Vec<DataPort>,
    gate: &Arc<Admission>,
    flows: &Flows,
) -> Result<(WorkerThreads, Vec<Arc<WorkerState>>)> {
    let mut crew = WorkerThreads::new();
    let mut outs = Vec::with_capacity(listeners.len());
    let allowed = affinity::allowed_cpus();
    for (j, l) in listeners.into_iter().enumerate() {
        let udp = cfg.data.protocol == Protocol::Udp;
        let cpu_if = |peer| {
            let (spec, how) = (cfg.streams.ports[j].cpu, cfg.streams.placement);
            affinity::receiver_cpu(spec, how, udp, peer, j, &allowed)
        };
        let cpu = cpu_if(Peer::Other);
        let out = Arc::new(WorkerState::default());
        outs.push(out.clone());
        let control = data::PortControl {
            gate: gate.for_worker(),
            flows: flows.clone(),
            out,
        };
        let plan = data::RecvPlan {
            cpu,
            local_cpu: cpu_if(Peer::Local).filter(|_| cpu.is_none()),
            no_delay: cfg.data.sockopts.no_delay,
            skip_copy: cfg.data.zero_copy.skip_rx_copy,
            read: read_size(cfg),
            rcvlowat: cfg.data.sockopts.rcvlowat,
        };
        let applied = (j == 0).then(|| {
            let sock = match &l {
                DataPort::Tcp(l, _) => socket2::SockRef::from(l),
                DataPort::Udp(s) => socket2::SockRef::from(s),
            };
            data::Applied::read(&sock)
        });
        let flows = flows.clone();
        crew.add(format!("recv-{j}"), plan.cpu, move |w, stop| match l {
            DataPort::Tcp(l, buf) => data::recv_worker(l, buf, plan, w, control, stop),
            DataPort::Udp(s) => udp::recv_worker(s, plan, w, flows, stop),
        })?;
        if let (Some(a), Some(w)) = (applied, crew.workers.last()) {
            w.keep_applied(|| a);
        }
    }
    Ok((crew, outs))
}

/// What the receiver's tests are served with.
struct Serving<'a> {
    /// The receiver's plan: its configuration (senders' headers tell the rest).
    plan: &'a RunPlan<'a>,
    state: &'a SharedState,
    gate: &'a Admission,
    /// What each port's worker receives (and its connections, failures, settling).
    workers: &'a [Arc<WorkerState>],
    /// What each port's worker sends.
    outs: &'a [Arc<WorkerState>],
    /// Both, as the timeline measures them.
    ways: &'a Directions,
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
    let mut all = Vec::new();
    let mut flows_seen = 0;
    loop {
        let begun = if cfg.windows_sync() {
            wait_for_tokens(cfg, parts.tokens, interrupt).await
        } else if cfg.sync.is_on() {
            let sync = SyncParts {
                state: parts.state,
                gate: parts.gate,
                workers: parts.workers,
                all: parts.ways.all(),
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
        let reports = measure::test(cfg, begun, parts, interrupt, notes).await;
        parts.gate.set_running(false, false);
        sessions::set(parts.state, State::Finished);
        let refused = parts.gate.take_refused();
        if refused > 0 {
            notes(Note::Info(format!(
                "{refused} data connections arrived outside a test (or beyond its \
                 connections) and were closed"
            )));
        }
        flows_seen = *parts.flows.borrow();
        notes(Note::Reports(reports.clone()));
        let interrupted = reports.iter().any(|r| r.end.kind == EndKind::Interrupted);
        all.extend(reports);
        if !cfg.roles.hold || interrupted {
            break;
        }
    }
    all
}

/// How many data connections this receiver may keep: what its descriptor limit leaves
/// after what is open, its workers' runtimes, and a reserve that keeps the sync port
/// (every handshake slot) and the Windows token ports served whatever the data ports get.
fn data_budget(cfg: &Config) -> Result<usize> {
    let (soft, _) = limits::raise_nofile();
    if soft == 0 || soft == u64::MAX {
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

/// How much one read of a TCP connection takes: `-b`, or by the connection's path.
fn read_size(cfg: &Config) -> data::ReadSize {
    if cfg.data.recv_by_path {
        data::ReadSize::ByPath
    } else {
        data::ReadSize::Fixed(cfg.data.recv_size)
    }
}
