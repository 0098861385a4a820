//! Who we are: the host name and the `uname -a` line the structured outputs carry,
//! read from /proc/sys/kernel (no external command).

/// The host name (`computername` in the XML and JSON files).
pub fn hostname() -> String {
    read("hostname").unwrap_or_else(|| "unknown".into())
}

/// The first line of `uname -a`: "Linux vm 6.18.44 #1 SMP ... x86_64 GNU/Linux".
pub fn os_line() -> String {
    match (read("ostype"), read("osrelease"), read("version")) {
        (Some(os), Some(release), Some(version)) => format!(
            "{os} {} {release} {version} {} GNU/Linux",
            hostname(),
            std::env::consts::ARCH
        ),
        _ => "Unknown".into(),
    }
}

fn read(name: &str) -> Option<String> {
    let v = std::fs::read_to_string(format!("/proc/sys/kernel/{name}")).ok()?;
    let v = v.trim();
    (!v.is_empty()).then(|| v.to_string())
}

#[cfg(test)]
mod tests {
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
