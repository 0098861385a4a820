//! What the unit tests of the OS-neutral code need of Linux: links, devices, and a look at
//! whether a thread sleeps.

/// Makes `link` a symbolic link to `original`.
pub(crate) fn symlink(
    original: &std::path::Path,
    link: &std::path::Path,
) -> Option<std::io::Result<()>> {
    Some(std::os::unix::fs::symlink(original, link))
}

/// Devices to write to: (one that takes every byte, one that refuses them, their folder).
pub(crate) fn devices() -> Option<(&'static str, &'static str, &'static str)> {
    Some(("/dev/null", "/dev/full", "/dev"))
}

/// Called on a thread: a look, from any thread, at whether that thread sleeps
/// (/proc/self/task/TID/stat).
pub(crate) fn sleep_probe() -> Option<Box<dyn Fn() -> bool + Send>> {
    let me = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let tid = me.split(' ').next()?.to_string();
    Some(Box::new(move || {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"));
        stat.unwrap_or_default()
            .rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('S'))
    }))
}
