//! Network counters (/proc/net/snmp) and address checks.

use std::net::{IpAddr, SocketAddr, TcpListener};

use serde::Serialize;

/// The system-wide TCP MIB counters NTttcp reports (same names as the Windows MIB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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

/// The `Tcp:` header/value line pair of /proc/net/snmp, matched by column name.
pub(crate) fn parse_tcp(snmp: &str) -> Option<TcpCounters> {
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

/// The system-wide UDP MIB counters (IPv4 and IPv6 together): NTttcp's packet and error
/// columns for UDP tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UdpCounters {
    /// Datagrams delivered to sockets (`InDatagrams`).
    pub in_datagrams: u64,
    /// Datagrams sent (`OutDatagrams`).
    pub out_datagrams: u64,
    /// Datagrams that could not be delivered (`InErrors`): NTttcp's UDP "Errors".
    pub in_errors: u64,
    /// Of those, dropped because a socket's receive buffer was full (`RcvbufErrors`).
    pub rcvbuf_errors: u64,
}

impl UdpCounters {
    /// Field-wise difference from `earlier`.
    pub(crate) fn delta(&self, earlier: &Self) -> Self {
        Self {
            in_datagrams: self.in_datagrams.saturating_sub(earlier.in_datagrams),
            out_datagrams: self.out_datagrams.saturating_sub(earlier.out_datagrams),
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
        }
    }
}

/// The `Udp:` pair of /proc/net/snmp plus the `Udp6*` lines of /proc/net/snmp6 (either
/// may be empty; a missing counter reads 0).
pub(crate) fn parse_udp(snmp: &str, snmp6: &str) -> UdpCounters {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = udp.next().unwrap_or("").split_whitespace().collect();
    let values: Vec<&str> = udp.next().unwrap_or("").split_whitespace().collect();
    let v6 = |name: &str| -> u64 {
        snmp6
            .lines()
            .filter_map(|l| l.split_once(char::is_whitespace))
            .find(|(n, _)| n.strip_prefix("Udp6") == Some(name))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let get = |name: &str| -> u64 {
        let v4 = names
            .iter()
            .position(|n| *n == name)
            .and_then(|i| values.get(i)?.parse().ok())
            .unwrap_or(0);
        v4 + v6(name)
    };
    UdpCounters {
        in_datagrams: get("InDatagrams"),
        out_datagrams: get("OutDatagrams"),
        in_errors: get("InErrors"),
        rcvbuf_errors: get("RcvbufErrors"),
    }
}

/// TcpExt retransmit counters of /proc/net/netstat (`--show-tcp-retrans`); a counter
/// the kernel no longer has (TCPForwardRetrans is gone from recent kernels) reads 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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

/// The `TcpExt:` header/value pair of /proc/net/netstat, matched by name.
pub(crate) fn parse_tcp_ext(netstat: &str) -> Option<TcpExt> {
    let mut ext = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let names: Vec<&str> = ext.next()?.split_whitespace().collect();
    let values: Vec<&str> = ext.next()?.split_whitespace().collect();
    let get = |name: &str| -> u64 {
        names
            .iter()
            .position(|n| *n == name)
            .and_then(|i| values.get(i)?.parse().ok())
            .unwrap_or(0)
    };
    Some(TcpExt {
        lost_retrans: get("TCPLostRetransmit"),
        syn_retrans: get("TCPSynRetrans"),
        fast_retrans: get("TCPFastRetrans"),
        forward_retrans: get("TCPForwardRetrans"),
        slow_start_retrans: get("TCPSlowStartRetrans"),
        retrans_fail: get("TCPRetransFail"),
    })
}

/// Packet counters of one interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NicPackets {
    /// Interface name.
    pub name: String,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
}

/// Every interface of /proc/net/dev (`iface: rx_bytes rx_packets ... tx_bytes tx_packets`).
pub(crate) fn parse_net_dev(dev: &str) -> Vec<NicPackets> {
    dev.lines()
        .skip(2)
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let v: Vec<u64> = rest
                .split_whitespace()
                .map(|f| f.parse().ok())
                .collect::<Option<_>>()?;
            Some(NicPackets {
                name: name.trim().to_string(),
                rx_packets: *v.get(1)?,
                tx_packets: *v.get(9)?,
            })
        })
        .collect()
}

/// Connections to one of `ports` still half-open (SYN_RECV) in a /proc/net/tcp or tcp6
/// table: their handshake's last ACK has not arrived (a lossy path retransmits it).
pub(crate) fn count_half_open(table: &str, ports: &[u16]) -> usize {
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let port = cols
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            cols.get(3) == Some(&"03") && port.is_some_and(|p| ports.contains(&p))
        })
        .count()
}

/// `count_half_open` over this network namespace's IPv4 and IPv6 tables.
pub(crate) fn half_open(ports: &[u16]) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .map(|f| count_half_open(&std::fs::read_to_string(f).unwrap_or_default(), ports))
        .sum()
}

/// The name of the interface that owns `ip` (for SO_BINDTODEVICE), if any.
#[allow(unsafe_code)]
pub(crate) fn device_of(ip: IpAddr) -> Option<String> {
    let mut found = None;
    // SAFETY: getifaddrs allocates a list we only read and then free exactly once; every
    // pointer is checked for null before use, and sockaddrs are read by their family.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) != 0 {
            return None;
        }
        let mut cur = head;
        while !cur.is_null() && found.is_none() {
            let ifa = &*cur;
            cur = ifa.ifa_next;
            if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
                continue;
            }
            let addr = match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes())
                }
                libc::AF_INET6 => {
                    let sin6 = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    IpAddr::from(sin6.sin6_addr.s6_addr)
                }
                _ => continue,
            };
            if addr == ip {
                let name = std::ffi::CStr::from_ptr(ifa.ifa_name);
                found = Some(name.to_string_lossy().into_owned());
            }
        }
        libc::freeifaddrs(head);
    }
    found
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
    fn half_open_connections_on_our_ports_are_counted() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1389 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:1389 0100007F:D2F0 03 00000000:00000000 02:0000009B 00000000     0        0 0 1 0
   2: 0100007F:138A 0100007F:D2F2 03 00000000:00000000 02:0000009B 00000000     0        0 0 1 0
   3: 0100007F:1389 0100007F:D2F4 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0
";
        assert_eq!(count_half_open(table, &[5001]), 1);
        assert_eq!(count_half_open(table, &[5001, 5002]), 2);
        assert_eq!(count_half_open(table, &[6000]), 0);
    }

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
    fn udp_counters_add_both_families() {
        let snmp6 = "Ip6InReceives                   \t9\nUdp6InDatagrams                 \t7\n\
                     Udp6InErrors                    \t1\nUdp6OutDatagrams                \t8\n";
        let u = parse_udp(SNMP, snmp6);
        assert_eq!(
            u,
            UdpCounters {
                in_datagrams: 12,
                out_datagrams: 13,
                in_errors: 1,
                rcvbuf_errors: 0
            }
        );
        assert_eq!(parse_udp("", ""), UdpCounters::default());
        assert_eq!(u.delta(&parse_udp(SNMP, "")).in_datagrams, 7);
    }

    #[test]
    fn tcp_ext_and_net_dev() {
        let netstat = "TcpExt: SyncookiesSent TCPLostRetransmit TCPFastRetrans TCPSynRetrans\n\
                       TcpExt: 0 3 14 2\n\
                       IpExt: InNoRoutes\nIpExt: 0\n";
        let t = parse_tcp_ext(netstat).unwrap();
        assert_eq!((t.lost_retrans, t.fast_retrans, t.syn_retrans), (3, 14, 2));
        assert_eq!(t.forward_retrans, 0, "missing counters read 0");
        let dev = "Inter-|   Receive |  Transmit\n face |bytes packets|bytes packets\n\
                   \x20   lo: 5628 132426 0 0 0 0 0 0 5628 132427 0 0 0 0 0 0\n\
                   eth0:10 2 0 0 0 0 0 0 30 4 0 0 0 0 0 0\n";
        let nics = parse_net_dev(dev);
        assert_eq!(nics.len(), 2);
        assert_eq!(
            (
                nics[0].name.as_str(),
                nics[0].rx_packets,
                nics[0].tx_packets
            ),
            ("lo", 132426, 132427)
        );
        assert_eq!(
            (
                nics[1].name.as_str(),
                nics[1].rx_packets,
                nics[1].tx_packets
            ),
            ("eth0", 2, 4)
        );
    }

    #[test]
    fn finds_the_device_of_an_address() {
        assert_eq!(
            device_of("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert_eq!(device_of("203.0.113.77".parse().unwrap()), None);
    }

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
