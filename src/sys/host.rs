//! Who we are: the host name, the OS line the structured outputs carry, the CPUs the
//! cycles-per-byte figures need, and the local time. Sources: `sysinfo` for the host
//! name and the CPUs (count and clock); the OS module for the OS line (sysinfo has no
//! kernel build string), this process's CPU time and the time of day. The counters over
//! a window come from `sys::Snapshot`.

pub(crate) use super::os::host::os_line;

use super::os::host as os_host;
use sysinfo::{CpuRefreshKind, RefreshKind, System};

/// The host name (`computername` in the XML and JSON files).
pub(crate) fn hostname() -> String {
    System::host_name().unwrap_or_else(|_| "unknown".into())
}

/// The CPUs of this host and the clock of the first one in MHz (0 when unknown).
pub(crate) fn cpus() -> (usize, f64) {
    let kind = RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing().with_frequency());
    match System::new_with_specifics(kind) {
        Ok(sys) => {
            let mhz = sys.cpus().first().map_or(0, sysinfo::Cpu::frequency);
            (sys.cpus().len().max(1), mhz as f64)
        }
        Err(_) => (1, 0.0),
    }
}

/// The local wall-clock time as `HH:MM:SS`, in the machine's time zone.
pub(crate) fn local_hms() -> String {
    let (h, m, s) = os_host::local_time();
    format!("{h:02}:{m:02}:{s:02}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn local_time_is_hh_mm_ss() {
        let t = super::local_hms();
        assert_eq!(t.len(), 8, "{t}");
        assert!(t.chars().enumerate().all(|(i, c)| if i == 2 || i == 5 {
            c == ':'
        } else {
            c.is_ascii_digit()
        }));
    }

    /// Spinning moves this process's CPU time forward: by 100 ms within 10 s of the wall
    /// clock, however busy the machine is (a starved thread spins longer).
    #[test]
    fn this_process_uses_cpu_time() {
        let before = super::super::os::host::process_cpu_ms();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut after = before;
        while after < before + 100 && t.elapsed() < std::time::Duration::from_secs(10) {
            for _ in 0..1_000_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            after = super::super::os::host::process_cpu_ms();
        }
        std::hint::black_box(x);
        assert!(
            after >= before + 100,
            "{before} -> {after} ms in {:?}",
            t.elapsed()
        );
    }

    #[test]
    fn names_this_host() {
        let os = super::os_line();
        let (first, last) = if cfg!(windows) {
            ("Windows ", "")
        } else {
            ("Linux ", " GNU/Linux")
        };
        assert!(os.starts_with(first) && os.ends_with(last), "{os}");
        assert!(os.contains(&super::hostname()));
    }
}
