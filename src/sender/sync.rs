//! The sender's side of the sync exchanges: the handshake and its proposal, the start
//! request, the end of a test and the reports receivers send back, and Windows NTttcp's
//! tokens and port hand-out.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use super::monitor::SenderMonitor;
use crate::config::{Config, Role, Workload};
use crate::control::connect::{Failure, connect};
use crate::control::message::{Features, PROBE, Reply, ReplyPhase, Request, State};
use crate::control::{Connection, Incoming, Writer, windows};
use crate::report::{Note, Notes, Report, Side};
use crate::role::Interrupted;
use crate::stop::Flag;

/// Asks one receiver to start ('R', or 'L' for the last client) and waits for its go;
/// in a multi-client test, for as long as `Config::last_client_wait` allows.
pub(crate) async fn request_start(
    conn: &mut Connection,
    cfg: &Config,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<()> {
    let ask = if cfg.roles.last_client {
        Request::StartLast
    } else {
        Request::Start
    };
    conn.send(ask.value()).await?;
    // With --start-at the receiver answers when the instant comes (less its warm-up).
    let until = cfg
        .start_at
        .and_then(|at| at.duration_since(SystemTime::now()).ok());
    let answer = tokio::select! {
        v = conn.recv_within(until.unwrap_or_default() + cfg.timeout) => v?,
        _ = interrupt.wait() => return Err(Interrupted.into()),
    };
    let mut reply = Reply::decode(ReplyPhase::Start, answer)?;
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
        Reply::Reject if cfg.roles.last_client => bail!(
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

/// Opens a sync session to `addr` and negotiates the cycle time (`negotiate`).
pub(super) async fn handshake(
    addr: SocketAddr,
    cfg: &Config,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Result<(Connection, u32)> {
    let connect = async |deadline| {
        let stream = connect_sync(addr, cfg, deadline, interrupt).await?;
        Ok(Connection::new(stream, cfg.timeout, cfg.sync_keepalive))
    };
    negotiate(connect, cfg, notes).await
}

/// Negotiates the cycle time on a session that `connect` opens (by a deadline). The
/// sender first probes for our extension: an ntttcp receiver says what it serves and,
/// where it can, promises its report at the end; a stock ntttcp-for-linux receiver takes
/// the probe for a proposal, and a plain test then starts over on a new session with
/// exactly the stock exchange (a test that needs the extension fails instead).
pub(crate) async fn negotiate(
    connect: impl AsyncFn(Instant) -> Result<Connection>,
    cfg: &Config,
    notes: Notes<'_>,
) -> Result<(Connection, u32)> {
    let mut conn = open_session(&connect, cfg).await?;
    let flag = cfg.data.workload.flag();
    let flag = flag.or(cfg.start_at.map(|_| "--start-at"));
    match (probe(&mut conn, flag.unwrap_or("extension")).await?, flag) {
        (Some(f), _) => extended(&mut conn, f, cfg, notes).await?,
        (None, Some(flag)) => bail!(
            "receiver {} does not support {flag}: it answered the probe as a stock \
             ntttcp-for-linux receiver does (run this ntttcp on both sides)",
            conn.peer()
        ),
        (None, None) => {
            notes(Note::Warn(format!(
                "receiver {} is a stock ntttcp-for-linux: its figures are not available \
                 here (run this ntttcp there to have them beside these)",
                conn.peer()
            )));
            drop(conn);
            conn = open_session(&connect, cfg).await?;
        }
    }
    conn.send(Request::Propose(proposal(cfg.timeline.cycle(), notes)).value())
        .await?;
    let Reply::Negotiated(n) = Reply::decode(ReplyPhase::Negotiated, conn.recv().await?)? else {
        unreachable!("decode in the Negotiated phase only yields Negotiated");
    };
    Ok((conn, n))
}

/// Opens a session (`connect`, retrying "refused" until the deadline) and queries the
/// receiver's state: a busy receiver ends the run, except in a series (`--repeat`),
/// whose `-H` receiver may still be finishing the run before: that one is asked again
/// until the deadline.
async fn open_session(
    connect: &impl AsyncFn(Instant) -> Result<Connection>,
    cfg: &Config,
) -> Result<Connection> {
    let deadline = Instant::now() + cfg.timeout;
    loop {
        let mut conn = connect(deadline).await?;
        conn.send(Request::Query.value()).await?;
        let state = Reply::decode(ReplyPhase::State, conn.recv().await?)?;
        if state != Reply::State(State::Running) {
            return Ok(conn);
        }
        if cfg.repeat == 1 || Instant::now() >= deadline {
            bail!("receiver {} is busy with an existing test", conn.peer());
        }
        drop(conn);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The sync port's connection, retrying "refused" until `deadline`.
async fn connect_sync(
    addr: SocketAddr,
    cfg: &Config,
    deadline: Instant,
    interrupt: &Flag,
) -> Result<tokio::net::TcpStream> {
    match connect(addr, &cfg.source, deadline, Some(interrupt)).await {
        Ok(s) => Ok(s),
        Err(Failure::Interrupted) => Err(Interrupted.into()),
        Err(Failure::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(e)
            .with_context(|| {
                format!(
                    "failed to connect to receiver {addr} (sync port): nothing listens there \
                     (no receiver yet, one without sync, or Windows NTttcp's, which has no \
                     sync port; against those run both sides without sync: -N here, -N or \
                     -ns there)"
                )
            }),
        Err(Failure::Io(e)) => {
            Err(e).with_context(|| format!("failed to connect to receiver {addr} (sync port)"))
        }
        Err(Failure::NoAnswer) => bail!(
            "failed to connect to receiver {addr} (sync port): no answer within {:?}",
            cfg.timeout
        ),
    }
}

/// With a receiver of ours that serves `features`: the workload's feature is served (else
/// the run ends, naming the flag), a connection-rate test is announced, and the report
/// asked for unless this process is the receiver too (an earlier ntttcp that does not send
/// it is named once).
async fn extended(
    conn: &mut Connection,
    features: Features,
    cfg: &Config,
    notes: Notes<'_>,
) -> Result<()> {
    let workload = cfg.data.workload;
    if let Some(flag) = workload.flag()
        && !features.has(needed(workload))
    {
        bail!(
            "receiver {} does not support {flag}: it is an ntttcp that serves only \
             features 0x{:02x} of this extension (upgrade it)",
            conn.peer(),
            features.0
        );
    }
    if workload == Workload::ConnectRate {
        // The receiver must know before the test that its connections will not stay.
        conn.send(Request::ConnectRate.value()).await?;
        Reply::decode(ReplyPhase::ConnectRate, conn.recv().await?)?;
    }
    if let Some(at) = cfg.start_at {
        start_at(conn, features, at).await?;
    }
    if cfg.role == Role::Loopback {
        // This process is the receiver too: its report is here already.
    } else if features.has(Features::REPORT) {
        conn.send(Request::WantReport.value()).await?;
        Reply::decode(ReplyPhase::WantReport, conn.recv().await?)?;
        conn.promise_report();
    } else {
        notes(Note::Warn(format!(
            "receiver {} is an earlier ntttcp that does not send its figures back (upgrade \
             it to have them beside these)",
            conn.peer()
        )));
    }
    Ok(())
}

/// Tells the receiver the instant its window begins (`--start-at`), in Unix
/// microseconds; an ntttcp that cannot follow ends the run, naming the flag.
async fn start_at(conn: &mut Connection, features: Features, at: SystemTime) -> Result<()> {
    if !features.has(Features::START_AT) {
        bail!(
            "receiver {} does not support --start-at: it is an ntttcp that serves only \
             features 0x{:02x} of this extension (upgrade it)",
            conn.peer(),
            features.0
        );
    }
    let micros = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros()) as u64;
    conn.send(Request::StartAt.value()).await?;
    conn.send((micros >> 32) as u32 as i32).await?;
    conn.send(micros as u32 as i32).await?;
    Reply::decode(ReplyPhase::StartAt, conn.recv().await?)?;
    Ok(())
}

/// What a receiver must serve for `w`.
fn needed(w: Workload) -> Features {
    match w {
        Workload::Stream => Features(0),
        Workload::RequestResponse { .. } => Features::REQUEST_RESPONSE,
        Workload::Reverse => Features::REVERSE,
        Workload::Bidir => Features::BIDIR,
        Workload::ConnectRate => Features::CONNECT_RATE,
    }
}

/// Asks the receiver what of our extension it serves (`what`: the flag that needs it,
/// for messages): None from a stock
/// ntttcp-for-linux receiver, which takes the probe for a proposal shorter than its own
/// `-t` and answers that `-t`; the sender then closes the session before any data
/// connection, and that receiver goes on waiting for its next sender.
async fn probe(conn: &mut Connection, what: &str) -> Result<Option<Features>> {
    conn.send(PROBE).await?;
    let answer = conn
        .recv()
        .await
        .with_context(|| format!("receiver {} did not answer the {what} probe", conn.peer()))?;
    Ok(match Reply::decode(ReplyPhase::Probe, answer)? {
        Reply::Features(f) => Some(f),
        _ => None,
    })
}

/// Windows sync: every thread swaps its token on its data port + 1000, all at once.
pub(super) async fn exchange_tokens(
    targets: &[SocketAddr],
    cfg: &Config,
    interrupt: &Flag,
) -> Result<()> {
    let deadline = Instant::now() + cfg.timeout;
    let mut set = tokio::task::JoinSet::new();
    for t in targets {
        let addr = SocketAddr::new(t.ip(), t.port() + windows::TOKEN_PORT_OFFSET);
        let source = cfg.source.clone();
        set.spawn(async move { windows::exchange_as_sender(addr, deadline, &source).await });
    }
    loop {
        tokio::select! {
            r = set.join_next() => match r {
                None => return Ok(()),
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) if refused(&e) => {
                    return Err(e.context(
                        "Windows NTttcp sync: the receiver takes no sync tokens on data \
                         port + 1000 (an ntttcp-for-linux receiver, or one without sync?); \
                         run both sides without sync (-ns here, -N or -ns there) or both in \
                         one dialect",
                    ));
                }
                Some(Ok(Err(e))) => return Err(e.context("Windows NTttcp sync")),
                Some(Err(e)) => bail!("Windows NTttcp sync task failed: {e}"),
            },
            _ = interrupt.wait() => return Err(Interrupted.into()),
        }
    }
}

/// Whether `e` (or what caused it) is a refused connection.
fn refused(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
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

/// Sends 'E' on one sync session and waits up to a second for the state reply.
pub(super) async fn end_test(
    tag: usize,
    w: &mut Writer,
    mon: &mut SenderMonitor<'_>,
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
        while let Some((t, m)) = mon.incoming.recv().await {
            match m {
                Incoming::Message(v) if t == tag => {
                    if let Ok(Reply::State(s)) = Reply::decode(ReplyPhase::State, v) {
                        return Some(s);
                    }
                }
                Incoming::Closed(_) if t == tag => return None,
                Incoming::Report(json) => mon.reports.push((t, json)),
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

/// Windows -sp: each thread asks the base port for its data port.
pub(super) async fn ask_for_ports(cfg: &Config, targets: &mut [SocketAddr]) -> Result<()> {
    let deadline = Instant::now() + cfg.timeout;
    for t in targets {
        let base = SocketAddr::new(t.ip(), cfg.streams.base_port);
        t.set_port(windows::request_port(base, deadline, &cfg.source).await?);
    }
    Ok(())
}

/// How long after its own end a sender waits for the reports its receivers promised:
/// a receiver's window closes before the sender's (its clock started first), and it
/// sends its report as soon as it is made.
const PEER_REPORT_WAIT: Duration = Duration::from_secs(2);

/// The reports the receivers sent back (`promised[i]`: session i promised one), as they
/// came or within `PEER_REPORT_WAIT` (none after a fault, `faulted`); one that is late or
/// unreadable is named.
pub(super) async fn peer_reports(
    mon: &mut SenderMonitor<'_>,
    promised: &[bool],
    faulted: bool,
    notes: Notes<'_>,
) -> Vec<Report> {
    let mut owed: Vec<bool> = if faulted {
        vec![false; promised.len()]
    } else {
        promised.to_vec()
    };
    for (i, _) in &mon.reports {
        owed[*i] = false;
    }
    let wait = async {
        while owed.contains(&true) {
            match mon.incoming.recv().await {
                Some((i, Incoming::Report(json))) => {
                    owed[i] = false;
                    mon.reports.push((i, json));
                }
                Some((i, Incoming::Closed(_))) => owed[i] = false,
                Some(_) => {}
                None => return,
            }
        }
    };
    if tokio::time::timeout(PEER_REPORT_WAIT, wait).await.is_err() {
        notes(Note::Warn(format!(
            "a receiver's figures did not come within {PEER_REPORT_WAIT:?} of the end"
        )));
    }
    let mut all = Vec::new();
    for (_, json) in std::mem::take(&mut mon.reports) {
        match receiver_reports(&json) {
            Ok(rs) => all.extend(rs),
            Err(e) => notes(Note::Warn(format!(
                "a receiver's figures could not be read: {e}"
            ))),
        }
    }
    all
}

/// The receiver's reports in a report frame's JSON (any other side's are dropped).
pub(crate) fn receiver_reports(json: &[u8]) -> serde_json::Result<Vec<Report>> {
    let reports = serde_json::from_slice::<Vec<Report>>(json)?;
    Ok(reports
        .into_iter()
        .filter(|r| r.side == Side::Receiver)
        .collect())
}
