//! How a measurement ended, and whether it fell short of its plan.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Side;
use crate::timeline::End;

/// How a measurement ended: `kind`, the fault's `reason`, and, when it fell short of its
/// plan, `early` with who ended it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Ending {
    /// completed | interrupted | peer_ended | fault.
    pub kind: EndKind,
    /// Faults: what was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Seconds measured.
    pub measured_s: f64,
    /// Seconds planned; null in continuous mode.
    pub planned_s: Option<f64>,
    /// Set when the test ran shorter than planned: by whom and why; null otherwise.
    pub early: Option<EarlyEnd>,
}

/// The kinds of `End`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EndKind {
    /// The window ran to its timer (or, continuous, until stopped).
    Completed,
    /// Ctrl+C or a signal on this side.
    Interrupted,
    /// The peer said it stopped early ('E').
    PeerEnded,
    /// A lost peer, connection or path.
    Fault,
}

impl Ending {
    /// The ending of a window that ended as `end`.
    pub(crate) fn new(
        end: End,
        measured_s: f64,
        planned_s: Option<f64>,
        early: Option<EarlyEnd>,
    ) -> Self {
        let (kind, reason) = match end {
            End::Completed => (EndKind::Completed, None),
            End::Interrupted => (EndKind::Interrupted, None),
            End::PeerEnded => (EndKind::PeerEnded, None),
            End::Fault(why) => (EndKind::Fault, Some(why)),
        };
        Self {
            kind,
            reason,
            measured_s,
            planned_s,
            early,
        }
    }
}

/// A measurement that did not run to its timer: who or what ended it, why, and how
/// long it ran against its plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EarlyEnd {
    /// `user` (Ctrl+C or a signal on this side), `sender` / `receiver` (the peer said it
    /// stopped early), or `fault` (a lost peer, connection or path).
    pub by: String,
    /// What happened, for people.
    pub reason: String,
    /// Seconds measured.
    pub measured_s: f64,
    /// Seconds planned; null in continuous mode.
    pub planned_s: Option<f64>,
}

impl EarlyEnd {
    /// How a measurement that ended as `end` fell short of its plan, if it did. A
    /// continuous test (no plan) ends normally when the user or the peer stops it.
    pub(crate) fn of(
        side: Side,
        end: &End,
        measured_s: f64,
        planned_s: Option<f64>,
    ) -> Option<Self> {
        let peer = match side {
            Side::Sender => "receiver",
            Side::Receiver => "sender",
        };
        let (by, reason) = match end {
            End::Completed => return None,
            End::Interrupted | End::PeerEnded if planned_s.is_none() => return None,
            End::Interrupted => (
                "user",
                "interrupted on this side (Ctrl+C or a signal)".into(),
            ),
            End::PeerEnded => (
                peer,
                format!(
                    "the {peer} stopped its test early and said so ('E'): it was interrupted \
                     or its own test failed"
                ),
            ),
            End::Fault(r) => ("fault", r.clone()),
        };
        Some(Self {
            by: by.into(),
            reason,
            measured_s,
            planned_s,
        })
    }

    /// One line: the reason (which names who ended the test) and the seconds measured
    /// against the plan.
    pub(crate) fn line(&self) -> String {
        let of = self
            .planned_s
            .map_or(String::new(), |p| format!(" of {p:.2} planned"));
        format!("{}; measured {:.2}{of} s", self.reason, self.measured_s)
    }
}
