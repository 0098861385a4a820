//! Hand-built reports for renderer tests.
// The fuzz targets (feature `fuzzing`) build only on the seed's counters.
#![cfg_attr(not(test), allow(dead_code))]

use super::report;
use crate::config::Phases;
use crate::config::Protocol;
use crate::report::{Host, Params, SocketReport};
use crate::report::{Measured, Report, Side, ThreadCounts};
use crate::sys::SysUsage;
use crate::sys::cpu::CpuTimes;
use crate::sys::net::TcpCounters;
use crate::timeline::End;

/// One sender connection's TCP_INFO, for the -V renderings.
pub(crate) fn conn_info() -> crate::sys::socket::ConnInfo {
    crate::sys::socket::ConnInfo {
        thread: 0,
        local_port: 49699,
        rtt_us: 409,
        rttvar_us: Some(100),
        cwnd: 10,
        retransmits: Some(2),
        mss: 65483,
    }
}

/// The raw counters behind NTttcp 5.39's sample output: 4 threads of
/// 64 KiB buffers over 300.006 s, 34243 MiB in 300.00515 s, 15.075 % busy on 2 CPUs
/// at 2793 MHz. Everything the renderers print is derived from these.
pub(crate) fn seed_measured() -> Measured {
    let buffers = [138_834u64, 137_194, 135_841, 136_019];
    Measured {
        side: Side::Sender,
        host: Host {
            name: "vm<&>".into(),
            os: "Linux vm 6.18.44 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux".into(),
            cpu_count: 2,
            cpu_mhz: 2793.0,
        },
        params: seed_params(),
        buffer_len: 65536,
        seconds: 300.00515,
        window_unix_s: (1_796_000_000.25, 1_796_000_300.255_15),
        planned_s: Some(300.0),
        stall: Default::default(),
        threads: buffers
            .iter()
            .enumerate()
            .map(|(index, b)| ThreadCounts {
                index,
                port: 5001 + index as u16,
                seconds: 300.006,
                bytes: b * 65536,
                bytes_written: None,
                calls: *b,
                udp: None,
                cpu: None,
            })
            .collect(),
        connections: 4,
        sys: seed_sys(),
        negotiated_cycle_s: Some(300),
        end: End::Completed,
        tcp_retrans: None,
        nic: None,
        dev_interrupts: None,
        socket: SocketReport::default(),
        direction: None,
        rtt: None,
        tcp_connections: Vec::new(),
        peers: Vec::new(),
        round_trips: Vec::new(),
    }
}

/// What the seed's run was asked to do: 4 ports of one thread and one connection, 64 KiB
/// buffers, 300 s.
fn seed_params() -> Params {
    Params {
        send_size: 65536,
        recv_size: 65536,
        port: 5001,
        ports: 4,
        threads_per_port: 1,
        conns_per_thread: 1,
        sync: true,
        timeline: Phases {
            warmup: 0,
            duration: 300,
            cooldown: 0,
        },
        ipv6: false,
        verbose: false,
        timeout_ms: 10_000,
        protocol: Protocol::Tcp,
        udp_offload: true,
        zero_copy: Default::default(),
        placement: crate::config::Placement::RoundRobin,
        workload: Default::default(),
        latency_default: false,
    }
}

/// The seed's system counters over its window.
fn seed_sys() -> SysUsage {
    SysUsage {
        cpu: CpuTimes {
            user: 5_000,
            system: 10_075,
            idle: 84_925,
            iowait: Some(0),
            softirq: Some(0),
            steal: Some(0),
            ..Default::default()
        },
        interrupts: Some(1_816_762),
        net_rx: Some(1_265_645),
        tcp: TcpCounters {
            out_segs: 25_324_915,
            in_segs: 2_161_992,
            retrans_segs: 60_412,
            attempt_fails: 0,
        },
        process_cpu_s: 120.0,
        tcp_ext: Default::default(),
        udp: crate::sys::net::UdpCounters {
            rcvbuf_errors: Some(0),
            ..Default::default()
        },
    }
}

/// The seed's report.
pub(crate) fn seed_report() -> Report {
    report(seed_measured())
}

/// The report of the seed's counters as `change` leaves them.
pub(crate) fn seed_with(change: impl FnOnce(&mut Measured)) -> Report {
    let mut m = seed_measured();
    change(&mut m);
    report(m)
}

/// A receiver's 2 s report of a test that ended as `end`, planned to last `planned_s`.
pub(crate) fn cut_short(end: End, planned_s: Option<f64>) -> Report {
    report(Measured {
        side: Side::Receiver,
        end,
        planned_s,
        seconds: 2.0,
        ..seed_measured()
    })
}
