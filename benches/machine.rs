//! The machine card a benchmark prints first, so a table can be read per machine: CPU
//! model (with its family and model numbers, and whether it has fast short string moves,
//! FSRM, with which the kernel copies socket data), CPUs, clock, kernel, the hypervisor's
//! steal, and what a wake-up costs from one CPU to another (two pinned threads passing a
//! token) beside the same on one CPU, and how an idle CPU waits (the cpuidle driver, and
//! for a KVM guest's haltpoll how long it polls before it halts: a CPU that halts at once
//! makes every wake-up of it an exit to the hypervisor).

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

/// What the card says of this machine.
pub(crate) struct Card {
    pub(crate) model: String,
    pub(crate) cpus: usize,
    pub(crate) mhz: f64,
    pub(crate) kernel: String,
    /// One-way wake-up, microseconds: token passed between CPUs 0 and 1, and on CPU 0.
    pub(crate) cross_core_us: Option<f64>,
    pub(crate) same_core_us: Option<f64>,
    /// Steal over the second the card was measured in, percent.
    pub(crate) steal_percent: f64,
    /// How an idle CPU waits: "haltpoll, polls up to 200 us", "intel_idle", "n/a".
    pub(crate) idle: String,
}

impl Card {
    pub(crate) fn measure() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
        };
        let fsrm = field("flags").is_some_and(|f| f.split(' ').any(|x| x == "fsrm"));
        let generation = format!(
            "family {} model {}{}",
            field("cpu family").unwrap_or_else(|| "?".into()),
            field("model").unwrap_or_else(|| "?".into()),
            if fsrm { ", FSRM" } else { "" }
        );
        let steal = Steal::start();
        let cross_core_us = wake_up_us(0, 1);
        let same_core_us = wake_up_us(0, 0);
        std::thread::sleep(Duration::from_millis(500));
        Self {
            model: format!(
                "{} ({generation})",
                field("model name").unwrap_or_else(|| "unknown CPU".into())
            ),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mhz: field("cpu MHz").and_then(|m| m.parse().ok()).unwrap_or(0.0),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "?".into(), |k| k.trim().to_string()),
            cross_core_us,
            same_core_us,
            steal_percent: steal.percent(),
            idle: idle(),
        }
    }

    pub(crate) fn print(&self) {
        let us = |v: Option<f64>| v.map_or_else(|| "n/a".into(), |v| format!("{v:.1} us"));
        println!(
            "machine: {}, {} CPUs at {:.0} MHz, Linux {}",
            self.model, self.cpus, self.mhz, self.kernel
        );
        println!(
            "machine: wake-up CPU 0 -> 1 {} (on one CPU {}), idle CPUs: {}, steal {:.1} %",
            us(self.cross_core_us),
            us(self.same_core_us),
            self.idle,
            self.steal_percent
        );
    }
}

/// The cpuidle driver, with haltpoll's limit on polling before a halt.
fn idle() -> String {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string());
    let Ok(driver) = read("/sys/devices/system/cpu/cpuidle/current_driver") else {
        return "n/a".into();
    };
    match read("/sys/module/haltpoll/parameters/guest_halt_poll_ns") {
        Ok(ns) if driver == "haltpoll" => match ns.parse::<u64>() {
            Ok(0) => "haltpoll, halt at once (guest_halt_poll_ns 0)".into(),
            Ok(ns) => format!("haltpoll, poll up to {} us before a halt", ns / 1000),
            Err(_) => format!("haltpoll ({ns})"),
        },
        _ => driver,
    }
}

/// The hypervisor's steal since `start`, from /proc/stat's aggregate line.
pub(crate) struct Steal {
    at: (u64, u64),
}

impl Steal {
    pub(crate) fn start() -> Self {
        Self { at: steal_ticks() }
    }

    /// Steal as a percent of all CPU time since `start`.
    pub(crate) fn percent(&self) -> f64 {
        let (total, steal) = steal_ticks();
        let dt = total.saturating_sub(self.at.0) as f64;
        if dt == 0.0 {
            return 0.0;
        }
        100.0 * steal.saturating_sub(self.at.1) as f64 / dt
    }
}

/// The aggregate /proc/stat line's first eight counters (user .. steal).
fn stat_line() -> Vec<u64> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect()
}

/// (all ticks, steal ticks) of the aggregate /proc/stat line.
fn steal_ticks() -> (u64, u64) {
    let v = stat_line();
    (v.iter().sum(), v.get(7).copied().unwrap_or(0))
}

/// (all ticks, idle + iowait ticks) of the aggregate /proc/stat line.
pub(crate) fn cpu_ticks() -> (u64, u64) {
    let v = stat_line();
    if v.len() < 5 {
        return (0, 0);
    }
    (v.iter().sum(), v[3] + v[4])
}

/// Median one-way wake-up between a thread on CPU `a` and one on CPU `b`, each blocked
/// on a rendezvous channel (a futex) until the other hands it the token: five batches
/// of 2,000 round trips. Both are threads of their own, so the caller's CPU mask (which
/// the bench's children inherit) is left alone. None if either CPU cannot be had.
fn wake_up_us(a: usize, b: usize) -> Option<f64> {
    let ids = core_affinity::get_core_ids()?;
    let (ca, cb) = (
        *ids.iter().find(|c| c.id == a)?,
        *ids.iter().find(|c| c.id == b)?,
    );
    const TRIPS: u32 = 2_000;
    let (to_b, at_b) = sync_channel::<u32>(0);
    let (to_a, at_a) = sync_channel::<u32>(0);
    let echo = std::thread::spawn(move || {
        core_affinity::set_for_current(cb).then(|| bounce(&at_b, &to_a))
    });
    let timer = std::thread::spawn(move || {
        if !core_affinity::set_for_current(ca) {
            return None;
        }
        let mut batches: Vec<f64> = (0..5)
            .map(|_| {
                let began = Instant::now();
                for i in 0..TRIPS {
                    to_b.send(i).ok()?;
                    at_a.recv().ok()?;
                }
                Some(began.elapsed().as_secs_f64() * 1e6 / f64::from(TRIPS * 2))
            })
            .collect::<Option<_>>()?;
        batches.sort_by(f64::total_cmp);
        Some(batches[batches.len() / 2])
    });
    let us = timer.join().ok().flatten();
    let _ = echo.join();
    us
}

/// The other end: hands every token straight back until the channel closes.
fn bounce(at: &Receiver<u32>, to: &SyncSender<u32>) {
    while let Ok(t) = at.recv() {
        if to.send(t).is_err() {
            return;
        }
    }
}

/// Waits (at most 30 s) until the machine is under 10 % busy over half a second.
pub(crate) fn wait_idle() {
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
