//! The sender role, top to bottom: resolve the receiver, run the sync handshake, open
//! the data connections from pinned worker threads, start them together, run the
//! timeline, end the test on the sync channel, report.
//!
//! Every step has a deadline: connecting (sync and data) and each handshake reply get
//! `Config::timeout`; the end-of-test exchange and the worker join get one
//! second each, so results appear within about two seconds of the end of the cycle.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use tokio::sync::mpsc;

use crate::config::{Config, IoMode, Protocol, Role, UsageError};
use crate::control::message::{Reply, ReplyPhase, Request, State};
use crate::control::{Connection, Incoming, Writer, windows};
use crate::data::udp;
use crate::data::{self, SendPlan, Worker};
use crate::pace::{CONNECTS_IN_FLIGHT, ConnectGate, Pacer, Pacers};
use crate::report::{Note, Notes};
use crate::report::{Report, Side};
use crate::role::{
    Interrupted, StopOnDrop, applied, join_workers, warn_how_it_went, worker_failure,
};
use crate::stop::Flag;
use crate::sys::{affinity, limits};
use crate::timeline::{self, End, Event, Monitor, Phase, Plan, Silence};

/// Runs the sender side of one test.
pub async fn run(cfg: &Config, interrupt: &Flag, notes: Notes<'_>) -> Result<Report> {
    let mut targets = (0..cfg.ports.len())
        .map(|j| resolve(&cfg.host_of(j), cfg.port(j), cfg.ipv6))
        .collect::<Result<Vec<_>>>()?;
    let hosts = {
        let mut ips: Vec<_> = targets.iter().map(|t| t.ip()).collect();
        ips.sort_unstable();
        ips.dedup();
        ips.len()
    };
    // The send buffer (or -Z file) first: it is shared by every worker, and counted below.
    let payload = Arc::new(
        data::Payload::new(
            cfg.send_size,
            cfg.zero_copy.sendfile && cfg.protocol == Protocol::Tcp,
        )
        .context("the send buffer (-b)")?,
    );
    check_descriptors(cfg, hosts)?;
    notes(Note::Ready);
    if cfg.port_handout {
        // Windows -sp: each thread asks the base port for its data port.
        let deadline = Instant::now() + cfg.timeout;
        for t in &mut targets {
            let base = SocketAddr::new(t.ip(), cfg.base_port);
            t.set_port(windows::request_port(base, deadline, cfg).await?);
        }
    }

    if cfg.protocol == Protocol::Udp && cfg.sockopts.pacing_rate.is_some() {
        notes(Note::Warn(
            "--fq-rate-limit on UDP sockets takes effect only where the fq qdisc runs on \
             the sending interface; -B limits UDP in ntttcp itself"
                .into(),
        ));
    }
    let fitted;
    let mut datagrams_per_send = 1;
    let cfg = if cfg.protocol == Protocol::Udp {
        (fitted, datagrams_per_send) = udp_plan(cfg, &targets, notes)?;
        &fitted
    } else {
        cfg
    };

    // One sync session per receiver host, on the port below that host's first data port.
    let mut sessions = Vec::new();
    let mut negotiated = cfg.timeline.cycle();
    if cfg.linux_sync() {
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
        if negotiated != cfg.timeline.duration {
            notes(Note::Warn(match negotiated {
                0 => "test is negotiated to run in continuous mode".into(),
                n => format!("Test cycle time negotiated is: {n} seconds"),
            }));
        }
    }

    let stop = Flag::new();
    let _stop_guard = StopOnDrop(stop.clone());
    let start = Flag::new();
    let allowed = affinity::allowed_cpus();
    let threads = cfg.sender_threads();
    let connect_deadline = Instant::now() + cfg.timeout;
    let workers: Vec<Arc<Worker>> = threads.iter().map(|_| Arc::default()).collect();
    let gate = Arc::new(ConnectGate::new(CONNECTS_IN_FLIGHT));
    // -B is one budget for every worker; -thr one per worker.
    let shared = cfg.rate_limit.map(|bits| Arc::new(Pacer::bits(bits)));
    let mut handles = Vec::with_capacity(threads.len());
    let began = Instant::now();
    for (t, w) in threads.iter().zip(&workers) {
        let plan = SendPlan {
            target: targets[t.port_index],
            conns: cfg.conns_per_thread as usize,
            cpu: affinity::cpu_for(cfg.ports[t.port_index].cpu, t.index, &allowed),
            size: cfg.send_size,
            io: cfg.io_mode,
            connect_deadline,
            opts: cfg.sockopts,
            source: cfg.source_addr.map(|ip| (ip, cfg.source_device.clone())),
            payload: payload.clone(),
            gate: gate.clone(),
            datagrams_per_send,
            source_port: cfg
                .source_port
                .map(|f| f + (t.index * cfg.conns_per_thread as usize) as u16),
            pacers: Pacers(
                shared
                    .iter()
                    .cloned()
                    .chain(cfg.thread_rate.map(|b| Arc::new(Pacer::bytes(b))))
                    .collect(),
            ),
        };
        let (w, start, stop, index) = (w.clone(), start.clone(), stop.clone(), t.index);
        let body = match cfg.protocol {
            Protocol::Tcp => data::send_worker,
            Protocol::Udp => udp::send_worker,
        };
        handles.push(
            std::thread::Builder::new()
                .name(format!("send-{}", t.index))
                .spawn(move || body(index, plan, w, start, stop))
                .context("create sender worker thread")?,
        );
    }
    let total = cfg.sender_connections();
    wait_connected(&workers, total, connect_deadline, interrupt).await?;
    notes(Note::Info(format!(
        "{total} connections created in {} microseconds",
        began.elapsed().as_micros()
    )));
    if total > CONNECTS_IN_FLIGHT && cfg.protocol == Protocol::Tcp {
        notes(Note::Info(format!(
            "connection setup paced: at most {CONNECTS_IN_FLIGHT} connects in flight"
        )));
    }

    for conn in &mut sessions {
        request_start(conn, cfg, interrupt, notes).await?;
    }
    if cfg.windows_sync {
        exchange_tokens(&targets, cfg, interrupt).await?;
    }

    let t0 = Instant::now();
    notes(Note::Started);
    let (tx, rx) = mpsc::channel(8);
    let mut writers: Vec<Writer> = sessions
        .into_iter()
        .enumerate()
        .map(|(i, c)| c.monitor(i, tx.clone()))
        .collect();
    drop(tx);
    let mut mon = SenderMonitor {
        incoming: rx,
        interrupt: interrupt.clone(),
        workers: &workers,
        tick: tokio::time::interval(Duration::from_millis(100)),
        silence: Silence::new(&workers, cfg.timeout),
    };
    let plan = Plan {
        interval: cfg.interval,
        ..Plan::within(cfg.timeline, negotiated, false)
    };
    let progress = |p| notes(Note::Progress(Side::Sender, p));
    let window = timeline::run(
        timeline::Start::At(t0),
        plan,
        &workers,
        Some(&start),
        &mut mon,
        &progress,
    )
    .await;
    stop.trigger();

    // 'E' tells the receiver we ended before the negotiated cycle (ntttcp-for-linux 2.4):
    // as upstream, unless the run completed and its planned measurement (warm-up and
    // cool-down excluded) covers the whole cycle.
    let measured_all = negotiated > 0
        && window.ended == End::Completed
        && plan
            .measure
            .is_some_and(|d| d.as_secs_f64() >= f64::from(negotiated));
    if !measured_all {
        for (i, w) in writers.iter_mut().enumerate() {
            end_test(i, w, &mut mon.incoming, notes).await;
        }
    }
    for w in writers {
        w.close().await;
    }
    join_workers(handles, &workers, Duration::from_secs(1)).await;

    let ports: Vec<u16> = threads.iter().map(|t| cfg.port(t.port_index)).collect();
    let mut report = Report::from_window(
        Side::Sender,
        cfg,
        &ports,
        total,
        cfg.linux_sync().then_some(negotiated),
        &window,
    );
    report.socket.applied = applied(&workers, cfg, notes);
    report.tcp_connections = workers
        .iter()
        .flat_map(|w| std::mem::take(&mut *w.conn_info.lock().unwrap_or_else(|p| p.into_inner())))
        .collect();
    warn_how_it_went(&report, notes);
    notes(Note::Report(Box::new(report.clone())));
    Ok(report)
}

/// Fails, before anything is connected, when the run would need more descriptors than
/// this process may open, naming the number; the need is what is open now plus every
/// socket and runtime the run will open (in loopback mode the receiver's ends too).
fn check_descriptors(cfg: &Config, hosts: usize) -> Result<()> {
    let connections = cfg.sender_connections() as u64;
    let sessions = if cfg.linux_sync() { hosts as u64 } else { 0 };
    let tokens = if cfg.windows_sync {
        cfg.ports.len() as u64
    } else {
        0
    };
    let async_workers = cfg.protocol == Protocol::Tcp && cfg.io_mode == IoMode::Async;
    let mut budget = limits::Budget {
        sockets: connections + sessions + tokens,
        runtimes: if async_workers {
            cfg.sender_threads().len() as u64
        } else {
            0
        },
    };
    if cfg.role == Role::Loopback {
        // This process also accepts every connection, with a runtime per receiver port.
        budget.sockets += connections + sessions + tokens;
        budget.runtimes += cfg.ports.len() as u64;
    }
    let (soft, hard) = limits::raise_nofile();
    let need = budget.need(limits::open_descriptors());
    if soft > 0 && need > soft {
        bail!(
            "{connections} connections need {need} file descriptors, but this process may \
             open {soft} (hard limit {hard}); raise it (ulimit -n {need}) or use fewer \
             connections"
        );
    }
    Ok(())
}

/// A copy of `cfg` whose send size is the UDP datagram size: without `-b` the largest
/// that crosses every target's path unfragmented, else `-b` capped to what UDP carries;
/// and how many datagrams one send carries (more than one with UDP GSO, which needs
/// datagrams that cross the path unfragmented).
fn udp_plan(cfg: &Config, targets: &[SocketAddr], notes: Notes<'_>) -> Result<(Config, usize)> {
    let mut c = cfg.clone();
    let max = targets
        .iter()
        .map(udp::max_payload)
        .min()
        .unwrap_or(udp::MAX_PAYLOAD_V4);
    // The probe takes the -a address and device (any port, not a pinned -f one).
    let source = cfg
        .source_addr
        .map(|ip| (SocketAddr::new(ip, 0), cfg.source_device.clone()));
    let mut path = max;
    for t in targets {
        let fits = udp::path_payload(*t, source.as_ref())
            .with_context(|| format!("cannot find the path MTU to receiver {t}"))?;
        path = path.min(fits);
    }
    if cfg.fit_datagrams {
        c.send_size = path;
        notes(Note::Info(format!(
            "UDP datagrams of {path} bytes: the largest that fits the path MTU (set with -b)"
        )));
    } else if cfg.send_size > max {
        // Parsing checked the bound for the address family it could see; a host name
        // that resolved to IPv4 can still be over it.
        return Err(UsageError(format!(
            "invalid value '{}' for '-b': a UDP datagram carries at most {max} bytes to {}",
            cfg.send_size, targets[0]
        ))
        .into());
    }
    let size = c.send_size.max(udp::STAMP_LEN);
    let mut per_send = 1;
    if cfg.udp_offload && size <= path {
        per_send = (max / size).min(udp::GSO_MAX_SEGMENTS);
    }
    if per_send > 1 {
        match udp::gso_available(targets[0], size) {
            Ok(()) => notes(Note::Info(format!(
                "UDP segmentation offload (GSO): up to {per_send} datagrams per send \
                 (--no-udp-offload for one)"
            ))),
            Err(e) => {
                notes(Note::Warn(format!(
                    "UDP segmentation offload (GSO) is not available ({e}): one datagram \
                     per send"
                )));
                per_send = 1;
            }
        }
    }
    Ok((c, per_send))
}

/// Asks one receiver to start ('R', or 'L' for the last client) and waits for its go;
/// in a multi-client test, for as long as `Config::last_client_wait` allows.
async fn request_start(
    conn: &mut Connection,
    cfg: &Config,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<()> {
    let ask = if cfg.last_client {
        Request::StartLast
    } else {
        Request::Start
    };
    conn.send(ask.value()).await?;
    let mut reply = Reply::decode(ReplyPhase::Start, conn.recv().await?)?;
    if reply == Reply::Wait {
        notes(Note::Warn(
            "waiting for the last client to join the test".into(),
        ));
        let wait = cfg.last_client_wait();
        let v = tokio::select! {
            v = conn.recv_within(wait) => v.with_context(|| {
                format!("no last client (-L) joined the test within {wait:?}")
            })?,
            _ = interrupt.wait() => return Err(Interrupted.into()),
        };
        reply = Reply::decode(ReplyPhase::Start, v)?;
    }
    match reply {
        Reply::Go => Ok(()),
        Reply::Reject if cfg.last_client => bail!(
            "receiver {} refused to start the test: it is not in multi-client mode (-M), \
             or is busy",
            conn.peer()
        ),
        Reply::Reject => bail!(
            "receiver {} refused to start the test: too many clients wait for the last one, \
             or it is busy",
            conn.peer()
        ),
        other => bail!(
            "receiver {} answered {other:?} to a start request",
            conn.peer()
        ),
    }
}

/// Name or address → socket address, preferring the configured family.
fn resolve(host: &str, port: u16, ipv6: bool) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve receiver address '{host}'"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv6() == ipv6)
        .or(addrs.first())
        .copied()
        .ok_or_else(|| anyhow!("receiver address '{host}' resolves to nothing"))
}

/// Connects to a sync port (retrying "refused" until the deadline), queries the
/// receiver's state and negotiates the cycle time.
async fn handshake(
    addr: SocketAddr,
    cfg: &Config,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<(Connection, u32)> {
    let deadline = Instant::now() + cfg.timeout;
    let stream = loop {
        let attempt = tokio::time::timeout_at(deadline.into(), windows::connect_from(addr, cfg));
        let r = tokio::select! {
            r = attempt => r,
            _ = interrupt.wait() => return Err(Interrupted.into()),
        };
        match r {
            Ok(Ok(s)) => break s,
            Ok(Err(e))
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && Instant::now() + Duration::from_millis(100) < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(e)) => {
                return Err(e)
                    .with_context(|| format!("failed to connect to receiver {addr} (sync port)"));
            }
            Err(_) => bail!(
                "failed to connect to receiver {addr} (sync port): no answer within {:?}",
                cfg.timeout
            ),
        }
    };
    let mut conn = Connection::new(stream, cfg.timeout);
    conn.send(Request::Query.value()).await?;
    if Reply::decode(ReplyPhase::State, conn.recv().await?)? == Reply::State(State::Running) {
        bail!("receiver {addr} is busy with an existing test");
    }
    conn.send(Request::Propose(proposal(cfg.timeline.cycle(), notes)).value())
        .await?;
    let Reply::Negotiated(n) = Reply::decode(ReplyPhase::Negotiated, conn.recv().await?)? else {
        unreachable!("decode in the Negotiated phase only yields Negotiated");
    };
    Ok((conn, n))
}

/// Windows sync: every thread swaps its token on its data port + 1000, all at once.
async fn exchange_tokens(targets: &[SocketAddr], cfg: &Config, interrupt: &Flag) -> Result<()> {
    let deadline = Instant::now() + cfg.timeout;
    let mut set = tokio::task::JoinSet::new();
    for t in targets {
        let addr = SocketAddr::new(t.ip(), t.port() + windows::TOKEN_PORT_OFFSET);
        let cfg = cfg.clone();
        set.spawn(async move { windows::exchange_as_sender(addr, deadline, &cfg).await });
    }
    loop {
        tokio::select! {
            r = set.join_next() => match r {
                None => return Ok(()),
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => return Err(e.context("Windows NTttcp sync")),
                Some(Err(e)) => bail!("Windows NTttcp sync task failed: {e}"),
            },
            _ = interrupt.wait() => return Err(Interrupted.into()),
        }
    }
}

/// The cycle time to propose. A stock ntttcp-for-linux receiver reads 69, 76, 82 and 88
/// as the commands 'E', 'L', 'R' and 'X', so those become one second more, with a warning.
fn proposal(cycle: u32, notes: Notes<'_>) -> u32 {
    if [69, 76, 82, 88].contains(&cycle) {
        notes(Note::Warn(format!(
            "a {cycle} s test cycle (warm-up + duration + cool-down) would be misread by a \
             stock ntttcp-for-linux receiver; proposing {} s",
            cycle + 1
        )));
        cycle + 1
    } else {
        cycle
    }
}

/// Waits until `total` connections are up, a worker fails, the deadline passes or the
/// user interrupts.
async fn wait_connected(
    workers: &[Arc<Worker>],
    total: usize,
    deadline: Instant,
    interrupt: &Flag,
) -> Result<()> {
    // Workers enforce the deadline on each connect; the extra second covers the last one.
    let give_up = deadline + Duration::from_secs(1);
    loop {
        let up: usize = workers
            .iter()
            .map(|w| w.connections.load(Ordering::Acquire))
            .sum();
        if up == total {
            return Ok(());
        }
        if let Some(f) = worker_failure(workers) {
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

/// Sends 'E' on one sync session and waits up to a second for the state reply.
async fn end_test(
    tag: usize,
    w: &mut Writer,
    incoming: &mut mpsc::Receiver<(usize, Incoming)>,
    notes: Notes<'_>,
) {
    if let Err(e) = w.send(Request::End.value()).await {
        notes(Note::Info(format!(
            "could not tell receiver {} the test ended: {e:#}",
            w.peer()
        )));
        return;
    }
    // Skip anything else on this session: a stock multi-client receiver sends the last
    // client a second 'R' that may still be unread.
    let reply = tokio::time::timeout(Duration::from_secs(1), async {
        while let Some((t, m)) = incoming.recv().await {
            match m {
                Incoming::Message(v) if t == tag => {
                    if let Ok(Reply::State(s)) = Reply::decode(ReplyPhase::State, v) {
                        return Some(s);
                    }
                }
                Incoming::Closed(_) if t == tag => return None,
                _ => {}
            }
        }
        None
    })
    .await;
    match reply {
        Ok(Some(State::Finished)) => {
            notes(Note::Info("receiver exited from current test".into()));
        }
        _ => notes(Note::Info(format!(
            "receiver {} did not confirm the end of the test",
            w.peer()
        ))),
    }
}

/// Events on the sender side: Ctrl+C, the receiver closing the sync channel, a data
/// connection failing.
struct SenderMonitor<'a> {
    incoming: mpsc::Receiver<(usize, Incoming)>,
    interrupt: Flag,
    workers: &'a [Arc<Worker>],
    tick: tokio::time::Interval,
    silence: Silence,
}

impl Monitor for SenderMonitor<'_> {
    async fn next(&mut self, phase: Phase) -> Event {
        loop {
            tokio::select! {
                _ = self.interrupt.wait() => return Event::Interrupted,
                Some((_, m)) = self.incoming.recv() => {
                    if let Incoming::Closed(reason) = m {
                        return Event::Fault(format!("receiver {reason}"));
                    }
                    // The receiver never speaks unasked; stray values are ignored.
                }
                _ = self.tick.tick() => {
                    if let Some(f) = worker_failure(self.workers) {
                        return Event::Fault(f);
                    }
                    if phase != Phase::Cooldown
                        && let Some(quiet) = self.silence.check(self.workers)
                    {
                        return Event::Fault(format!(
                            "no data could be sent for {:.1} s (receiver or path silent)",
                            quiet.as_secs_f64()
                        ));
                    }
                }
            }
        }
    }
}
