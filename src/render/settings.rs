//! The settings block printed before a run with `-V`, in ntttcp-for-linux's layout
//! (tab-separated `name:\t value` lines closed by a line of 57 dashes).

use std::fmt::Write;

use crate::config::{Config, Role};

/// Renders the settings block for `cfg`.
pub(crate) fn render(cfg: &Config) -> String {
    let roles: &[Role] = match cfg.role {
        Role::Loopback => &[Role::Sender, Role::Receiver],
        _ => std::slice::from_ref(&cfg.role),
    };
    let mut o = header(cfg, roles);
    for (name, value) in lines(cfg, roles) {
        let _ = writeln!(o, "{name}\t {value}");
    }
    format!("{o}{}\n", "-".repeat(57))
}

/// The `*** ...` lines: roles, modes and the options that change how a role runs.
fn header(cfg: &Config, roles: &[Role]) -> String {
    let mut header = String::new();
    for role in roles {
        let name = if *role == Role::Sender {
            "sender"
        } else {
            "receiver"
        };
        let _ = writeln!(header, "*** {name} role");
    }
    let receiving = roles.contains(&Role::Receiver);
    for (on, line) in [
        (cfg.background.daemon, "*** run as daemon"),
        (receiving && cfg.roles.epoll, "*** use epoll()"),
        (
            receiving && cfg.roles.hold,
            "*** hold receiver always running",
        ),
    ] {
        if on {
            let _ = writeln!(header, "{line}");
        }
    }
    if cfg.roles.multi_client {
        header.push_str("multiple clients:\t\t yes\n");
    }
    if cfg.roles.last_client {
        header.push_str("last client:\t\t\t yes\n");
    }
    if !cfg.sync.is_on() {
        header.push_str("*** no sender/receiver synch\n");
    }
    header
}

/// The `name:\t value` lines, in the original's order.
fn lines(cfg: &Config, roles: &[Role]) -> Vec<(&'static str, String)> {
    let on_off = |b: bool| if b { "enabled" } else { "disabled" }.to_string();
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let secs = |s: u32, zero: &str| {
        if s == 0 {
            zero.to_string()
        } else {
            s.to_string()
        }
    };
    let mut o = Vec::new();
    for role in roles {
        o.push(if *role == Role::Sender {
            let (p, n, l) = (
                cfg.streams.ports.len(),
                cfg.streams.threads_per_port,
                cfg.streams.conns_per_thread,
            );
            ("connections:\t\t", format!("{p} X {n} X {l}"))
        } else {
            ("ports:\t\t\t", cfg.streams.ports.len().to_string())
        });
    }
    o.push(("cpu affinity:\t\t", cfg.streams.ports[0].cpu.to_string()));
    o.push(("server address:\t\t", cfg.host_of(0)));
    o.push((
        "domain:\t\t\t",
        if cfg.streams.ipv6 { "IPv6" } else { "IPv4" }.into(),
    ));
    let udp = cfg.data.protocol == crate::config::Protocol::Udp;
    o.push(("protocol:\t\t", if udp { "UDP" } else { "TCP" }.into()));
    if udp {
        let offload = if cfg.data.udp_offload {
            "GSO/GRO"
        } else {
            "off"
        };
        o.push(("udp offload:\t\t", offload.into()));
    }
    o.push((
        "server port starting at:",
        cfg.streams.base_port.to_string(),
    ));
    for role in roles {
        o.push(if *role == Role::Sender {
            let size = if cfg.data.fit_datagrams {
                "fits the path MTU".to_string()
            } else {
                cfg.data.send_size.to_string()
            };
            ("sender socket buffer (bytes):", size)
        } else {
            let size = if cfg.data.recv_by_path {
                format!(
                    "{} ({} where the path's segments are NIC-sized)",
                    cfg.data.recv_size,
                    crate::data::WIDE_READ
                )
            } else {
                cfg.data.recv_size.to_string()
            };
            ("receiver socket buffer (bytes):", size)
        });
    }
    o.push(("tcp nodelay:\t\t", yes_no(cfg.data.sockopts.no_delay)));
    if cfg.data.zero_copy.sendfile {
        o.push(("zero-copy send:\t\t", "sendfile".into()));
    }
    if cfg.data.zero_copy.skip_rx_copy {
        o.push(("zero-copy receive:\t", "MSG_TRUNC (data not copied)".into()));
    }
    let tl = cfg.timeline;
    o.push(("test warm-up (sec):\t", secs(tl.warmup, "no")));
    o.push(("test duration (sec):\t", secs(tl.duration, "continuous")));
    o.push(("test cool-down (sec):\t", secs(tl.cooldown, "no")));
    o.push(("show system tcp retransmit:", yes_no(cfg.show.tcp_retrans)));
    o.push(("quiet mode:\t\t", on_off(cfg.show.quiet)));
    o.push(("verbose mode:\t\t", on_off(cfg.show.verbose)));
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Parsed, parse};

    fn config(line: &str) -> Config {
        let args: Vec<std::ffi::OsString> = std::iter::once("ntttcp")
            .chain(line.split_whitespace())
            .map(Into::into)
            .collect();
        match parse(&args, &[0, 1]).unwrap() {
            Parsed::Run(c, _) => *c,
            Parsed::Help(_) | Parsed::Version | Parsed::Generated(_) | Parsed::Merge(_) => {
                unreachable!()
            }
        }
    }

    #[test]
    fn sender_block_matches_the_linux_layout() {
        let got = render(&config("-s 10.0.0.5 -P 2 -n 3 -l 4 -W 1 -t 0 -V"));
        let want = "*** sender role\n\
            connections:\t\t\t 2 X 3 X 4\n\
            cpu affinity:\t\t\t *\n\
            server address:\t\t\t 10.0.0.5\n\
            domain:\t\t\t\t IPv4\n\
            protocol:\t\t\t TCP\n\
            server port starting at:\t 5001\n\
            sender socket buffer (bytes):\t 131072\n\
            tcp nodelay:\t\t\t no\n\
            test warm-up (sec):\t\t 1\n\
            test duration (sec):\t\t continuous\n\
            test cool-down (sec):\t\t no\n\
            show system tcp retransmit:\t no\n\
            quiet mode:\t\t\t disabled\n\
            verbose mode:\t\t\t enabled\n";
        assert_eq!(got, format!("{want}{}\n", "-".repeat(57)));
    }

    #[test]
    fn receiver_and_no_sync_lines() {
        let got = render(&config("-r -m 4,1,127.0.0.1 -N"));
        assert!(got.starts_with("*** receiver role\n*** no sender/receiver synch\n"));
        assert!(got.contains("ports:\t\t\t\t 4\n") && got.contains("cpu affinity:\t\t\t 1\n"));
        let by_path = "receiver socket buffer (bytes):\t 65536 (131072 where the path's \
                       segments are NIC-sized)\n";
        assert!(got.contains(by_path), "{got}");
        let got = render(&config("-r -m 4,1,127.0.0.1 -b 32K"));
        assert!(
            got.contains("receiver socket buffer (bytes):\t 32768\n"),
            "{got}"
        );
    }
}
