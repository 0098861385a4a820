//! What can end a sender's test early: Ctrl+C, the receiver closing the sync channel, a
//! data connection failing, or one way's bytes not moving for the deadline.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::config::{Direction, Workload};
use crate::control::{Incoming, Writer};
use crate::data::WorkerState;
use crate::role::sender_failure;
use crate::stop::Flag;
use crate::timeline::{Directions, Event, Monitor, Phase, Silence};

/// Events on the sender side: Ctrl+C, the receiver closing the sync channel, a data
/// connection failing.
pub(super) struct SenderMonitor<'a> {
    pub(super) incoming: mpsc::Receiver<(usize, Incoming)>,
    /// The sync sessions' writing halves, kept for the end of the test.
    pub(super) writers: Vec<Writer>,
    pub(super) interrupt: Flag,
    pub(super) workers: &'a [Arc<WorkerState>],
    /// Every count, both ways (`Directions::all`).
    pub(super) all: &'a [Arc<WorkerState>],
    pub(super) tick: tokio::time::Interval,
    pub(super) silence: Vec<(Direction, std::ops::Range<usize>, Silence)>,
    pub(super) workload: Workload,
    /// The sender runs with sync (a reset then means something else than a missing
    /// handshake).
    pub(super) synced: bool,
    /// Report frames the receivers sent (session, JSON), kept for the end of the test.
    pub(super) reports: Vec<(usize, Vec<u8>)>,
}

/// Why a sender's bytes of one way (`d`) moved nothing for `quiet`.
fn silent(w: Workload, d: Direction, quiet: Duration) -> String {
    let secs = quiet.as_secs_f64();
    match (w, d) {
        (Workload::RequestResponse { .. }, _) => format!(
            "no response came for {secs:.1} s: the receiver does not echo requests (it must be \
             this ntttcp, not a stock one), or the path is gone"
        ),
        (_, Direction::Send) => {
            format!("no data could be sent for {secs:.1} s (receiver or path silent)")
        }
        (_, Direction::Receive) => format!(
            "no data came for {secs:.1} s (receiver or path silent; a stock receiver does not \
             send)"
        ),
    }
}

/// Each way's silence watch, so that one way moving does not hide the other's silence.
pub(super) fn silences(
    ways: &Directions,
    limit: Duration,
) -> Vec<(Direction, std::ops::Range<usize>, Silence)> {
    ways.groups()
        .map(|(d, r)| {
            let watch = Silence::new(&ways.all()[r.clone()], limit);
            (d, r, watch)
        })
        .collect()
}

impl Monitor for SenderMonitor<'_> {
    async fn next(&mut self, phase: Phase) -> Event {
        loop {
            tokio::select! {
                _ = self.interrupt.wait() => return Event::Interrupted,
                Some((i, m)) = self.incoming.recv() => match m {
                    Incoming::Closed(reason) => return Event::Fault(format!("receiver {reason}")),
                    // A receiver whose test ended first sends its report at once.
                    Incoming::Report(json) => self.reports.push((i, json)),
                    // The receiver never speaks unasked; stray values are ignored.
                    Incoming::Message(_) => {}
                },
                _ = self.tick.tick() => {
                    if let Some(f) = sender_failure(self.workers, self.synced) {
                        return Event::Fault(f);
                    }
                    if phase == Phase::Cooldown {
                        continue;
                    }
                    for (d, r, watch) in &mut self.silence {
                        if let Some(quiet) = watch.check(&self.all[r.clone()]) {
                            return Event::Fault(silent(self.workload, *d, quiet));
                        }
                    }
                }
            }
        }
    }
}
