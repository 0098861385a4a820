//! Pure parsers of the kernel's text files: /proc/stat, /proc/softirqs, /proc/interrupts,
//! /proc/net/snmp and snmp6, /proc/net/netstat, /proc/net/dev and /proc/net/tcp. Each
//! takes `&str` and is tested on pasted text; `counters` and `net` read the files.

use crate::sys::cpu::{CpuTimes, IrqLine};
use crate::sys::net::{NicPackets, TcpCounters, TcpExt, UdpCounters};

/// The aggregate `cpu ` line of /proc/stat.
pub(crate) fn parse_cpu_line(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let get = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(CpuTimes {
        user: get(0),
        nice: get(1),
        system: get(2),
        idle: get(3),
        iowait: Some(get(4)),
        irq: get(5),
        softirq: Some(get(6)),
        steal: Some(get(7)),
    })
}

/// The total interrupt count: first number of the `intr` line.
pub(crate) fn parse_intr_total(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("intr "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// NET_RX softirqs summed over all CPUs.
pub(crate) fn parse_net_rx(softirqs: &str) -> Option<u64> {
    let line = softirqs
        .lines()
        .find(|l| l.trim_start().starts_with("NET_RX:"))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse::<u64>().ok())
            .fold(0, u64::saturating_add),
    )
}

/// Every line of /proc/interrupts after the CPU header.
pub(crate) fn parse_interrupts(text: &str) -> Vec<IrqLine> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let label = l.split_whitespace().next()?.to_string();
            let total = l
                .split_whitespace()
                .skip(1)
                .filter_map(|t| t.parse::<u64>().ok())
                .fold(0, u64::saturating_add);
            Some(IrqLine {
                label,
                text: l.to_string(),
                total,
            })
        })
        .collect()
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
        let v4: u64 = names
            .iter()
            .position(|n| *n == name)
            .and_then(|i| values.get(i)?.parse().ok())
            .unwrap_or(0);
        v4.saturating_add(v6(name))
    };
    UdpCounters {
        in_datagrams: get("InDatagrams"),
        out_datagrams: get("OutDatagrams"),
        in_errors: get("InErrors"),
        rcvbuf_errors: Some(get("RcvbufErrors")),
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

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "\
cpu  12354 0 144325 338974 611 0 58105 94 0 0
cpu0 6000 0 72000 169000 300 0 29000 47 0 0
cpu1 6354 0 72325 169974 311 0 29105 47 0 0
intr 123411 0 0 0 0 0 0 0 0 0 1 1 15
ctxt 5061234
btime 1764480000
softirq 73355 0 8638 4 3006 28901 0 91 17097 0 15618
";

    #[test]
    fn parses_the_aggregate_cpu_line() {
        let c = parse_cpu_line(STAT).unwrap();
        assert_eq!(
            c,
            CpuTimes {
                user: 12354,
                nice: 0,
                system: 144325,
                idle: 338974,
                iowait: Some(611),
                irq: 0,
                softirq: Some(58105),
                steal: Some(94)
            }
        );
        assert_eq!(c.total(), 12354 + 144325 + 338974 + 611 + 58105 + 94);
        assert!(parse_cpu_line("cpu0 1 2 3 4\n").is_none());
        assert!(parse_cpu_line("cpu  1 x 3 4\n").is_none());
    }

    #[test]
    fn interrupt_lines_sum_their_counts() {
        let text = "           CPU0       CPU1\n\
                     25:        100         50   PCI-MSI 49152-edge      virtio3-rx\n\
                    LOC:   32980308   21351370   Local timer interrupts\n\
                    ERR:          0\n";
        let lines = parse_interrupts(text);
        assert_eq!(lines.len(), 3);
        // "49152-edge" is not purely numeric, so it is not counted.
        assert_eq!((lines[0].label.as_str(), lines[0].total), ("25:", 150));
        assert_eq!(lines[1].total, 32980308 + 21351370);
        assert!(lines[1].text.contains("Local timer"));
    }

    #[test]
    fn interrupts_and_softirqs() {
        assert_eq!(parse_intr_total(STAT), Some(123411));
        let softirqs = "                    CPU0       CPU1       \n\
                        HI:          0          0\n\
                        NET_TX:          4       3006\n\
                        NET_RX:       1323       1683\n";
        assert_eq!(parse_net_rx(softirqs), Some(3006));
        assert_eq!(parse_net_rx("HI: 1 2\n"), None);
    }

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
                rcvbuf_errors: Some(0)
            }
        );
        let zero = UdpCounters {
            rcvbuf_errors: Some(0),
            ..UdpCounters::default()
        };
        assert_eq!(
            parse_udp("", ""),
            zero,
            "Linux counts every field, 0 when absent"
        );
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
    fn counts_past_u64_saturate() {
        // Found by the procfs fuzz target: sums of the per-CPU columns overflowed.
        let max = u64::MAX;
        let softirqs = format!("CPU0 CPU1\nNET_RX: {max} {max}\n");
        assert_eq!(parse_net_rx(&softirqs), Some(max));
        let interrupts = format!("CPU0 CPU1\n 24: {max} 7 PCI-MSI eth0\n");
        assert_eq!(parse_interrupts(&interrupts)[0].total, max);
        let snmp = format!("Udp: InDatagrams\nUdp: {max}\n");
        assert_eq!(parse_udp(&snmp, "Udp6InDatagrams 9\n").in_datagrams, max);
    }
}
