//! Who we are: the host name, the `uname -a` line the structured outputs carry, and the
//! CPUs the cycles-per-byte figures need. Sources: `sysinfo` for the host name, the
//! CPUs (count and clock) and this process's CPU time; `uname(2)` for the `uname -a` line (sysinfo has no kernel
//! build string). The counters over a window come from /proc (`sys::Snapshot`), which
//! sysinfo lacks.

use sysinfo::{CpuRefreshKind, RefreshKind, System};

/// The host name (`computername` in the XML and JSON files).
pub(crate) fn hostname() -> String {
    System::host_name().unwrap_or_else(|_| "unknown".into())
}

/// The first line of `uname -a`: "Linux vm 6.18.44 #1 SMP ... x86_64 GNU/Linux".
pub(crate) fn os_line() -> String {
    let u = rustix::system::uname();
    let text = |s: &std::ffi::CStr| s.to_string_lossy().into_owned();
    format!(
        "{} {} {} {} {} GNU/Linux",
        text(u.sysname()),
        text(u.nodename()),
        text(u.release()),
        text(u.version()),
        text(u.machine())
    )
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

/// CPU time this process has used so far (user + system, all threads), milliseconds;
/// 0 when unknown.
pub(crate) fn process_cpu_ms() -> u64 {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate};
    let Ok(pid) = sysinfo::get_current_pid() else {
        return 0;
    };
    let Ok(mut sys) = System::new_with_specifics(RefreshKind::nothing()) else {
        return 0;
    };
    let kind = ProcessRefreshKind::nothing().with_cpu();
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), false, kind);
    sys.process(pid)
        .map_or(0, sysinfo::Process::accumulated_cpu_time)
}

/// The local wall-clock time as `HH:MM:SS`, in the machine's time zone.
#[allow(unsafe_code)]
pub(crate) fn local_hms() -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only into `tm`, which
    // we own and which is fully initialized by zeroing first.
    let tm = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        tm
    };
    format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
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

    #[test]
    fn this_process_uses_cpu_time() {
        let before = super::process_cpu_ms();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let after = super::process_cpu_ms();
        assert!(after >= before + 100, "{before} -> {after} ms");
    }

    #[test]
    fn counts_this_hosts_cpus() {
        let (n, mhz) = super::cpus();
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let online = stat
            .lines()
            .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
            .count();
        assert_eq!(n, online, "the online CPUs /proc/stat lists");
        assert!(mhz > 0.0, "{mhz}");
    }

    #[test]
    fn names_this_host() {
        let os = super::os_line();
        assert!(
            os.starts_with("Linux ") && os.ends_with(" GNU/Linux"),
            "{os}"
        );
        assert!(os.contains(&super::hostname()));
    }
}
