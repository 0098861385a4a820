//! Network counters (the TCP and UDP MIBs, interface packets) and address checks.

use std::net::{IpAddr, SocketAddr, TcpListener};

pub(crate) use super::os::net::{device_of, half_open};

use serde::{Deserialize, Serialize};

/// The system-wide TCP MIB counters NTttcp reports (same names as the Windows MIB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TcpCounters {
    /// Segments sent (`OutSegs`).
    pub out_segs: u64,
    /// Segments received (`InSegs`).
    pub in_segs: u64,
    /// Segments retransmitted (`RetransSegs`).
    pub retrans_segs: u64,
    /// Failed connection attempts (`AttemptFails`): NTttcp's "Errors" column.
    pub attempt_fails: u64,
}

impl std::ops::Add for TcpCounters {
    type Output = Self;

    /// Field-wise sum (two address families' tables).
    fn add(self, o: Self) -> Self {
        Self {
            out_segs: self.out_segs + o.out_segs,
            in_segs: self.in_segs + o.in_segs,
            retrans_segs: self.retrans_segs + o.retrans_segs,
            attempt_fails: self.attempt_fails + o.attempt_fails,
        }
    }
}

impl TcpCounters {
    /// Field-wise difference from `earlier`.
    pub(crate) fn delta(&self, earlier: &Self) -> Self {
        Self {
            out_segs: self.out_segs.saturating_sub(earlier.out_segs),
            in_segs: self.in_segs.saturating_sub(earlier.in_segs),
            retrans_segs: self.retrans_segs.saturating_sub(earlier.retrans_segs),
            attempt_fails: self.attempt_fails.saturating_sub(earlier.attempt_fails),
        }
    }
}

/// The system-wide UDP MIB counters (IPv4 and IPv6 together): NTttcp's packet and error
/// columns for UDP tests.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub(crate) struct UdpCounters {
    /// Datagrams delivered to sockets (`InDatagrams`).
    pub in_datagrams: u64,
    /// Datagrams sent (`OutDatagrams`).
    pub out_datagrams: u64,
    /// Datagrams that could not be delivered (`InErrors`): NTttcp's UDP "Errors".
    pub in_errors: u64,
    /// Of those, dropped because a socket's receive buffer was full (`RcvbufErrors`); null
    /// where the OS does not count them apart (Windows).
    pub rcvbuf_errors: Option<u64>,
}

impl std::ops::Add for UdpCounters {
    type Output = Self;

    /// Field-wise sum (two address families' tables).
    fn add(self, o: Self) -> Self {
        Self {
            in_datagrams: self.in_datagrams + o.in_datagrams,
            out_datagrams: self.out_datagrams + o.out_datagrams,
            in_errors: self.in_errors + o.in_errors,
            rcvbuf_errors: self.rcvbuf_errors.zip(o.rcvbuf_errors).map(|(a, b)| a + b),
        }
    }
}

impl UdpCounters {
    /// Field-wise difference from `earlier`.
    pub(crate) fn delta(&self, earlier: &Self) -> Self {
        Self {
            in_datagrams: self.in_datagrams.saturating_sub(earlier.in_datagrams),
            out_datagrams: self.out_datagrams.saturating_sub(earlier.out_datagrams),
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
            rcvbuf_errors: super::since(self.rcvbuf_errors, earlier.rcvbuf_errors),
        }
    }
}

/// TcpExt retransmit counters of /proc/net/netstat (`--show-tcp-retrans`); a counter
/// the kernel no longer has (TCPForwardRetrans is gone from recent kernels) reads 0.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub(crate) struct TcpExt {
    /// `TCPLostRetransmit`.
    pub lost_retrans: u64,
    /// `TCPSynRetrans`.
    pub syn_retrans: u64,
    /// `TCPFastRetrans`.
    pub fast_retrans: u64,
    /// `TCPForwardRetrans`.
    pub forward_retrans: u64,
    /// `TCPSlowStartRetrans`.
    pub slow_start_retrans: u64,
    /// `TCPRetransFail`.
    pub retrans_fail: u64,
}

impl TcpExt {
    /// Field-wise difference from `earlier`.
    pub(crate) fn delta(&self, earlier: &Self) -> Self {
        Self {
            lost_retrans: self.lost_retrans.saturating_sub(earlier.lost_retrans),
            syn_retrans: self.syn_retrans.saturating_sub(earlier.syn_retrans),
            fast_retrans: self.fast_retrans.saturating_sub(earlier.fast_retrans),
            forward_retrans: self.forward_retrans.saturating_sub(earlier.forward_retrans),
            slow_start_retrans: self
                .slow_start_retrans
                .saturating_sub(earlier.slow_start_retrans),
            retrans_fail: self.retrans_fail.saturating_sub(earlier.retrans_fail),
        }
    }
}

/// Packet counters of one interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NicPackets {
    /// Interface name.
    pub name: String,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
}

/// Whether `ip` can be listened on here: the wildcard, or an address of a local
/// interface. Binding port 0 answers exactly that question without a table of interfaces.
pub(crate) fn is_local_address(ip: IpAddr) -> bool {
    if ip.is_unspecified() {
        return true;
    }
    TcpListener::bind(SocketAddr::new(ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_addresses() {
        assert!(is_local_address("127.0.0.1".parse().unwrap()));
        assert!(is_local_address("0.0.0.0".parse().unwrap()));
        assert!(is_local_address("127.3.2.1".parse().unwrap()));
        assert!(is_local_address("::1".parse().unwrap()));
        assert!(!is_local_address("2001:db8::1".parse().unwrap()));
        // TEST-NET-3 documentation prefix: never assigned to a local interface.
        assert!(!is_local_address("203.0.113.77".parse().unwrap()));
    }
}
