//! What can end a receiver's test early: Ctrl+C, a sender's 'E' or its disappearance,
//! every data connection gone, no data at all for the deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::config::{Config, Protocol};
use crate::control::message::{Reply, Request, RequestPhase, State};
use crate::control::{Connection, Incoming, Writer};
use crate::data::WorkerState;
use crate::stop::Flag;
use crate::timeline::{Directions, Event, Monitor, Phase, Silence};

/// Events on the receiver side: Ctrl+C, a sender's 'E' or its disappearance, every data
/// connection gone, no data at all for the deadline.
pub(crate) struct ReceiverMonitor<'a> {
    incoming: mpsc::Receiver<(usize, Incoming)>,
    writers: Vec<Option<Writer>>,
    /// Senders whose 'E' ended the measurement and still await the finished state.
    owed: Vec<bool>,
    open_sessions: usize,
    interrupt: Flag,
    /// What the workers receive (their connections are counted open here).
    workers: &'a [Arc<WorkerState>],
    /// Every count, both ways: silence is no byte moved either way.
    all: &'a [Arc<WorkerState>],
    tick: tokio::time::Interval,
    silence: Silence,
    seen_open: bool,
    /// When the test started, and how long it may run without a data connection.
    started: Instant,
    deadline: Duration,
    sync: bool,
    /// UDP data: no connection ever closes, so only the sync channel tells the end.
    udp: bool,
    /// A connection-rate test: no connection stays open, and none need to.
    pub(crate) connect_rate: bool,
}

impl<'a> ReceiverMonitor<'a> {
    /// Watches a test that started at `started` with the senders' sync connections
    /// `conns` (none without Linux sync).
    pub(crate) fn new(
        cfg: &Config,
        conns: Vec<Connection>,
        workers: &'a [Arc<WorkerState>],
        ways: &'a Directions,
        interrupt: &Flag,
        started: Instant,
    ) -> Self {
        let (tx, rx) = mpsc::channel(8);
        let writers: Vec<Option<Writer>> = conns
            .into_iter()
            .enumerate()
            .map(|(i, c)| Some(c.monitor(i, tx.clone())))
            .collect();
        Self {
            open_sessions: writers.len(),
            owed: vec![false; writers.len()],
            writers,
            incoming: rx,
            interrupt: interrupt.clone(),
            workers,
            all: ways.all(),
            tick: crate::timeline::tick(),
            silence: Silence::new(ways.all(), cfg.timeout),
            seen_open: false,
            started,
            deadline: cfg.timeout,
            sync: cfg.linux_sync(),
            udp: cfg.data.protocol == Protocol::Udp,
            connect_rate: false,
        }
    }

    /// After the window: answers the 'E's that ended it, sends `reports` to every sender
    /// that asked for them, lets the senders finish (at most a second, after a completed
    /// window, so that our close does not cut them off: their clocks started a handshake
    /// later than ours), and closes the sync connections.
    pub(crate) async fn close(mut self, completed: bool, reports: &[crate::report::Report]) {
        for (w, owed) in self.writers.iter_mut().zip(&self.owed) {
            if let (Some(w), true) = (w.as_mut(), *owed) {
                let _ = w.send(Reply::State(State::Finished).value()).await;
            }
        }
        let wanted = self.writers.iter().flatten().any(|w| w.wants_report());
        if wanted && let Ok(json) = serde_json::to_vec(reports) {
            for w in self
                .writers
                .iter_mut()
                .flatten()
                .filter(|w| w.wants_report())
            {
                let _ = w.send_report(&json).await;
            }
        }
        if completed {
            let _ = tokio::time::timeout(Duration::from_secs(1), self.drained()).await;
        }
        for w in self.writers.into_iter().flatten() {
            w.close().await;
        }
    }

    /// Every data connection of this test has closed again.
    fn all_closed(&mut self) -> bool {
        let open: usize = self.workers.iter().map(|w| w.open()).sum();
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
                    // Only a receiver sends reports: a sender's is a stray, as above.
                    Incoming::Report(_) => {}
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
                    if !self.udp
                        && !self.connect_rate
                        && !self.seen_open
                        && self.started.elapsed() >= self.deadline
                    {
                        return Event::Fault(format!(
                            "no data connection within {:.1} s of the start",
                            self.deadline.as_secs_f64()
                        ));
                    }
                    if phase != Phase::Cooldown
                        && let Some(quiet) = self.silence.check(self.all)
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
