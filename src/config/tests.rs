//! The derived counts and defaults of a Config.

use super::*;

fn config(ports: usize, n: u32, l: u32) -> Config {
    Config {
        role: Role::Sender,
        streams: Streams {
            ports: vec![
                PortPlan {
                    host: Some("10.0.0.5".into()),
                    cpu: CpuSpec::Any
                };
                ports
            ],
            threads_per_port: n,
            conns_per_thread: l,
            base_port: 5001,
            placement: Placement::RoundRobin,
            ipv6: false,
            latency_default: false,
        },
        data: DataOpts {
            protocol: Protocol::Tcp,
            send_size: DEFAULT_SEND_SIZE,
            recv_size: DEFAULT_RECV_SIZE,
            recv_by_path: true,
            fit_datagrams: false,
            udp_offload: true,
            zero_copy: ZeroCopy::default(),
            sendfile_always: false,
            workload: Workload::Stream,
            io_mode: IoMode::Auto,
            sockopts: SockOpts::default(),
            rate_limit: None,
            thread_rate: None,
        },
        timeline: Phases {
            warmup: 1,
            duration: 10,
            cooldown: 1,
        },
        sync: SyncMode::Linux,
        timeout: DEFAULT_TIMEOUT,
        sync_keepalive: Some(DEFAULT_SYNC_KEEPALIVE),
        start_at: None,
        repeat: 1,
        source: Source::default(),
        roles: RoleOpts::default(),
        background: Background::default(),
        show: Show::default(),
    }
}

#[test]
fn derived_counts_follow_ntttcp_for_linux() {
    let c = config(16, 4, 1);
    assert_eq!(c.sender_threads().len(), 64);
    assert_eq!(c.sender_connections(), 64);
    assert_eq!(c.sync_port(), 5000);
    assert_eq!(c.port(15), 5016);
    let threads = c.sender_threads();
    assert_eq!(threads[3].port_index, 0);
    assert_eq!(threads[4].port_index, 1);
    assert_eq!(threads[63].port_index, 15);
    assert_eq!(config(2, 2, 3).sender_connections(), 12);
}

#[test]
fn cycle_is_the_sum_unless_continuous() {
    let mut t = Phases {
        warmup: 1,
        duration: 10,
        cooldown: 1,
    };
    assert_eq!(t.cycle(), 12);
    t.duration = 0;
    assert_eq!(t.cycle(), 0);
}

#[test]
fn default_hosts_depend_on_role_and_family() {
    let mut c = config(1, 1, 1);
    c.streams.ports[0].host = None;
    c.role = Role::Receiver;
    assert_eq!(c.host_of(0), "0.0.0.0");
    c.streams.ipv6 = true;
    assert_eq!(c.host_of(0), "::");
    c.role = Role::Loopback;
    assert_eq!(c.host_of(0), "::1");
}
