//! Throughput benchmark: ntttcp against iperf2 and iperf3 on 127.0.0.1 (or, with `--veth`,
//! between two network namespaces joined by a veth pair: GRO and a driver's path), the same
//! number of streams, interleaved, after waiting for an idle machine, repeated; medians
//! and ratios printed. Run: `cargo bench --bench loopback -- [--seconds 5] [--reps 3]
//! [--streams 1,2,4] [--zero-copy] [--placements] [--rx-sizes 16K,32K] [--udp] [--veth]
//! [--baseline PATH]`.
//! `--udp` compares UDP instead: receiver goodput of unlimited 1472-byte datagrams, ntttcp `-u` against iperf3
//! `-u -b 0`. `--baseline PATH` adds another ntttcp binary (say, a release build of an
//! earlier commit) run with the default flags, so a change is measured before and after in
//! the same interleaved run.
//!
//! Every tool is measured the same way: throughput from the tool's receiver-side figure,
//! CPU from /proc/stat over the client's lifetime (busy cycles of all CPUs per byte, the
//! ntttcp formula), so "c/B" columns compare like with like. ntttcp is run several ways
//! per point: its default data path (blocking writes for one connection per thread),
//! `--io async` (a tokio runtime per worker; how the default was chosen), and with
//! `--zero-copy` also its opt-in copy-avoiding paths (`-Z` sendfile on the sender,
//! `--skip-rx-copy` MSG_TRUNC on the receiver, and both), whose gain is the ratio to the
//! default column. `--placements` adds each `--placement` (where `*` puts the workers),
//! `--rx-sizes` a receiver reading with each `-b` size.

mod args;
mod path;
mod stats;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use path::{End, Namespaces, Rx, Tx, VETH, spawn, target};
use stats::{Run, median, paired, spread};

/// 6001-9000: below Linux's default ephemeral range (32768-60999), so no outgoing
/// connection of this host holds one of them (as one may, even in TIME_WAIT, above it)
/// when a receiver binds it, and below the ports the tests take (10000-31999).
const BASE_PORT: u16 = 6001;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str, default: &str| args::opt(&args, name, default);
    let seconds: u32 = opt("--seconds", "5").parse().expect("--seconds N");
    let reps: usize = opt("--reps", "3").parse().expect("--reps N");
    let streams: Vec<usize> = opt("--streams", "1,2,4")
        .split(',')
        .map(|s| s.parse().expect("--streams 1,2,4"))
        .collect();
    let udp = args::has(&args, "--udp");
    let tools = tools(&args, udp);
    let _path = if args::has(&args, "--veth") {
        Some(Namespaces::new().unwrap_or_else(|e| panic!("--veth: {e}")))
    } else {
        None
    };
    let (cpus, mhz) = host_cpu();
    let path = if VETH.get().is_some() {
        "veth"
    } else {
        "loopback"
    };
    println!(
        "{path} benchmark: {seconds} s runs, {reps} reps, streams {streams:?}, {cpus} CPUs at {mhz} MHz"
    );
    let stride = streams.iter().max().copied().unwrap_or(1) + 2;
    // results[stream index][tool index][rep] = (Gbit/s, c/B), None for a failed run
    let mut results: Vec<Vec<Vec<Run>>> = vec![vec![Vec::new(); tools.len()]; streams.len()];
    for rep in 0..reps {
        for (si, &n) in streams.iter().enumerate() {
            for (ti, tool) in tools.iter().enumerate() {
                wait_idle();
                // Every run its own ports (ntttcp's sync port is the one below `-p`).
                let run = (rep * streams.len() + si) * tools.len() + ti;
                let port = BASE_PORT + (run * stride % 3_000) as u16;
                match tool.run(n, seconds, port) {
                    Ok((bps, busy)) => {
                        let cb = busy * cpus as f64 * mhz * 1e6 / bps;
                        let gbit = bps * 8.0 / 1e9;
                        println!(
                            "rep {rep} streams {n} {:<16} {gbit:7.2} Gbit/s  {cb:5.2} c/B",
                            tool.name()
                        );
                        results[si][ti].push(Some((gbit, cb)));
                    }
                    Err(e) => {
                        println!("rep {rep} streams {n} {}: failed: {e}", tool.name());
                        results[si][ti].push(None);
                    }
                }
            }
        }
    }
    summary(&tools, &streams, &results, udp);
}

/// What to run: ntttcp's default first (the ratios are against it), its variants, then
/// the peers that are installed.
fn tools(args: &[String], udp: bool) -> Vec<Tool> {
    if udp {
        // 1472-byte datagrams (a 1500-byte MTU's worth) as fast as each tool sends.
        let mut tools = vec![Tool::Ntttcp(UDP), Tool::Ntttcp(UDP_ONE_BY_ONE)];
        tools.extend(peer("iperf3", Tool::Iperf3(true)));
        return tools;
    }
    let mut tools: Vec<Tool> = NTTTCP[..2].iter().copied().map(Tool::Ntttcp).collect();
    if args::has(args, "--zero-copy") {
        tools.extend(NTTTCP[2..].iter().copied().map(Tool::Ntttcp));
    }
    if args::has(args, "--placements") {
        tools.extend(PLACEMENTS.iter().copied().map(Tool::Ntttcp));
    }
    // Leaked once: a `Tool` is `Copy` and names its flags and binary for the whole run.
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let sizes = args::opt(args, "--rx-sizes", "");
    for size in sizes.split(',').filter(|s| !s.is_empty()) {
        let name = leak(format!("ntttcp rx -b {size}"));
        tools.push(Tool::Ntttcp((name, "", leak(format!("-b {size}")))));
    }
    let baseline = args::opt(args, "--baseline", "");
    if !baseline.is_empty() {
        tools.push(Tool::Baseline(leak(baseline)));
    }
    tools.extend(peer("iperf", Tool::Iperf2(false)));
    tools.extend(peer("iperf", Tool::Iperf2(true)));
    tools.extend(peer("iperf3", Tool::Iperf3(false)));
    tools
}

/// `tool` if the peer program `name` is installed.
fn peer(name: &str, tool: Tool) -> Option<Tool> {
    let installed = Command::new(name)
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !installed {
        println!("skipping {name}: not installed (apt-get install {name})");
    }
    installed.then_some(tool)
}

/// Prints the medians per stream count, with the spread of the runs, and the ratios.
fn summary(tools: &[Tool], streams: &[usize], results: &[Vec<Vec<Run>>], udp: bool) {
    println!();
    print!("{:<8}", "streams");
    for t in tools {
        print!(" {:>34}", t.name());
    }
    println!("   ntttcp/iperf2  ntttcp/iperf2-lowat  ntttcp/iperf3  (variants: variant / ntttcp)");
    for (si, &n) in streams.iter().enumerate() {
        print!("{n:<8}");
        let med: Vec<(f64, f64)> = results[si]
            .iter()
            .map(|r| {
                let r: Vec<(f64, f64)> = r.iter().flatten().copied().collect();
                let g: Vec<f64> = r.iter().map(|x| x.0).collect();
                let (lo, hi) = spread(&g);
                let (m, c) = (median(g), median(r.iter().map(|x| x.1).collect()));
                print!(" {m:>9.2} ({lo:.1}-{hi:.1}) Gb/s {c:>5.2} c/B");
                (m, c)
            })
            .collect();
        let ours = med[0].0;
        let ratio = |t: Tool| {
            tools
                .iter()
                .position(|x| *x == t)
                .map(|i| format!("{:>14.2}", ours / med[i].0))
                .unwrap_or_else(|| format!("{:>14}", "-"))
        };
        print!(
            " {} {} {}",
            ratio(Tool::Iperf2(false)),
            ratio(Tool::Iperf2(true)),
            ratio(Tool::Iperf3(udp))
        );
        for (t, (g, _)) in tools.iter().zip(&med).skip(1) {
            if matches!(t, Tool::Ntttcp(_) | Tool::Baseline(_)) {
                print!("  {}: x{:.2}", t.name(), g / ours);
            }
        }
        println!();
    }
    rep_by_rep(tools, streams, results);
}

/// ntttcp's default against each peer, rep by rep: the median per-rep ratio, its
/// range, and in how many reps ntttcp was faster and cheaper per byte.
fn rep_by_rep(tools: &[Tool], streams: &[usize], results: &[Vec<Vec<Run>>]) {
    let peers = tools
        .iter()
        .enumerate()
        .filter(|(_, t)| matches!(t, Tool::Iperf2(_) | Tool::Iperf3(_)));
    for (ti, peer) in peers {
        println!("\nrep by rep, ntttcp / {}:", peer.name());
        for (si, &n) in streams.iter().enumerate() {
            let (ours, theirs) = (&results[si][0], &results[si][ti]);
            let (Some(g), Some(c)) = (paired(ours, theirs, 0), paired(ours, theirs, 1)) else {
                continue;
            };
            println!(
                "{n:<8} Gbit/s {}; c/B {}",
                g.describe("faster", g.above),
                c.describe("lower", c.below)
            );
        }
    }
}

/// The TCP_NOTSENT_LOWAT the `iperf2 -P lowat` column asks for: ntttcp's where segments
/// are NIC-sized (on loopback ntttcp sets 64 KiB; docs/benchmarks.md).
const NOTSENT_LOWAT: u32 = 131_072;

/// An ntttcp configuration: (column name, extra sender flags, extra receiver flags).
type Variant = (&'static str, &'static str, &'static str);

/// `--udp`: receiver goodput of unlimited 1472-byte datagrams.
const UDP: Variant = ("ntttcp -u", "-u -b 1472", "-u");
/// The same, one datagram per system call.
const UDP_ONE_BY_ONE: Variant = (
    "ntttcp -u --no-udp-offload",
    "-u -b 1472 --no-udp-offload",
    "-u --no-udp-offload",
);

/// `--placements`: where `*` puts the workers, each way (both sides).
const PLACEMENTS: [Variant; 3] = [
    (
        "ntttcp --placement none",
        "--placement none",
        "--placement none",
    ),
    (
        "ntttcp round-robin",
        "--placement round-robin",
        "--placement round-robin",
    ),
    (
        "ntttcp opposite",
        "--placement opposite",
        "--placement opposite",
    ),
];

/// The default first (ratios are against it), then the opt-in paths (`-Z` copies on
/// loopback unless `--sendfile-always`).
const NTTTCP: [Variant; 6] = [
    ("ntttcp", "", ""),
    ("ntttcp --io async", "--io async", ""),
    ("ntttcp -Z", "-Z", ""),
    ("ntttcp -Z always", "-Z --sendfile-always", ""),
    ("ntttcp --skip-rx-copy", "", "--skip-rx-copy"),
    ("ntttcp -Z --skip-rx", "-Z", "--skip-rx-copy"),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Ntttcp(Variant),
    /// true = `--tcp-write-prefetch NOTSENT_LOWAT` (the socket option ntttcp's sender
    /// sets; iperf2 then also waits for writability).
    Iperf2(bool),
    /// true = UDP (`-u -b 0 -l 1472`).
    Iperf3(bool),
    /// Another ntttcp binary with the default flags (`--baseline PATH`).
    Baseline(&'static str),
}

impl Tool {
    fn name(&self) -> &'static str {
        match self {
            Self::Ntttcp((name, _, _)) => name,
            Self::Iperf2(false) => "iperf2 -P",
            Self::Iperf2(true) => "iperf2 -P lowat",
            Self::Iperf3(false) => "iperf3 x N procs",
            Self::Iperf3(true) => "iperf3 -u x N procs",
            Self::Baseline(_) => "baseline ntttcp",
        }
    }

    /// Runs one measurement; returns (bytes/s, busy fraction while the client ran).
    fn run(&self, n: usize, secs: u32, port: u16) -> Result<(f64, f64), String> {
        match self {
            Self::Ntttcp((_, tx_opts, rx_opts)) => {
                let ntttcp = env!("CARGO_BIN_EXE_ntttcp");
                run_ntttcp(ntttcp, n, secs, port, tx_opts, rx_opts)
            }
            Self::Baseline(bin) => run_ntttcp(bin, n, secs, port, "", ""),
            Self::Iperf2(lowat) => {
                let _srv = Guard(spawn(Rx, "iperf", &format!("-s -p {port}"))?);
                std::thread::sleep(Duration::from_millis(500));
                let mut args = format!("-c {} -p {port} -P {n} -t {secs} -y C", target());
                if *lowat {
                    args += &format!(" --tcp-write-prefetch {NOTSENT_LOWAT}");
                }
                let (out, busy) = timed(|| output(Tx, "iperf", &args))?;
                // CSV: the last field is bits/s, field 5 the stream id. Some versions add
                // a sum line with id -1; 2.1.8 does not, so sum the streams then.
                let lines: Vec<(String, f64)> = out
                    .lines()
                    .filter_map(|l| {
                        let f: Vec<&str> = l.split(',').collect();
                        let id = f.get(5)?.to_string();
                        let bps: f64 = f.last()?.trim().parse().ok()?;
                        Some((id, bps))
                    })
                    .collect();
                if lines.is_empty() {
                    return Err(format!("no iperf CSV line in {out:?}"));
                }
                let rate = match lines.iter().find(|(id, _)| id == "-1") {
                    Some((_, sum)) => *sum,
                    None => lines.iter().map(|(_, b)| b).sum(),
                };
                Ok((rate / 8.0, busy))
            }
            Self::Iperf3(udp) => {
                let udp = if *udp { " -u -b 0 -l 1472" } else { "" };
                let servers: Vec<Guard> = (0..n)
                    .map(|i| {
                        spawn(Rx, "iperf3", &format!("-s -1 -p {}", port + i as u16)).map(Guard)
                    })
                    .collect::<Result<_, _>>()?;
                std::thread::sleep(Duration::from_millis(500));
                let (outs, busy) = timed(|| {
                    let clients: Vec<Child> = (0..n)
                        .map(|i| {
                            let (to, p) = (target(), port + i as u16);
                            spawn(Tx, "iperf3", &format!("-c {to} -p {p} -t {secs} -J{udp}"))
                        })
                        .collect::<Result<_, _>>()?;
                    clients
                        .into_iter()
                        .map(|c| wait_output(Guard(c), Duration::from_secs(secs as u64 + 15)))
                        .collect::<Result<Vec<_>, _>>()
                })?;
                drop(servers);
                let mut bps = 0.0;
                for o in outs {
                    let v: serde_json::Value =
                        serde_json::from_str(&o).map_err(|e| format!("iperf3 JSON: {e}"))?;
                    bps += v["end"]["sum_received"]["bits_per_second"]
                        .as_f64()
                        .ok_or("iperf3 JSON lacks end.sum_received")?;
                }
                Ok((bps / 8.0, busy))
            }
        }
    }
}

/// One ntttcp pair on the path: (receiver bytes/s, busy fraction while the sender ran).
fn run_ntttcp(
    bin: &str,
    n: usize,
    secs: u32,
    port: u16,
    tx_opts: &str,
    rx_opts: &str,
) -> Result<(f64, f64), String> {
    let common = format!("-m {n},*,{} -p {port} -t {secs}", target());
    let rx = Guard(spawn(Rx, bin, &format!("-r {common} {rx_opts}"))?);
    let (_, busy) = timed(|| output(Tx, bin, &format!("-s {common} {tx_opts}")))?;
    let out = wait_output(rx, Duration::from_secs(secs as u64 + 15))?;
    Ok((ntttcp_receiver_rate(&out)?, busy))
}

/// Receiver bytes/s from ntttcp's Totals row (MB/s is 2^20 bytes per second).
fn ntttcp_receiver_rate(out: &str) -> Result<f64, String> {
    let lines: Vec<&str> = out.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("   Bytes(MEG)"))
        .ok_or_else(|| format!("no Totals table in receiver output: {out}"))?;
    let mbs: f64 = lines[i + 2]
        .split_whitespace()
        .nth(3)
        .and_then(|v| v.parse().ok())
        .ok_or("bad Totals row")?;
    Ok(mbs * 1048576.0)
}

struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn output(end: End, cmd: &str, args: &str) -> Result<String, String> {
    let c = spawn(end, cmd, args)?;
    wait_output(Guard(c), Duration::from_secs(120))
}

fn wait_output(mut g: Guard, limit: Duration) -> Result<String, String> {
    use std::io::Read;
    let start = Instant::now();
    loop {
        if g.0.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        if start.elapsed() > limit {
            return Err("timed out".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = String::new();
    if let Some(mut o) = g.0.stdout.take() {
        o.read_to_string(&mut s).map_err(|e| e.to_string())?;
    }
    Ok(s)
}

/// Runs `f`, returning its result with the system busy fraction while it ran.
fn timed<T>(f: impl FnOnce() -> Result<T, String>) -> Result<(T, f64), String> {
    let a = cpu_ticks();
    let r = f()?;
    let b = cpu_ticks();
    let total = (b.0 - a.0) as f64;
    let idle = (b.1 - a.1) as f64;
    Ok((r, if total > 0.0 { 1.0 - idle / total } else { 0.0 }))
}

/// (total, idle+iowait) ticks of the aggregate /proc/stat line.
fn cpu_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    if v.len() < 5 {
        return (0, 0);
    }
    (v.iter().sum(), v[3] + v[4])
}

fn host_cpu() -> (usize, f64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpus = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    let mhz = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1)?.trim().parse().ok())
        .unwrap_or(0.0);
    (cpus.max(1), mhz)
}

/// Waits (at most 30 s) until the machine is under 10 % busy over half a second.
fn wait_idle() {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let a = cpu_ticks();
        std::thread::sleep(Duration::from_millis(500));
        let b = cpu_ticks();
        let total = (b.0 - a.0) as f64;
        if total > 0.0 && 1.0 - (b.1 - a.1) as f64 / total < 0.10 {
            return;
        }
    }
    println!("(machine not idle after 30 s; measuring anyway)");
}
