//! Network counters (/proc/net/snmp) and address checks.

use std::net::{IpAddr, SocketAddr, TcpListener};

use serde::Serialize;

/// The system-wide TCP MIB counters NTttcp reports (same names as the Windows MIB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TcpCounters {
    /// Segments sent (`OutSegs`).
    pub out_segs: u64,
    /// Segments received (`InSegs`).
    pub in_segs: u64,
    /// Segments retransmitted (`RetransSegs`).
    pub retrans_segs: u64,
    /// Failed connection attempts (`AttemptFails`): NTttcp's "Errors" column.
    pub attempt_fails: u64,
}

impl TcpCounters {
    /// Field-wise difference from `earlier`.
    pub fn delta(&self, earlier: &Self) -> Self {
        Self {
            out_segs: self.out_segs.saturating_sub(earlier.out_segs),
            in_segs: self.in_segs.saturating_sub(earlier.in_segs),
            retrans_segs: self.retrans_segs.saturating_sub(earlier.retrans_segs),
            attempt_fails: self.attempt_fails.saturating_sub(earlier.attempt_fails),
        }
    }
}

/// The `Tcp:` header/value line pair of /proc/net/snmp, matched by column name.
pub fn parse_tcp(snmp: &str) -> Option<TcpCounters> {
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let names: Vec<&str> = tcp.next()?.split_whitespace().collect();
    let values: Vec<&str> = tcp.next()?.split_whitespace().collect();
    let get = |name: &str| -> Option<u64> {
        let i = names.iter().position(|n| *n == name)?;
        values.get(i)?.parse().ok()
    };
    Some(TcpCounters {
        out_segs: get("OutSegs")?,
        in_segs: get("InSegs")?,
        retrans_segs: get("RetransSegs")?,
        attempt_fails: get("AttemptFails")?,
    })
}

/// Whether `ip` can be listened on here: the wildcard, or an address of a local
/// interface. Binding port 0 answers exactly that question without a table of interfaces.
pub fn is_local_address(ip: IpAddr) -> bool {
    if ip.is_unspecified() {
        return true;
    }
    TcpListener::bind(SocketAddr::new(ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "\
Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 123
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 28 2 7 16 0 3285 1993 42 0 18 0
Udp: InDatagrams NoPorts InErrors OutDatagrams
Udp: 5 0 0 5
";

    #[test]
    fn parses_tcp_counters_by_name() {
        let t = parse_tcp(SNMP).unwrap();
        assert_eq!(
            t,
            TcpCounters {
                out_segs: 1993,
                in_segs: 3285,
                retrans_segs: 42,
                attempt_fails: 7
            }
        );
        let later = TcpCounters {
            out_segs: 2000,
            in_segs: 3300,
            retrans_segs: 40,
            attempt_fails: 7,
        };
        assert_eq!(later.delta(&t).out_segs, 7);
        assert_eq!(
            later.delta(&t).retrans_segs,
            0,
            "saturates instead of wrapping"
        );
        assert!(parse_tcp("Tcp: A B\n").is_none());
    }

    #[test]
    fn local_addresses() {
        assert!(is_local_address("127.0.0.1".parse().unwrap()));
        assert!(is_local_address("0.0.0.0".parse().unwrap()));
        // TEST-NET-3 documentation prefix: never assigned to a local interface.
        assert!(!is_local_address("203.0.113.77".parse().unwrap()));
    }
}
