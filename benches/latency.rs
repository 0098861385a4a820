//! Latency and connection-rate benchmark on 127.0.0.1: ntttcp `--rr` at one connection
//! (1- and 64-byte messages) against netperf TCP_RR, neper tcp_rr and sockperf
//! ping-pong, and ntttcp `--connect-rate` at one slot against netperf TCP_CRR and neper
//! tcp_crr, then at its default 64 slots; interleaved, repeated, medians printed with
//! ntttcp / peer ratios and the goals judged on the per-rep ratios. Run: `cargo bench
//! --bench latency -- [--seconds 5] [--reps 3] [--placement auto] [--baseline PATH]`;
//! `--baseline` runs another build's `--rr` beside ours (its ratio printed like a
//! peer's, with no goal).
//!
//! Peers are found on PATH (`netperf`/`netserver`, `tcp_rr`/`tcp_crr`, `sockperf`) and
//! each is skipped with a line when missing. ntttcp runs with `--placement none` unless
//! `--placement` says otherwise: towards another host nothing is pinned, so that is what
//! a user gets there; auto's shared core pays only when both ends are on one host.
//! sockperf's messages are at least 14 bytes, so its 1-byte row sends 14.

// Shared with the throughput bench, which uses the rest of them.
#[allow(dead_code)]
mod args;
mod compare;
mod machine;
mod peers;
#[allow(dead_code)]
mod stats;
mod tether;

use compare::{Figures, Goal, rep_by_rep};
use machine::{Card, Steal};
use peers::Probe;

const OPTIONS: &[&str] = &["--seconds", "--reps", "--placement", "--baseline"];
const USAGE: &str = "usage: cargo bench --bench latency -- [--seconds 5] [--reps 3] \
[--placement none] [--baseline PATH]";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    args::check(&args, OPTIONS, &[], USAGE);
    let opt = |name: &str, default: &str| args::opt(&args, name, default);
    let secs: u32 = args::parsed(&args, "--seconds", "5");
    let reps: usize = args::parsed(&args, "--reps", "3");
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let placement = leak(opt("--placement", "none"));
    let baseline = Some(opt("--baseline", ""))
        .filter(|b| !b.is_empty())
        .map(leak);
    Card::measure().print();
    let steal = Steal::start();
    println!("latency benchmark: {secs} s runs, {reps} reps, ntttcp --placement {placement}");
    let probes = peers::probes(placement, baseline);
    // results[probe][rep]
    let mut results: Vec<Vec<Option<Figures>>> = vec![Vec::new(); probes.len()];
    for rep in 0..reps {
        for (i, p) in probes.iter().enumerate() {
            machine::wait_idle();
            let port = 9_001 + ((rep * probes.len() + i) * 4 % 990) as u16;
            let r = p.run(secs, port);
            match &r {
                Ok(f) => println!("rep {rep} {:<34} {}", p.name(), f.describe()),
                Err(e) => println!("rep {rep} {:<34} failed: {e}", p.name()),
            }
            results[i].push(r.ok());
        }
    }
    summary(&probes, &results);
    println!(
        "\nmachine: steal over the whole run {:.1} %",
        steal.percent()
    );
}

/// Medians per probe, then ntttcp / peer per group: the ratio of the medians, then rep
/// by rep with the goal's verdict (latency: lower is better; rate: higher is better).
fn summary(probes: &[Probe], results: &[Vec<Option<Figures>>]) {
    println!("\nmedians:");
    let med: Vec<Option<Figures>> = results.iter().map(|r| Figures::median_of(r)).collect();
    for (p, m) in probes.iter().zip(&med) {
        let text = m
            .as_ref()
            .map_or_else(|| "no run".into(), Figures::describe);
        println!("{:<34} {text}", p.name());
    }
    println!("\nntttcp / peer (latency: lower is better; rate: higher is better):");
    for (i, p) in probes.iter().enumerate() {
        let Some(ours_at) = probes
            .iter()
            .position(|o| o.is_ours() && o.group() == p.group())
        else {
            continue;
        };
        if p.is_ours() {
            continue;
        }
        let (Some(ours), Some(theirs)) = (&med[ours_at], &med[i]) else {
            continue;
        };
        let alike = Goal::timed_alike(p.goal());
        println!("{:<34} medians: {}", p.name(), ours.against(theirs, alike));
        let reps = rep_by_rep(&results[ours_at], &results[i], p.goal());
        println!("{:<34} rep by rep: {reps}", "");
    }
}
