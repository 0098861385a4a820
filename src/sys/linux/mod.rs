//! Linux (and the Unix the crate is built on): /proc for the counters, libc and rustix
//! for what the standard library and socket2 do not offer.

pub(crate) mod counters;
pub(crate) mod daemon;
pub(crate) mod host;
pub(crate) mod limits;
pub(crate) mod net;
pub(crate) mod procfs;
pub(crate) mod sched;
pub(crate) mod signals;
pub(crate) mod socket;
#[cfg(test)]
pub(crate) mod test_support;

/// How messages name this OS.
pub(crate) const NAME: &str = "Linux";

/// A socket's file descriptor.
pub(crate) type RawSock = std::os::fd::RawFd;

/// Whether an error says the stream's descriptor is closed (EBADF: a stdout the caller
/// closed).
pub(crate) fn is_closed_handle(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EBADF)
}

impl<T: std::os::fd::AsRawFd> crate::sys::AsSock for T {
    fn raw_sock(&self) -> RawSock {
        self.as_raw_fd()
    }
}
