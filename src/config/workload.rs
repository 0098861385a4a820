//! What a test's data connections carry, and which way a measured stream of bytes went.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a test's data connections carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(crate) enum Workload {
    /// Bulk data from sender to receiver, as both NTTTCPs do (the default).
    #[default]
    Stream,
    /// `--rr SIZE`: each connection sends `size` bytes, waits for the receiver to echo
    /// them, and times the round trip; one transaction at a time per connection.
    RequestResponse {
        /// Bytes of each request (and of its response).
        size: usize,
    },
    /// `-R`: the sender opens the connections, and bulk data flows from the receiver to
    /// it (through a NAT or firewall that only lets connections in to the receiver).
    Reverse,
    /// `--bidir`: bulk data both ways at once on every connection, each way measured
    /// and reported on its own.
    Bidir,
    /// `--connect-rate`: each connection of a thread is opened and closed again at
    /// once, as fast as it goes; no data moves.
    ConnectRate,
}

impl Workload {
    /// The flag that asked for it, as the user typed it; None for a plain stream test.
    pub(crate) fn flag(self) -> Option<&'static str> {
        match self {
            Self::Stream => None,
            Self::RequestResponse { .. } => Some("--rr"),
            Self::Reverse => Some("-R/--reverse"),
            Self::Bidir => Some("--bidir"),
            Self::ConnectRate => Some("--connect-rate"),
        }
    }
}

/// Largest `--rr` request: a transaction is a latency probe, not a bulk transfer.
pub(crate) const MAX_RR_SIZE: usize = 16 << 20;

/// Which way a report's bytes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Direction {
    /// This side sent them (a sender; a receiver in a reverse test).
    Send,
    /// This side received them (a receiver; a sender in a reverse test).
    Receive,
}
