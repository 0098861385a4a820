//! What the latency benchmark runs: ntttcp's request/response and connection-rate tests
//! and the latency tools beside them, each a server and a client on 127.0.0.1, and the
//! figures each prints, read into one shape.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::compare::{Figures, Goal};
use crate::tether::tethered;

/// One kind of run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Probe {
    /// ntttcp `--rr SIZE` at its default one connection, with this `--placement`.
    NtttcpRr(usize, &'static str),
    /// The same run by another build of ntttcp (`--baseline PATH`), for a before/after
    /// beside the peers.
    BaselineRr(usize, &'static str, &'static str),
    NetperfRr(usize),
    NeperRr(usize),
    /// sockperf ping-pong (at least 14-byte messages), round-trip times.
    SockperfPp(usize),
    /// ntttcp `--connect-rate` with this many slots (1: `-P 1 -n 1`; 64: the defaults).
    NtttcpCrr(usize, &'static str),
    NetperfCrr,
    NeperCrr,
}

/// Which runs are compared with each other.
#[derive(Debug, PartialEq)]
pub(crate) enum Group {
    Rr(usize),
    Crr(usize),
}

/// Every probe whose tool is installed, ntttcp first in each group.
pub(crate) fn probes(placement: &'static str, baseline: Option<&'static str>) -> Vec<Probe> {
    let netperf = installed("netperf", "-V") && installed("netserver", "-V");
    let neper = installed("tcp_rr", "--help") && installed("tcp_crr", "--help");
    let sockperf = installed("sockperf", "--version");
    for (ok, name) in [
        (netperf, "netperf"),
        (neper, "neper (tcp_rr, tcp_crr)"),
        (sockperf, "sockperf"),
    ] {
        if !ok {
            println!("skipping {name}: not on PATH");
        }
    }
    let mut v = Vec::new();
    for size in [1, 64] {
        v.push(Probe::NtttcpRr(size, placement));
        v.extend(baseline.map(|bin| Probe::BaselineRr(size, placement, bin)));
        if netperf {
            v.push(Probe::NetperfRr(size));
        }
        if neper {
            v.push(Probe::NeperRr(size));
        }
        if sockperf {
            v.push(Probe::SockperfPp(size));
        }
    }
    v.push(Probe::NtttcpCrr(1, placement));
    if netperf {
        v.push(Probe::NetperfCrr);
    }
    if neper {
        v.push(Probe::NeperCrr);
    }
    v.push(Probe::NtttcpCrr(64, placement));
    v
}

fn installed(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

impl Probe {
    pub(crate) fn name(&self) -> String {
        match self {
            Self::NtttcpRr(s, p) => format!("ntttcp --rr {s} (--placement {p})"),
            Self::BaselineRr(s, p, _) => format!("baseline --rr {s} (--placement {p})"),
            Self::NetperfRr(s) => format!("netperf TCP_RR -r {s},{s}"),
            Self::NeperRr(s) => format!("neper tcp_rr -Q {s} -R {s}"),
            Self::SockperfPp(s) => format!("sockperf ping-pong -m {}", (*s).max(14)),
            Self::NtttcpCrr(n, p) => format!("ntttcp --connect-rate, {n} slot(s) ({p})"),
            Self::NetperfCrr => "netperf TCP_CRR".into(),
            Self::NeperCrr => "neper tcp_crr".into(),
        }
    }

    pub(crate) fn group(&self) -> Group {
        match *self {
            Self::NtttcpRr(s, _)
            | Self::BaselineRr(s, ..)
            | Self::NetperfRr(s)
            | Self::NeperRr(s)
            | Self::SockperfPp(s) => Group::Rr(s),
            Self::NtttcpCrr(n, _) => Group::Crr(n),
            Self::NetperfCrr | Self::NeperCrr => Group::Crr(1),
        }
    }

    /// The goal ntttcp is held to against this peer: request/response level with
    /// netperf and neper; connections x1.5 netperf TCP_CRR's transactions and x1.0
    /// neper tcp_crr's (theirs also carry a request and a response, and their latency is
    /// of the whole transaction, so not compared); sockperf runs beside, no goal.
    pub(crate) fn goal(&self) -> Option<Goal> {
        match self {
            Self::NetperfRr(_) | Self::NeperRr(_) => Some(Goal {
                rate: 1.0,
                latency: true,
            }),
            Self::NetperfCrr => Some(Goal {
                rate: 1.5,
                latency: false,
            }),
            Self::NeperCrr => Some(Goal {
                rate: 1.0,
                latency: false,
            }),
            _ => None,
        }
    }

    pub(crate) fn is_ours(&self) -> bool {
        matches!(self, Self::NtttcpRr(..) | Self::NtttcpCrr(..))
    }

    /// One run of `secs` seconds; servers listen on `port` (and the few above it).
    pub(crate) fn run(&self, secs: u32, port: u16) -> Result<Figures, String> {
        let ntttcp = env!("CARGO_BIN_EXE_ntttcp");
        let t = secs.to_string();
        match *self {
            Self::NtttcpRr(size, placement) => ntttcp_rr(ntttcp, size, placement, port, secs),
            Self::BaselineRr(size, placement, bin) => ntttcp_rr(bin, size, placement, port, secs),
            Self::NtttcpCrr(slots, placement) => {
                let layout = if slots == 1 { "-P 1 -n 1" } else { "" };
                let rx = format!(
                    "{} --placement {placement}",
                    if slots == 1 { "-P 1" } else { "" }
                );
                let tx = format!("--connect-rate {layout} --placement {placement}");
                let d = ntttcp_pair(ntttcp, port, secs, &rx, &tx)?;
                ntttcp_figures(&d, "connect", "connections_per_second")
            }
            Self::NetperfRr(size) => netperf(port, &t, "TCP_RR", size),
            Self::NetperfCrr => netperf(port, &t, "TCP_CRR", 1),
            Self::NeperRr(size) => neper("tcp_rr", port, &t, size),
            Self::NeperCrr => neper("tcp_crr", port, &t, 1),
            Self::SockperfPp(size) => sockperf(port, &t, size.max(14)),
        }
    }
}

/// `bin`'s request/response figures at one connection.
fn ntttcp_rr(
    bin: &str,
    size: usize,
    placement: &str,
    port: u16,
    secs: u32,
) -> Result<Figures, String> {
    let tx = format!("--rr {size} --placement {placement}");
    let d = ntttcp_pair(bin, port, secs, &format!("--placement {placement}"), &tx)?;
    ntttcp_figures(&d, "rr", "transactions_per_second")
}

/// An ntttcp receiver and sender on `port`; the sender's JSON document.
fn ntttcp_pair(
    bin: &str,
    port: u16,
    secs: u32,
    rx: &str,
    tx: &str,
) -> Result<serde_json::Value, String> {
    let common = format!("-p {port} -t {secs}");
    let _rx = Server::start(bin, &format!("-r 127.0.0.1 {common} {rx}"), port - 1)?;
    let out = finish(
        bin,
        &format!("-s 127.0.0.1 {common} {tx} --format json"),
        secs,
    )?;
    serde_json::from_str(&out).map_err(|e| format!("ntttcp JSON: {e}: {out}"))
}

/// The rate and the latency percentiles of ntttcp's `block` (rr or connect).
fn ntttcp_figures(d: &serde_json::Value, block: &str, rate: &str) -> Result<Figures, String> {
    let b = &d["reports"][0][block];
    let l = &b["latency_us"];
    Ok(Figures {
        rate: b[rate]
            .as_f64()
            .ok_or_else(|| format!("no {block}.{rate} in {d}"))?,
        p50: l["p50"].as_f64(),
        p99: l["p99"].as_f64(),
        p999: l["p999"].as_f64(),
    })
}

/// netperf TEST (TCP_RR or TCP_CRR) with SIZE-byte requests and responses, its
/// throughput and (TCP_RR) its latency percentiles from the omni output selectors.
fn netperf(port: u16, secs: &str, test: &str, size: usize) -> Result<Figures, String> {
    let _srv = Server::start("netserver", &format!("-D -p {port}"), port)?;
    let out = finish(
        "netperf",
        &format!(
            "-H 127.0.0.1 -p {port} -t {test} -l {secs} -- -r {size},{size} \
             -o THROUGHPUT,P50_LATENCY,P99_LATENCY,P999_LATENCY"
        ),
        secs.parse().unwrap_or(5),
    )?;
    // The last line holds the values in the selectors' order; a figure netperf could not
    // give (its 99.9th percentile here) is an empty field.
    let last = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let v: Vec<Option<f64>> = last.split(',').map(|f| f.trim().parse().ok()).collect();
    let at = |i: usize| v.get(i).copied().flatten().filter(|_| test != "TCP_CRR");
    let rate = v.first().copied().flatten();
    Ok(Figures {
        rate: rate.ok_or_else(|| format!("netperf output: {out}"))?,
        p50: at(1),
        p99: at(2),
        p999: at(3),
    })
}

/// neper's `tool` (tcp_rr or tcp_crr), one flow, one thread, TCP_NODELAY as ntttcp's
/// request/response connections have it (without, a 64-byte exchange waits on delayed
/// acknowledgements: 22 a second): its throughput and latency percentiles (printed in
/// seconds).
fn neper(tool: &str, port: u16, secs: &str, size: usize) -> Result<Figures, String> {
    let ports = format!("-C {port} -P {}", port + 1);
    let _srv = Server::start(tool, &format!("{ports} -l {secs} --no-delay --nolog"), port)?;
    let out = finish(
        tool,
        &format!(
            "-c -H 127.0.0.1 {ports} -l {secs} -Q {size} -R {size} -p 50,99,99.9 --no-delay \
             --nolog"
        ),
        secs.parse().unwrap_or(5),
    )?;
    let key = |k: &str| {
        out.lines().find_map(|l| {
            l.strip_prefix(k)?
                .strip_prefix('=')?
                .trim()
                .parse::<f64>()
                .ok()
        })
    };
    let us = |k: &str| key(k).map(|s| s * 1e6);
    Ok(Figures {
        rate: key("throughput").ok_or_else(|| format!("neper output: {out}"))?,
        p50: us("latency_p50"),
        p99: us("latency_p99"),
        p999: us("latency_p99.9"),
    })
}

/// sockperf ping-pong over TCP with SIZE-byte messages: messages per second and the
/// round-trip percentiles (`--full-rtt`).
fn sockperf(port: u16, secs: &str, size: usize) -> Result<Figures, String> {
    let _srv = Server::start(
        "sockperf",
        &format!("sr --tcp -i 127.0.0.1 -p {port}"),
        port,
    )?;
    let out = finish(
        "sockperf",
        &format!("pp --tcp -i 127.0.0.1 -p {port} -t {secs} -m {size} --full-rtt"),
        secs.parse().unwrap_or(5),
    )?;
    let after = |k: &str| -> Option<f64> {
        out.lines().find_map(|l| {
            l.split_once(k)?
                .1
                .split_whitespace()
                .next()?
                .trim_end_matches(';')
                .parse()
                .ok()
        })
    };
    let pct = |p: &str| {
        out.lines()
            .find(|l| l.contains(&format!("percentile {p} =")))
            .and_then(|l| l.rsplit('=').next()?.trim().parse().ok())
    };
    let (run, got) = (after("RunTime="), after("ReceivedMessages="));
    let (Some(run), Some(got)) = (run, got) else {
        return Err(format!("sockperf output: {out}"));
    };
    Ok(Figures {
        rate: got / run,
        p50: pct("50.000"),
        p99: pct("99.000"),
        p999: pct("99.900"),
    })
}

/// A server process, killed when dropped.
struct Server(Child);

impl Server {
    /// Starts `cmd args` and waits (at most 10 s) until TCP `port` listens.
    fn start(cmd: &str, args: &str, port: u16) -> Result<Self, String> {
        // neper writes a log file per run into its working directory: not the checkout.
        let child = tethered(&mut Command::new(cmd))
            .args(args.split_whitespace())
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{cmd}: {e}"))?;
        let s = Self(child);
        let began = Instant::now();
        while !listening(port) {
            if began.elapsed() > Duration::from_secs(10) {
                return Err(format!("{cmd} did not listen on {port}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(s)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs a client to its end (at most its test time and 20 s); its stdout (its stderr
/// only in the error when it printed nothing).
fn finish(cmd: &str, args: &str, secs: u32) -> Result<String, String> {
    let mut c = Server(
        tethered(&mut Command::new(cmd))
            .args(args.split_whitespace())
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{cmd}: {e}"))?,
    );
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = read(
        c.0.stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = read(
        c.0.stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let began = Instant::now();
    let limit = Duration::from_secs(u64::from(secs) + 20);
    while c.0.try_wait().map_err(|e| e.to_string())?.is_none() {
        if began.elapsed() > limit {
            return Err(format!("{cmd} did not finish within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (out, err) = (out.join(), err.join());
    let (out, err) = (out.unwrap_or_default(), err.unwrap_or_default());
    if out.trim().is_empty() {
        return Err(format!("{cmd} printed nothing; stderr: {err}"));
    }
    Ok(out)
}

/// Whether something listens on TCP `port` of this host (/proc/net/tcp and tcp6),
/// found without connecting: a probe connection would count as a client to some servers.
fn listening(port: u16) -> bool {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .any(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                c.len() > 3 && c[1].ends_with(&hex) && c[3] == "0A"
            })
    })
}
