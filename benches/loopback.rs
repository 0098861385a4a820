//! Throughput benchmark: ntttcp against iperf2 and iperf3 on 127.0.0.1 (or, with `--veth`,
//! between two network namespaces joined by a veth pair: GRO and a driver's path), the same
//! number of streams, interleaved, after waiting for an idle machine, repeated; medians
//! and ratios printed. Run: `cargo bench --bench loopback -- [--seconds 5] [--reps 3]
//! [--streams 1,2,4] [--zero-copy] [--placements] [--rx-sizes 16K,32K] [--udp] [--veth]
//! [--baseline PATH] [--windows EXE]`.
//! `--windows EXE` adds the Windows build under Wine (`scripts/build-windows --wine`) as
//! receiver and as sender against this build: Wine's figures, not Windows'.
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
mod machine;
mod path;
mod stats;
mod tether;
mod tools;

use std::process::{Command, Stdio};

use machine::{Card, Steal, wait_idle};
use path::{Namespaces, VETH};
use stats::{Run, median, paired, spread};
use tools::{Tool, Variant};

/// 6001-9000: below Linux's default ephemeral range (32768-60999), so no outgoing
/// connection of this host holds one of them (as one may, even in TIME_WAIT, above it)
/// when a receiver binds it, and below the ports the tests take (10000-31999).
const BASE_PORT: u16 = 6001;

const OPTIONS: &[&str] = &[
    "--seconds",
    "--reps",
    "--streams",
    "--rx-sizes",
    "--baseline",
    "--windows",
];
const FLAGS: &[&str] = &["--udp", "--veth", "--zero-copy", "--placements"];
const USAGE: &str = "usage: cargo bench --bench loopback -- [--seconds 5] [--reps 3] \
[--streams 1,2,4] [--zero-copy] [--placements] [--rx-sizes 16K,32K] [--udp] [--veth] \
[--baseline PATH] [--windows EXE]";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    args::check(&args, OPTIONS, FLAGS, USAGE);
    let seconds: u32 = args::parsed(&args, "--seconds", "5");
    let reps: usize = args::parsed(&args, "--reps", "3");
    let streams = stream_counts(&args);
    let udp = args::has(&args, "--udp");
    let tools = tools(&args, udp);
    let _path = if args::has(&args, "--veth") {
        Some(Namespaces::new().unwrap_or_else(|e| panic!("--veth: {e}")))
    } else {
        None
    };
    let (cpus, mhz) = host_cpu();
    let card = Card::measure();
    card.print();
    let steal = Steal::start();
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
    println!(
        "\nmachine: steal over the whole run {:.1} %",
        steal.percent()
    );
}

/// What to run: ntttcp's default first (the ratios are against it), its variants, then
/// `--streams` as numbers of streams, each at least one; exit 2 naming the flag otherwise.
fn stream_counts(args: &[String]) -> Vec<usize> {
    let value = args::opt(args, "--streams", "1,2,4");
    let counts: Option<Vec<usize>> = value
        .split(',')
        .map(|s| s.parse().ok().filter(|&n| n > 0))
        .collect();
    counts.unwrap_or_else(|| {
        eprintln!("bench: --streams {value}: not a list of stream counts such as 1,2,4");
        std::process::exit(2);
    })
}

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
    let exe = args::opt(args, "--windows", "");
    if !exe.is_empty() {
        let exe = leak(exe);
        tools.extend([Tool::Wine(exe, true), Tool::Wine(exe, false)]);
    }
    tools.extend(peer("ntttcp-linux", Tool::Stock));
    tools.extend(peer("iperf", Tool::Iperf2(false)));
    tools.extend(peer("iperf", Tool::Iperf2(true)));
    tools.extend(peer("iperf3", Tool::Iperf3(false)));
    tools
}

/// `tool` if the peer program `name` is installed.
fn peer(name: &str, tool: Tool) -> Option<Tool> {
    // The stock ntttcp-for-linux takes -v as "verbose" and would start a receiver.
    let probe = if tool == Tool::Stock { "-h" } else { "-v" };
    let installed = Command::new(name)
        .arg(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !installed {
        println!("skipping {name}: not on PATH");
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
    println!(
        "   ntttcp/stock  ntttcp/iperf2  ntttcp/iperf2-lowat  ntttcp/iperf3  (variants: variant / ntttcp)"
    );
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
            " {} {} {} {}",
            ratio(Tool::Stock),
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
        .filter(|(_, t)| matches!(t, Tool::Stock | Tool::Iperf2(_) | Tool::Iperf3(_)));
    for (ti, peer) in peers {
        println!("\nrep by rep, ntttcp / {}:", peer.name());
        for (si, &n) in streams.iter().enumerate() {
            let (ours, theirs) = (&results[si][0], &results[si][ti]);
            let (Some(g), Some(c)) = (paired(ours, theirs, 0), paired(ours, theirs, 1)) else {
                continue;
            };
            println!(
                "{n:<8} Gbit/s {}; c/B {}; {}",
                g.describe("faster", g.above),
                c.describe("lower", c.below),
                goal(&g, &c)
            );
        }
    }
}

/// The goal of every cell against a peer: x1.10 the throughput at x0.90 the cycles per
/// byte (medians of the per-rep ratios), and slower in at most one rep of five.
fn goal(g: &stats::Paired, c: &stats::Paired) -> String {
    let mut missed = Vec::new();
    if g.median < 1.10 {
        missed.push(format!("throughput x{:.2} < x1.10", g.median));
    }
    if c.median > 0.90 {
        missed.push(format!("c/B x{:.2} > x0.90", c.median));
    }
    if g.below * 5 > g.reps {
        missed.push(format!("slower in {} of {}", g.below, g.reps));
    }
    if missed.is_empty() {
        "goal held".into()
    } else {
        format!("goal MISSED ({})", missed.join(", "))
    }
}

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
