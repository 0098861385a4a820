//! One test that has begun, measured and reported: the timeline runs over both of the
//! receiver's counts (what it receives, what it sends, not knowing which its senders will
//! use until their connections' headers come), and each way they used is reported.

use std::sync::Arc;

use super::Serving;
use super::begin::StartedTest;
use super::monitor::ReceiverMonitor;
use crate::config::{Config, Direction, Protocol, Workload};
use crate::data::{self, TestSeen, WorkerState};
use crate::report::{Note, Notes, Report, Side, SideFacts};
use crate::role::{applied, this_host, warn_how_it_went};
use crate::stats;
use crate::stop::Flag;
use crate::timeline::{self, End, Plan, Progress};

/// Runs one test that has begun and reports each way its bytes went: what it received,
/// and, for senders that asked it to send (`-R`, `--bidir`), what it sent.
pub(super) async fn test(
    cfg: &Config,
    begun: StartedTest,
    parts: &Serving<'_>,
    interrupt: &Flag,
    notes: Notes<'_>,
) -> Vec<Report> {
    let StartedTest {
        clock: t0,
        negotiated,
        conns,
        connect_rate,
    } = begun;
    let workers = parts.workers;
    let mut mon = ReceiverMonitor::new(cfg, conns, workers, parts.ways, interrupt, t0.instant());
    mon.connect_rate = connect_rate;
    // The sender's proposal is its whole cycle: our cool-down must fit inside it.
    let plan = Plan {
        interval: cfg.show.interval,
        ..Plan::within(cfg.timeline, negotiated, true)
    };
    let before = Connections::now(workers);
    let progress = |p: Progress| {
        if let Progress::Interval(iv) = &p
            && !Used::now(parts).has(iv.direction)
        {
            return;
        }
        notes(Note::Progress(Side::Receiver, p));
    };
    let window = timeline::run(t0, plan, parts.ways, None, &mut mon, &progress).await;
    let used = Used::take(parts);
    let seen: Vec<TestSeen> = workers.iter().map(|w| w.take_seen()).collect();
    let workload = match seen.iter().filter_map(|s| s.rr_size).max() {
        _ if connect_rate => Workload::ConnectRate,
        Some(size) => Workload::RequestResponse { size },
        None => used.workload(),
    };
    let facts = facts(cfg, workers, seen, before, negotiated, notes);
    let reports: Vec<Report> = window
        .split()
        .iter()
        .filter(|w| used.has(w.ways[0].direction))
        .map(|w| {
            let facts = SideFacts {
                workload,
                ..facts.clone()
            };
            let r = stats::from_window(parts.plan, facts, w);
            warn_how_it_went(&r, notes);
            r
        })
        .collect();
    mon.close(window.ended == End::Completed, &reports).await;
    reports
}

/// What the receiver knows of a test beyond its window (the workload aside, which its
/// senders' headers told); the workers forget it for the next test.
fn facts(
    cfg: &Config,
    workers: &[Arc<WorkerState>],
    seen: Vec<TestSeen>,
    before: Connections,
    negotiated: u32,
    notes: Notes<'_>,
) -> SideFacts {
    let most = |field: fn(&TestSeen) -> Option<usize>| seen.iter().filter_map(field).max();
    let (read_len, rcvlowat) = (most(|s| s.read_len), most(|s| s.rcvlowat));
    let peers: Vec<String> = seen
        .into_iter()
        .flat_map(|s| s.peers)
        .map(|a| a.to_string())
        .collect();
    // UDP flows have no "open" state: every flow seen since the last report (the first
    // datagrams may beat our start sample) belongs to this test.
    let connections = match cfg.data.protocol {
        Protocol::Udp => peers.len(),
        Protocol::Tcp => before.of_this_test(workers),
    };
    SideFacts {
        side: Side::Receiver,
        host: this_host(),
        ports: (0..cfg.streams.ports.len()).map(|j| cfg.port(j)).collect(),
        connections,
        negotiated_cycle_s: cfg.linux_sync().then_some(negotiated),
        workload: Workload::Stream,
        read_len,
        applied: applied(workers, cfg, notes).map(|a| data::Applied { rcvlowat, ..a }),
        tcp_connections: Vec::new(),
        peers,
        round_trips: Vec::new(),
    }
}

/// Which ways a test's senders used: connections that only send (`-R`), that carry
/// both ways (`--bidir`); neither is a plain test, whose bytes only come in.
#[derive(Debug, Clone, Copy)]
struct Used {
    sent: bool,
    both: bool,
}

impl Used {
    /// As the connections' headers have told so far.
    fn now(parts: &Serving<'_>) -> Self {
        Self {
            sent: parts.outs.iter().any(|w| w.sends()),
            both: parts.workers.iter().any(|w| w.both_ways()),
        }
    }

    /// The same at the end of a test; every worker forgets it for the next test.
    fn take(parts: &Serving<'_>) -> Self {
        let take = |ws: &[Arc<WorkerState>]| -> Vec<(bool, bool)> {
            ws.iter().map(|w| w.take_ways()).collect()
        };
        let (outs, ins) = (take(parts.outs), take(parts.workers));
        Self {
            sent: outs.iter().any(|w| w.0),
            both: ins.iter().any(|w| w.1),
        }
    }

    /// Whether this test's bytes went `d`.
    fn has(self, d: Direction) -> bool {
        match d {
            Direction::Send => self.sent,
            Direction::Receive => !self.sent || self.both,
        }
    }

    /// The test's workload as far as these ways tell (request/response is told apart
    /// by the size its headers gave).
    fn workload(self) -> Workload {
        match (self.sent, self.both) {
            (true, true) => Workload::Bidir,
            (true, false) => Workload::Reverse,
            _ => Workload::Stream,
        }
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
            accepted: workers.iter().map(|w| w.connections()).sum(),
            open: workers.iter().map(|w| w.open()).sum(),
        }
    }

    /// The test's connections: those open at its start and those accepted since.
    fn of_this_test(&self, workers: &[Arc<WorkerState>]) -> usize {
        Self::now(workers).accepted - self.accepted + self.open
    }
}
