//! The sender role, top to bottom: resolve the receiver, run the sync handshake, open
//! the data connections from pinned worker threads, start them together, run the
//! timeline, end the test on the sync channel, report.
//!
//! Every step has a deadline: connecting (sync and data) and each handshake reply get
//! `Config::timeout`; the end-of-test exchange and the worker join get one
//! second each, so results appear within about two seconds of the end of the cycle.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::sync::mpsc;

use crate::config::{Config, Direction, Protocol, Workload};
use crate::control::{Connection, Incoming, Writer};
use crate::data::udp;
use crate::data::{self, Payload, SendPlan, WorkerState, WorkerThreads};
use crate::pace::{CONNECTS_IN_FLIGHT, ConnectGate, Pacer, Pacers};
use crate::plan::{RunPlan, Traffic};
use crate::report::{Note, Notes};
use crate::report::{Report, Side, SideFacts};
use crate::role::{
    Interrupted, applied, sender_failure, this_host, warn_how_it_went, warn_negotiated,
};
use crate::stats;
use crate::stop::Flag;
use crate::sys::affinity::{self, Peer};
use crate::timeline::{self, Directions, End, Plan};

mod monitor;
mod setup;
pub(crate) mod sync;

use monitor::{SenderMonitor, silences};
use setup::{check_descriptors, fit_datagrams, local_traffic, resolve_targets};
use sync::{ask_for_ports, end_test, exchange_tokens, handshake, peer_reports, request_start};

/// Runs the sender side of one test: its report, or one per way (`--bidir`).
pub(crate) async fn run(cfg: &Config, interrupt: &Flag, notes: Notes<'_>) -> Result<Vec<Report>> {
    let (plan, payload) = resolve(cfg, notes).await?;
    let (sessions, negotiated) = handshakes(&plan, interrupt, notes).await?;
    let launched = launch(&plan, payload)?;
    if plan.workload() != Workload::ConnectRate {
        connect_all(&launched, cfg, interrupt, notes).await?;
    }
    let started = start_test(sessions, &plan.targets, cfg, interrupt, notes).await?;
    let (window, timing, mut mon) =
        measure(&launched, started, cfg, negotiated, interrupt, notes).await;
    launched.crew.stop.trigger();
    let promised: Vec<bool> = mon.writers.iter().map(|w| w.wants_report()).collect();
    finish(&mut mon, &window, &timing, negotiated, notes).await;
    // After a fault the receiver or the path is gone: no report is waited for.
    let faulted = matches!(window.ended, End::Fault(_));
    let peer = peer_reports(&mut mon, &promised, faulted, notes).await;
    drop(mon);
    let workers = launched.crew.join(Duration::from_secs(1)).await;
    notes(Note::PeerReports(peer));
    Ok(report(&plan, &workers, negotiated, &window, notes))
}

/// The sender's plan, resolved once: the receivers' addresses (handed out by a Windows
/// receiver with `-sp`), whether `-Z` pays, the datagram size the path carries; and the
/// payload every worker sends, made before any socket.
async fn resolve<'a>(cfg: &'a Config, notes: Notes<'_>) -> Result<(RunPlan<'a>, Arc<Payload>)> {
    let mut targets = resolve_targets(cfg)?;
    let traffic = local_traffic(cfg, &targets, notes);
    let payload = prepare(cfg, &traffic, &targets, notes)?;
    if cfg.port_handout() {
        ask_for_ports(cfg, &mut targets).await?;
    }
    let traffic = match traffic {
        Traffic::Datagrams(_) => Traffic::Datagrams(fit_datagrams(cfg, &targets, notes)?),
        t => t,
    };
    let plan = RunPlan {
        cfg,
        targets,
        traffic,
    };
    Ok((plan, payload))
}

/// What must hold before any socket: the send buffer (or -Z file, shared by every
/// worker) can be had and the descriptors the run needs are allowed; then the run is
/// ready (a `-D` daemon's foreground learns it).
fn prepare(
    cfg: &Config,
    traffic: &Traffic,
    targets: &[SocketAddr],
    notes: Notes<'_>,
) -> Result<Arc<Payload>> {
    let hosts = {
        let mut ips: Vec<_> = targets.iter().map(|t| t.ip()).collect();
        ips.sort_unstable();
        ips.dedup();
        ips.len()
    };
    let sendfile = matches!(traffic, Traffic::Bulk { send, .. } if send.sendfile);
    let payload = Arc::new(
        Payload::new(cfg.data.send_size, sendfile, cfg.sender_connections())
            .context("the send buffer (-b)")?,
    );
    check_descriptors(cfg, hosts)?;
    notes(Note::Ready);
    Ok(payload)
}

/// One sync session per receiver host, on the port below that host's first data port;
/// returns them with the negotiated cycle (the longest any receiver asked for).
async fn handshakes(
    plan: &RunPlan<'_>,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<(Vec<Connection>, u32)> {
    let (cfg, targets) = (plan.cfg, &plan.targets);
    let mut sessions = Vec::new();
    let mut negotiated = cfg.timeline.cycle();
    if !cfg.linux_sync() {
        return Ok((sessions, negotiated));
    }
    let mut seen = Vec::new();
    for (j, t) in targets.iter().enumerate() {
        if !seen.contains(&t.ip()) {
            seen.push(t.ip());
            let addr = SocketAddr::new(t.ip(), cfg.port(j) - 1);
            let (conn, n) = handshake(addr, cfg, interrupt, notes).await?;
            negotiated = if sessions.is_empty() {
                n
            } else {
                negotiated.max(n)
            };
            sessions.push(conn);
        }
    }
    warn_negotiated(negotiated, cfg.timeline.duration, notes);
    Ok((sessions, negotiated))
}

/// The sender's workers, the flag that lets them send (after the start sample, or before
/// a warm-up), and when they began connecting.
struct SenderWorkers {
    crew: WorkerThreads,
    /// The ways the workers' bytes go (`--bidir`: the workers' sending counts, then their
    /// reading ones).
    ways: Directions,
    start: Flag,
    connect_deadline: Instant,
    began: Instant,
}

/// Where a TCP connection to `target` ends, for `--placement auto`: on this host when
/// the target is one of its addresses. UDP never counts as local (its receiver must not
/// share the sender's core), nor does a connection-rate test (no bytes to keep in a
/// cache; its receiver, which never moves for those connections, keeps its CPUs too).
fn peer_of(traffic: Traffic, target: SocketAddr) -> Peer {
    let streams = !matches!(traffic, Traffic::Datagrams(_) | Traffic::ConnectRate);
    if streams && crate::sys::net::is_local_address(target.ip().to_canonical()) {
        Peer::Local
    } else {
        Peer::Other
    }
}

/// Starts one pinned worker per sender thread; each opens its connections at once.
fn launch(plan: &RunPlan<'_>, payload: Arc<Payload>) -> Result<SenderWorkers> {
    let (cfg, targets, workload) = (plan.cfg, &plan.targets, plan.workload());
    let mut l = SenderWorkers {
        crew: WorkerThreads::new(),
        ways: Directions::one(Direction::Send, &[]),
        start: Flag::new(),
        connect_deadline: Instant::now() + cfg.timeout,
        began: Instant::now(),
    };
    let allowed = affinity::allowed_cpus();
    let peers: Vec<Peer> = targets.iter().map(|t| peer_of(plan.traffic, *t)).collect();
    let gate = Arc::new(ConnectGate::new(CONNECTS_IN_FLIGHT));
    // -B is one budget for every worker; -thr one per worker.
    let shared = cfg.data.rate_limit.map(|bits| Arc::new(Pacer::bits(bits)));
    let mut backs = Vec::new();
    for t in cfg.sender_threads() {
        let plan = SendPlan {
            target: targets[t.port_index],
            conns: cfg.streams.conns_per_thread as usize,
            sole: cfg.sender_connections() == 1,
            cpu: affinity::sender_cpu(
                cfg.streams.ports[t.port_index].cpu,
                cfg.streams.placement,
                peers[t.port_index],
                t.index,
                &allowed,
            ),
            size: plan.write_size(),
            io: cfg.data.io_mode,
            connect_deadline: l.connect_deadline,
            timeout: cfg.timeout,
            opts: plan.sockopts(),
            source: cfg.source.addr.map(|ip| (ip, cfg.source.device.clone())),
            payload: payload.clone(),
            gate: gate.clone(),
            datagrams_per_send: plan.datagrams_per_send(),
            source_port: cfg
                .source
                .port
                .map(|f| f + (t.index * cfg.streams.conns_per_thread as usize) as u16),
            pacers: Pacers(
                shared
                    .iter()
                    .cloned()
                    .chain(cfg.data.thread_rate.map(|b| Arc::new(Pacer::bytes(b))))
                    .collect(),
            ),
            back: (workload == Workload::Bidir).then(Arc::default),
        };
        backs.extend(plan.back.clone());
        let (index, start) = (t.index, l.start.clone());
        let body = match (cfg.data.protocol, workload) {
            (Protocol::Udp, _) => udp::send_worker,
            (Protocol::Tcp, Workload::Stream) => data::send_worker,
            (Protocol::Tcp, Workload::RequestResponse { .. }) => data::rr_worker,
            (Protocol::Tcp, Workload::Reverse) => data::reverse_worker,
            (Protocol::Tcp, Workload::Bidir) => data::bidir_worker,
            (Protocol::Tcp, Workload::ConnectRate) => data::connect_worker,
        };
        l.crew
            .add(format!("send-{index}"), plan.cpu, move |w, stop| {
                body(index, plan, w, start, stop)
            })?;
    }
    l.ways = match workload {
        Workload::Bidir => Directions::two(
            (Direction::Send, &l.crew.workers),
            (Direction::Receive, &backs),
        ),
        Workload::Reverse => Directions::one(Direction::Receive, &l.crew.workers),
        _ => Directions::one(Direction::Send, &l.crew.workers),
    };
    Ok(l)
}

/// Waits until every data connection is up (bounded by --timeout) and says so.
async fn connect_all(
    crew: &SenderWorkers,
    cfg: &Config,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<()> {
    let total = cfg.sender_connections();
    let workers = &crew.crew.workers;
    let synced = cfg.sync.is_on();
    let connected = wait_connected(workers, total, crew.connect_deadline, synced, interrupt);
    match connected.await {
        // An ntttcp-for-linux receiver resets data connections no sync handshake announced.
        Err(e) if cfg.windows_sync() && format!("{e}").contains("reset by peer") => {
            return Err(e.context(
                "the receiver reset the data connections: an ntttcp-for-linux receiver waits \
                 for its own sync handshake first; run both sides without sync (-ns here, -N \
                 there) or both in one dialect",
            ));
        }
        r => r?,
    }
    notes(Note::Info(format!(
        "{total} connections created in {} microseconds",
        crew.began.elapsed().as_micros()
    )));
    if total > CONNECTS_IN_FLIGHT && cfg.data.protocol == Protocol::Tcp {
        notes(Note::Info(format!(
            "connection setup paced: at most {CONNECTS_IN_FLIGHT} connects in flight"
        )));
    }
    Ok(())
}

/// Asks every receiver to start (Windows lines: swaps the tokens) and returns the sync
/// sessions' writers, their replies now read by a monitor task each.
async fn start_test(
    mut sessions: Vec<Connection>,
    targets: &[SocketAddr],
    cfg: &Config,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<Started> {
    // Without sync nobody answers: the sender itself waits for --start-at.
    if let (false, Some(at)) = (cfg.linux_sync(), cfg.start_at) {
        let warmup = Duration::from_secs(cfg.timeline.warmup.into());
        if !timeline::until_wall(at, warmup, interrupt).await {
            return Err(Interrupted.into());
        }
    }
    // The receivers' clocks start as they answer: this thread must wake for the answer
    // at once, however busy the CPUs are (the timeline drops the priority again).
    affinity::prompt_wakeups(true);
    let asked = async {
        for conn in &mut sessions {
            request_start(conn, cfg, interrupt, notes).await?;
        }
        if cfg.windows_sync() {
            exchange_tokens(targets, cfg, interrupt).await?;
        }
        Ok::<(), anyhow::Error>(())
    };
    if let Err(e) = asked.await {
        affinity::prompt_wakeups(false);
        return Err(e);
    }
    let t0 = Instant::now();
    notes(Note::Started);
    let (tx, rx) = mpsc::channel(8);
    let writers = sessions
        .into_iter()
        .enumerate()
        .map(|(i, c)| c.monitor(i, tx.clone()))
        .collect();
    Ok(Started {
        t0,
        writers,
        incoming: rx,
    })
}

/// A test the receivers were told to start.
struct Started {
    t0: Instant,
    writers: Vec<Writer>,
    incoming: mpsc::Receiver<(usize, Incoming)>,
}

/// Runs the timeline: the workers are let go after the start sample.
async fn measure<'a>(
    launched: &'a SenderWorkers,
    started: Started,
    cfg: &Config,
    negotiated: u32,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> (timeline::Window, Plan, SenderMonitor<'a>) {
    let mut mon = SenderMonitor {
        incoming: started.incoming,
        writers: started.writers,
        interrupt: interrupt.clone(),
        workers: &launched.crew.workers,
        all: launched.ways.all(),
        tick: crate::timeline::tick(),
        silence: silences(&launched.ways, cfg.timeout),
        workload: cfg.data.workload,
        synced: cfg.sync.is_on(),
        reports: Vec::new(),
    };
    let plan = Plan {
        interval: cfg.show.interval,
        ..Plan::within(cfg.timeline, negotiated, false)
    };
    let progress = |p| notes(Note::Progress(Side::Sender, p));
    let window = timeline::run(
        timeline::Start::At(started.t0),
        plan,
        &launched.ways,
        Some(&launched.start),
        &mut mon,
        &progress,
    )
    .await;
    (window, plan, mon)
}

/// Ends the test on the sync channels: 'E' tells a receiver we ended before the
/// negotiated cycle (ntttcp-for-linux 2.4) as upstream, unless the run completed and its
/// planned measurement (warm-up and cool-down excluded) covers the whole cycle.
async fn finish(
    mon: &mut SenderMonitor<'_>,
    window: &timeline::Window,
    plan: &Plan,
    negotiated: u32,
    notes: Notes<'_>,
) {
    let measured_all = negotiated > 0
        && window.ended == End::Completed
        && plan
            .measure
            .is_some_and(|d| d.as_secs_f64() >= f64::from(negotiated));
    let mut writers = std::mem::take(&mut mon.writers);
    if !measured_all {
        for (i, w) in writers.iter_mut().enumerate() {
            end_test(i, w, mon, notes).await;
        }
    }
    for w in writers {
        w.close().await;
    }
}

/// The sender's report (one per way, `--bidir`), told to the user as soon as made.
fn report(
    plan: &RunPlan<'_>,
    workers: &[Arc<WorkerState>],
    negotiated: u32,
    window: &timeline::Window,
    notes: Notes<'_>,
) -> Vec<Report> {
    let cfg = plan.cfg;
    let facts = SideFacts {
        side: Side::Sender,
        host: this_host(),
        ports: cfg
            .sender_threads()
            .iter()
            .map(|t| cfg.port(t.port_index))
            .collect(),
        connections: cfg.sender_connections(),
        negotiated_cycle_s: cfg.linux_sync().then_some(negotiated),
        workload: plan.workload(),
        read_len: None,
        applied: applied(workers, cfg, notes),
        tcp_connections: workers.iter().flat_map(|w| w.take_conn_info()).collect(),
        peers: Vec::new(),
        round_trips: workers.iter().map(|w| w.round_trips()).collect(),
    };
    let reports: Vec<Report> = window
        .split()
        .iter()
        .map(|w| {
            let report = stats::from_window(plan, facts.clone(), w);
            warn_how_it_went(&report, notes);
            report
        })
        .collect();
    warn_written_only(plan, &reports, notes);
    notes(Note::Reports(reports.clone()));
    reports
}

/// A TCP sender's bytes are those its connections delivered, with the bytes written
/// beside them; without the second, the OS did not say what was delivered.
fn warn_written_only(plan: &RunPlan<'_>, reports: &[Report], notes: Notes<'_>) {
    let bulk = matches!(
        plan.traffic,
        Traffic::Bulk {
            workload: Workload::Stream,
            ..
        }
    );
    if bulk
        && reports
            .iter()
            .any(|r| r.totals.bytes_written.is_none() && r.totals.bytes > 0)
    {
        notes(Note::Warn(
            "this system does not say what a connection delivered (Wine, or Windows before \
             10 1703): the sender's figures are the bytes it wrote"
                .into(),
        ));
    }
}

/// Waits until `total` connections are up, a worker fails, the deadline passes or the
/// user interrupts (`synced`: this sender runs with sync).
async fn wait_connected(
    workers: &[Arc<WorkerState>],
    total: usize,
    deadline: Instant,
    synced: bool,
    interrupt: &Flag,
) -> Result<()> {
    // Workers enforce the deadline on each connect; the extra second covers the last one.
    let give_up = deadline + Duration::from_secs(1);
    loop {
        let up: usize = workers.iter().map(|w| w.connections()).sum();
        if up == total {
            return Ok(());
        }
        if let Some(f) = sender_failure(workers, synced) {
            bail!("only {up} of {total} data connections were established: {f}");
        }
        if interrupt.is_set() {
            return Err(Interrupted.into());
        }
        if Instant::now() > give_up {
            bail!("only {up} of {total} data connections were established in time");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
