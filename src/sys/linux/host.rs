//! Linux's facts about the host that sysinfo lacks: the `uname -a` line (sysinfo has no
//! kernel build string), the local time of day, and this process's CPU time.

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

/// CPU time this process has used so far (user + system, all threads), milliseconds;
/// 0 when unknown.
pub(crate) fn process_cpu_ms() -> u64 {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, RefreshKind, System};
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

/// The local wall-clock time as (hour, minute, second), in the machine's time zone.
#[allow(unsafe_code)]
pub(crate) fn local_time() -> (u32, u32, u32) {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only into `tm`, which
    // we own and which is fully initialized by zeroing first.
    let tm = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        tm
    };
    let part = |v: libc::c_int| u32::try_from(v).unwrap_or(0);
    (part(tm.tm_hour), part(tm.tm_min), part(tm.tm_sec))
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_this_hosts_cpus() {
        let (n, mhz) = crate::sys::host::cpus();
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let online = stat
            .lines()
            .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
            .count();
        assert_eq!(n, online, "the online CPUs /proc/stat lists");
        assert!(mhz > 0.0, "{mhz}");
    }
}
