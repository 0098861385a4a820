//! What the unit tests of the OS-neutral code need of Windows: links, and what Windows
//! does not offer them (devices like /dev/full, a cheap look at a thread's state).

/// None: a symbolic link on Windows needs a privilege a test run may not have (and
/// Wine's do not read back as links).
pub(crate) fn symlink(
    _original: &std::path::Path,
    _link: &std::path::Path,
) -> Option<std::io::Result<()>> {
    None
}

/// Windows has no device that refuses every byte: none.
pub(crate) fn devices() -> Option<(&'static str, &'static str, &'static str)> {
    None
}

/// Windows offers no cheap look at whether another thread sleeps: none.
pub(crate) fn sleep_probe() -> Option<Box<dyn Fn() -> bool + Send>> {
    None
}
