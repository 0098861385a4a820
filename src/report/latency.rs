//! What the latency-minded tests report beside bytes: request/response transactions,
//! connection-rate connections, their times' percentiles, and TCP_INFO round-trip times.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A request/response test's result (`--rr`) over the measurement window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RrResult {
    /// Bytes of each request, and of its response.
    pub size: usize,
    /// Transactions in the window: on the sender those whose response came back whole,
    /// on the receiver the requests' bytes it read / `size`.
    pub transactions: u64,
    /// Transactions per second.
    pub transactions_per_second: f64,
    /// The sender's round-trip times, from a request's first byte out to its response's
    /// last byte in, microseconds; null on a receiver (it does not time them) or when no
    /// transaction completed.
    pub latency_us: Option<Latency>,
}

/// Percentiles of round-trip times, microseconds (from a histogram of three
/// significant digits).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Latency {
    /// The fastest.
    pub min: f64,
    /// The mean.
    pub mean: f64,
    /// The median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// The slowest.
    pub max: f64,
}

/// A connection-rate test's result (`--connect-rate`) over the measurement window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConnectResult {
    /// Connections in the window: on the sender those established, on the receiver
    /// those accepted.
    pub connections: u64,
    /// Connections per second.
    pub connections_per_second: f64,
    /// The sender's connect times, from the connect call until the connection is
    /// established (one round trip of the handshake and both hosts' work), microseconds;
    /// null on a receiver (it does not time them) or when none completed.
    pub latency_us: Option<Latency>,
    /// Sender: the connections in `latency_us`. The rest count but are untimed: reset
    /// before their slot looked, or made while the slot's thread was preempted by this
    /// host's scheduler (with more slots than CPUs a wait of many time slices, which says
    /// more of this host's CPUs than of the path). 0 on a receiver.
    pub timed: u64,
}

/// Round-trip times sampled from TCP_INFO, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rtt {
    /// Samples taken (connections × looks).
    pub samples: u64,
    /// The median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The largest.
    pub max: f64,
}
