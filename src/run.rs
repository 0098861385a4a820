//! One run of the configured role (or both, with `--loopback`) and the exit status its
//! outcome earns.

use std::time::Duration;

use anyhow::{Context, Result};

use crate::config::{Config, Role};
use crate::report::{self, EndKind, Notes, Report};
use crate::stop::Flag;
use crate::{receiver, sender};

/// Everything a run measured: one report per side and way (`--loopback` has both sides,
/// `--bidir` both ways).
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// Sender first, then receiver.
    pub reports: Vec<Report>,
}

impl Outcome {
    /// A side failed: a fault, or a planned test that the peer cut short (unless the
    /// peer is this process's own interrupted sender, in loopback mode).
    pub(crate) fn failed(&self) -> bool {
        let interrupted = self.interrupted();
        self.reports.iter().any(|r| match r.end.kind {
            EndKind::Fault => true,
            EndKind::PeerEnded => !interrupted && r.end.early.is_some(),
            EndKind::Completed | EndKind::Interrupted => false,
        })
    }

    /// This process was interrupted (Ctrl+C, SIGTERM, SIGHUP).
    pub(crate) fn interrupted(&self) -> bool {
        self.reports
            .iter()
            .any(|r| r.end.kind == EndKind::Interrupted)
    }
}

/// Exit status: the test ran its planned length (or, in continuous mode, until stopped).
pub(crate) const EXIT_OK: u8 = 0;
/// Exit status: a runtime failure (peer unreachable or lost, handshake refused, port in
/// use, a test the peer ended before its planned length, an output that could not be
/// written).
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Exit status: a usage error.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit status: interrupted by Ctrl+C or SIGTERM.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;
/// Exit status: the test completed but its throughput was below `--min-throughput`.
pub(crate) const EXIT_BELOW_MIN: u8 = 3;

/// The exit status for a run that measured something: a failure (or a stall longer than
/// `max_stall`) beats an interruption beats a throughput below `min_bps` (bits/s) beats success. The floor is checked against the
/// receiver's figures when this process has them (loopback), else against every report.
pub(crate) fn exit_status(
    outcome: &Outcome,
    min_bps: Option<f64>,
    max_stall: Option<Duration>,
) -> u8 {
    let stalled = |r: &Report| max_stall.is_some_and(|m| r.longest_stall_s > m.as_secs_f64());
    if outcome.failed() || outcome.reports.iter().any(stalled) {
        return EXIT_FAILURE;
    }
    if outcome.interrupted() {
        return EXIT_INTERRUPTED;
    }
    let Some(min) = min_bps else { return EXIT_OK };
    let receivers: Vec<&Report> = outcome
        .reports
        .iter()
        .filter(|r| r.side == report::Side::Receiver)
        .collect();
    let judged = if receivers.is_empty() {
        outcome.reports.iter().collect()
    } else {
        receivers
    };
    if judged.iter().any(|r| r.totals.bits_per_second < min) {
        EXIT_BELOW_MIN
    } else {
        EXIT_OK
    }
}

/// Runs the configured test. `interrupt` is set by Ctrl+C (or a test) to end it early.
pub(crate) fn run(config: &Config, interrupt: &Flag, notes: Notes<'_>) -> Result<Outcome> {
    let reports = match config.role {
        Role::Sender => control_runtime()?.block_on(sender::run(config, interrupt, notes))?,
        Role::Receiver => control_runtime()?.block_on(receiver::run(config, interrupt, notes))?,
        Role::Loopback => loopback(config, interrupt, notes)?,
    };
    Ok(Outcome { reports })
}

/// The runtime a role's control plane runs on: one thread, its own.
fn control_runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Both roles in this process, each on its own control thread, so that neither side's
/// window edges wait for the other side's work.
fn loopback(config: &Config, interrupt: &Flag, notes: Notes<'_>) -> Result<Vec<Report>> {
    // Every receiver port is bound before the sender starts: a port held by another
    // process fails the run at once, and the sender can only reach this process's own
    // receiver. If the sender fails (or is interrupted), the receiver stops waiting.
    let receiving = control_runtime()?;
    let ports = {
        let _in_runtime = receiving.enter();
        receiver::bind(config, notes)?
    };
    let receiver_flag = Flag::new();
    std::thread::scope(|scope| {
        let sending = std::thread::Builder::new()
            .name("sender-control".into())
            .spawn_scoped(scope, || {
                control_runtime()?.block_on(async {
                    let s = sender::run(config, interrupt, notes).await;
                    if s.is_err() {
                        receiver_flag.trigger();
                    }
                    s
                })
            })
            .context("create the sender's control thread")?;
        let received = receiving.block_on(async {
            let forward = {
                let (i, r) = (interrupt.clone(), receiver_flag.clone());
                tokio::spawn(async move {
                    i.wait().await;
                    r.trigger();
                })
            };
            let r = receiver::serve(config, ports, &receiver_flag, notes).await;
            forward.abort();
            r
        });
        let sent = sending
            .join()
            .map_err(|_| anyhow::anyhow!("the sender's control thread panicked"))?;
        let mut reports = sent?;
        reports.extend(received?);
        Ok(reports)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Measured;
    use crate::stats::fixture::seed_measured;
    use crate::timeline::{End, Stall};

    #[test]
    fn the_worst_end_decides_the_exit_status() {
        let o = |ends: Vec<(End, Option<f64>)>| Outcome {
            reports: ends
                .into_iter()
                .map(|(end, planned_s)| {
                    crate::stats::report(Measured {
                        end,
                        planned_s,
                        ..seed_measured()
                    })
                })
                .collect(),
        };
        let plan = Some(300.0);
        let fault = End::Fault("lost".into());
        let status =
            |ends: Vec<(End, Option<f64>)>, min: Option<f64>| exit_status(&o(ends), min, None);
        assert_eq!(status(vec![(End::Completed, plan)], None), 0);
        // The peer cut a planned test short: a failure; in continuous mode it is the end.
        assert_eq!(status(vec![(End::PeerEnded, plan)], None), 1);
        assert_eq!(status(vec![(End::PeerEnded, None)], None), 0);
        assert_eq!(status(vec![(fault.clone(), plan)], None), 1);
        assert_eq!(status(vec![(fault.clone(), None)], None), 1);
        assert_eq!(status(vec![(End::Interrupted, plan)], None), 130);
        assert_eq!(
            status(vec![(End::Interrupted, plan), (End::PeerEnded, plan)], None),
            130,
            "loopback: our own interrupted sender ended the receiver's test"
        );
        // The seed moved 957 Mbit/s: under a 1G floor, over a 900M one.
        assert_eq!(
            status(vec![(End::Completed, plan)], Some(1e9)),
            EXIT_BELOW_MIN
        );
        assert_eq!(status(vec![(End::Completed, plan)], Some(9e8)), 0);
        assert_eq!(
            status(vec![(fault, plan)], Some(1e9)),
            1,
            "a fault outranks the floor"
        );
        let stalled = Outcome {
            reports: vec![crate::stats::report(Measured {
                stall: Stall {
                    seconds: 2.1,
                    from_s: 0.5,
                },
                ..seed_measured()
            })],
        };
        let max = |s: f64| Some(Duration::from_secs_f64(s));
        assert_eq!(
            exit_status(&stalled, None, max(2.0)),
            1,
            "a stall past --max-stall"
        );
        assert_eq!(exit_status(&stalled, None, max(3.0)), 0);
    }
}
