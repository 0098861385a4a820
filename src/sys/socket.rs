//! Socket calls beyond socket2 (TCP_INFO and its Windows counterpart, unread bytes,
//! pacing, UDP segmentation, polling for room to write): one set of functions, each
//! operating system's in its own module. What this file holds is shared by both.

pub(crate) use super::os::socket::*;

use serde::{Deserialize, Serialize};

use super::RawSock;

/// Whether the OS says what a TCP socket has delivered (`bytes_acked`): Linux always,
/// Windows from 10 1703 (SIO_TCP_INFO), Wine never. Where it does not, a sender counts
/// the bytes it wrote.
pub(crate) fn reports_delivery(sock: RawSock) -> bool {
    bytes_acked(sock).is_some()
}

/// One connection's TCP state, read at the end of the test (counters cover the
/// connection's whole life, warm-up included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConnInfo {
    /// Sender thread that owned the connection.
    pub thread: usize,
    /// Local port.
    pub local_port: u16,
    /// Smoothed round-trip time, microseconds.
    pub rtt_us: u32,
    /// Round-trip time variation, microseconds; null where the OS does not say (Windows).
    pub rttvar_us: Option<u32>,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Segments retransmitted over the connection's life (Windows counts bytes: there,
    /// those bytes in segments of the MSS, rounded up); null where unknown.
    pub retransmits: Option<u32>,
    /// Sender maximum segment size, bytes.
    pub mss: u32,
}
