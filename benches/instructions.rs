//! User-space instructions per byte of each data path, counted by
//! `valgrind --tool=callgrind` (instructions, not seconds: the same figure whatever else
//! the machine is doing, where timings are not). Run:
//! `cargo bench --bench instructions -- [--short 1] [--long 3] [--reps 3] [--save]`.
//!
//! Each path runs as one `ntttcp --loopback` process (sender and receiver together, one
//! stream) twice, for `--short` and `--long` seconds; the figure is the slope between the
//! two runs, (instructions(long) - instructions(short)) / (bytes(long) - bytes(short)), so
//! start-up and teardown, which do not grow with the bytes, drop out; the median of
//! `--reps` such slopes is the figure, printed with their spread. The kernel's copies
//! are not user space and are not counted: this is what our own code spends per byte.
//!
//! The figures are compared with `benches/instructions.baseline` (one `path Ir/B` line
//! each); a path more than 5 % above its baseline is printed as a REGRESSION, so a change
//! that costs instructions shows in review. `--save` rewrites the baseline file.

mod args;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The data paths: (name, extra flags for `ntttcp --loopback`).
const PATHS: [(&str, &str); 6] = [
    ("tcp", ""),
    ("tcp-async", "--io async"),
    ("tcp-sendfile", "-Z --sendfile-always"),
    ("tcp-skip-rx-copy", "--skip-rx-copy"),
    ("udp-offload", "-u"),
    ("udp-one-by-one", "-u --no-udp-offload"),
];

/// A path more than this far above its baseline is a regression.
const TOLERANCE: f64 = 0.05;

/// Below the ephemeral range (see the loopback benchmark).
const BASE_PORT: u16 = 9001;

const USAGE: &str =
    "usage: cargo bench --bench instructions -- [--short 1] [--long 3] [--reps 3] [--save]";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    args::check(&args, &["--short", "--long", "--reps"], &["--save"], USAGE);
    let short: u32 = args::parsed(&args, "--short", "1");
    let long: u32 = args::parsed(&args, "--long", "3");
    let reps: usize = args::parsed(&args, "--reps", "3");
    if long <= short {
        eprintln!("bench: --long {long} must be above --short {short}");
        std::process::exit(2);
    }
    if !has_valgrind() {
        println!("skipping: valgrind is not installed (apt-get install valgrind)");
        return;
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_ntttcp"));
    let baseline_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/instructions.baseline");
    let baseline = read_baseline(&baseline_file);
    println!(
        "user-space instructions per byte (callgrind, {short} s and {long} s runs, one stream)"
    );
    let mut measured = Vec::new();
    for (i, (name, flags)) in PATHS.iter().enumerate() {
        let mut slopes = Vec::new();
        for rep in 0..reps {
            // Each run its own ports: sync port `port - 1`, data `port` (+2 for the long run).
            let port = BASE_PORT + ((i * reps + rep) * 4) as u16;
            match slope(bin, flags, port, short, long) {
                Ok(per_byte) => slopes.push(per_byte),
                Err(e) => println!("{name:<18} failed: {e}"),
            }
        }
        let Some(per_byte) = median(&mut slopes) else {
            continue;
        };
        let spread = (slopes[0], slopes[slopes.len() - 1]);
        println!(
            "{}",
            verdict(name, per_byte, spread, baseline_of(&baseline, name))
        );
        measured.push((name.to_string(), per_byte));
    }
    if args::has(&args, "--save") {
        let text: String = measured
            .iter()
            .map(|(n, v)| format!("{n} {v:.6}\n"))
            .collect();
        std::fs::write(&baseline_file, text).expect("write the baseline");
        println!("saved {}", baseline_file.display());
    }
}

/// One line: the median, the spread of the runs, and how it compares with the baseline.
fn verdict(name: &str, per_byte: f64, (lo, hi): (f64, f64), base: Option<f64>) -> String {
    let figure = format!("{name:<18} {per_byte:9.5} Ir/B  (runs {lo:.5}-{hi:.5})");
    let Some(b) = base else {
        return format!("{figure}  no baseline");
    };
    let change = per_byte / b - 1.0;
    let mark = if change > TOLERANCE {
        "  REGRESSION"
    } else {
        ""
    };
    format!(
        "{figure}  baseline {b:9.5}  {:+6.1} %{mark}",
        change * 100.0
    )
}

/// The median of `v` (sorted in place), if any.
fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// Instructions per byte between a `short` and a `long` run of one path.
fn slope(bin: &Path, flags: &str, port: u16, short: u32, long: u32) -> Result<f64, String> {
    let (ir_a, bytes_a) = counted(bin, flags, port, short)?;
    let (ir_b, bytes_b) = counted(bin, flags, port + 2, long)?;
    if bytes_b <= bytes_a {
        return Err(format!(
            "the {long} s run moved no more bytes ({bytes_b}) than the {short} s one ({bytes_a})"
        ));
    }
    Ok((ir_b as f64 - ir_a as f64) / (bytes_b - bytes_a) as f64)
}

/// (instructions, receiver bytes) of one `ntttcp --loopback` run under callgrind.
fn counted(bin: &Path, flags: &str, port: u16, secs: u32) -> Result<(u64, u64), String> {
    let out_file =
        std::env::temp_dir().join(format!("ntttcp-callgrind-{}-{port}", std::process::id()));
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(bin)
        .args(["--loopback", "-P", "1", "-n", "1", "-p", &port.to_string()])
        .args([
            "-t",
            &secs.to_string(),
            "--timeout",
            "30",
            "--format",
            "json",
        ])
        .args(flags.split_whitespace());
    let stdout = run_bounded(cmd, Duration::from_secs(u64::from(secs) * 20 + 120))?;
    let summary = std::fs::read_to_string(&out_file).map_err(|e| format!("callgrind output: {e}"));
    let _ = std::fs::remove_file(&out_file);
    let ir = summary?
        .lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or("no summary line in the callgrind output")?;
    Ok((ir, receiver_bytes(&stdout)?))
}

/// Runs `cmd` with a deadline (killed past it); its stdout.
fn run_bounded(mut cmd: Command, limit: Duration) -> Result<String, String> {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("valgrind: {e}"))?;
    let mut out = String::new();
    let mut pipe = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let _ = pipe.read_to_string(&mut out);
        out
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("ran past {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader.join().map_err(|_| "reader panicked")?;
    if !status.success() {
        return Err(format!("ntttcp exited with {status}"));
    }
    Ok(out)
}

/// The receiver report's total bytes from `--format json`.
fn receiver_bytes(json: &str) -> Result<u64, String> {
    let doc: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("JSON: {e}"))?;
    doc["reports"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["side"] == "receiver"))
        .and_then(|r| r["totals"]["bytes"].as_u64())
        .ok_or_else(|| "no receiver total in the JSON".into())
}

fn has_valgrind() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn read_baseline(path: &Path) -> Vec<(String, f64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (n, v) = l.split_once(' ')?;
            Some((n.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn baseline_of(baseline: &[(String, f64)], name: &str) -> Option<f64> {
    baseline.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
}
