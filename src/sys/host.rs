//! Who we are: the host name and the `uname -a` line the structured outputs carry,
//! read from /proc/sys/kernel (no external command).

/// The host name (`computername` in the XML and JSON files).
pub(crate) fn hostname() -> String {
    read("hostname").unwrap_or_else(|| "unknown".into())
}

/// The first line of `uname -a`: "Linux vm 6.18.44 #1 SMP ... x86_64 GNU/Linux".
pub(crate) fn os_line() -> String {
    match (read("ostype"), read("osrelease"), read("version")) {
        (Some(os), Some(release), Some(version)) => format!(
            "{os} {} {release} {version} {} GNU/Linux",
            hostname(),
            std::env::consts::ARCH
        ),
        _ => "Unknown".into(),
    }
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

fn read(name: &str) -> Option<String> {
    let v = std::fs::read_to_string(format!("/proc/sys/kernel/{name}")).ok()?;
    let v = v.trim();
    (!v.is_empty()).then(|| v.to_string())
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
    fn names_this_host() {
        let os = super::os_line();
        assert!(
            os.starts_with("Linux ") && os.ends_with(" GNU/Linux"),
            "{os}"
        );
        assert!(os.contains(&super::hostname()));
    }
}
