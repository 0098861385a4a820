//! The tools a throughput benchmark runs, each the same way: a receiver at one end of
//! the path, a sender at the other, the receiver's figure (iperf2: its client's CSV)
//! and the machine's busy share from /proc/stat while the sender ran.

use std::process::Child;
use std::time::{Duration, Instant};

use crate::machine::cpu_ticks;
use crate::path::{End, Rx, Tx, spawn, target};

/// The TCP_NOTSENT_LOWAT the `iperf2 -P lowat` column asks for: ntttcp's where segments
/// are NIC-sized (on loopback ntttcp sets 64 KiB; docs/benchmarks.md).
const NOTSENT_LOWAT: u32 = 131_072;

/// An ntttcp configuration: (column name, extra sender flags, extra receiver flags).
pub(crate) type Variant = (&'static str, &'static str, &'static str);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Tool {
    Ntttcp(Variant),
    /// true = `--tcp-write-prefetch NOTSENT_LOWAT` (the socket option ntttcp's sender
    /// sets; iperf2 then also waits for writability).
    Iperf2(bool),
    /// true = UDP (`-u -b 0 -l 1472`).
    Iperf3(bool),
    /// Another ntttcp binary with the default flags (`--baseline PATH`).
    Baseline(&'static str),
    /// The stock ntttcp-for-linux on both ends, as `ntttcp-linux` on PATH.
    Stock,
    /// The Windows build (`--windows EXE`) under Wine on one end, this build on the other:
    /// true = the .exe receives.
    Wine(&'static str, bool),
}

impl Tool {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Ntttcp((name, _, _)) => name,
            Self::Iperf2(false) => "iperf2 -P",
            Self::Iperf2(true) => "iperf2 -P lowat",
            Self::Iperf3(false) => "iperf3 x N procs",
            Self::Iperf3(true) => "iperf3 -u x N procs",
            Self::Baseline(_) => "baseline ntttcp",
            Self::Stock => "ntttcp-for-linux",
            Self::Wine(_, true) => "ntttcp.exe rx (Wine)",
            Self::Wine(_, false) => "ntttcp.exe tx (Wine)",
        }
    }

    /// Runs one measurement; returns (bytes/s, busy fraction while the client ran).
    pub(crate) fn run(&self, n: usize, secs: u32, port: u16) -> Result<(f64, f64), String> {
        match self {
            Self::Ntttcp((_, tx_opts, rx_opts)) => {
                let ntttcp = env!("CARGO_BIN_EXE_ntttcp");
                run_ntttcp(ntttcp, n, secs, port, tx_opts, rx_opts)
            }
            Self::Baseline(bin) => run_ntttcp(bin, n, secs, port, "", ""),
            Self::Stock => run_stock(n, secs, port),
            Self::Wine(exe, exe_receives) => run_wine(exe, *exe_receives, n, secs, port),
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

/// The .exe under Wine on one end and this build on the other, the same flags as
/// `run_ntttcp`'s default: (receiver bytes/s, busy fraction while the sender ran). Wine's
/// figures, not Windows'.
fn run_wine(
    exe: &str,
    exe_receives: bool,
    n: usize,
    secs: u32,
    port: u16,
) -> Result<(f64, f64), String> {
    let ntttcp = env!("CARGO_BIN_EXE_ntttcp");
    let common = format!("-m {n},*,{} -p {port} -t {secs}", target());
    let (rx, tx) = if exe_receives {
        (
            ("wine", format!("{exe} -r {common}")),
            (ntttcp, format!("-s {common}")),
        )
    } else {
        (
            (ntttcp, format!("-r {common}")),
            ("wine", format!("{exe} -s {common}")),
        )
    };
    let rx = Guard(spawn(Rx, rx.0, &rx.1)?);
    let (_, busy) = timed(|| output(Tx, tx.0, &tx.1))?;
    let out = wait_output(rx, Duration::from_secs(secs as u64 + 30))?;
    Ok((ntttcp_receiver_rate(&out)?, busy))
}

/// One stock ntttcp-for-linux pair, the same mapping as ours: (receiver bytes/s, busy
/// fraction while the sender ran). Its receiver is given a deadline: now and then it
/// stays after its test.
fn run_stock(n: usize, secs: u32, port: u16) -> Result<(f64, f64), String> {
    let common = format!("-m {n},*,{} -p {port} -t {secs}", target());
    let rx = Guard(spawn(Rx, "ntttcp-linux", &format!("-r {common}"))?);
    std::thread::sleep(Duration::from_millis(300));
    let (_, busy) = timed(|| output(Tx, "ntttcp-linux", &format!("-s {common}")))?;
    let out = wait_for_line(rx, "total bytes", Duration::from_secs(secs as u64 + 15))?;
    let field = |name: &str| -> Result<f64, String> {
        out.lines()
            .find_map(|l| l.split_once(name)?.1.split(':').nth(1))
            .and_then(|v| v.trim().trim_end_matches("seconds").trim().parse().ok())
            .ok_or_else(|| format!("no {name:?} in the stock receiver's output: {out}"))
    };
    Ok((field("total bytes")? / field("test duration")?, busy))
}

/// What `g` printed once a line holding `needle` (and the rest of its summary) is out,
/// or once it exits.
fn wait_for_line(mut g: Guard, needle: &str, limit: Duration) -> Result<String, String> {
    use std::io::{BufRead, BufReader};
    let out = g.0.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let (start, mut text, mut seen) = (Instant::now(), String::new(), false);
    while start.elapsed() < limit {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                seen |= line.contains(needle);
                text += &line;
                text.push('\n');
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if seen => return Ok(text),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(text),
        }
    }
    Err("timed out".into())
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
