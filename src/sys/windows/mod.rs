//! Windows, through `windows-sys`: the system counters NTttcp itself reads (system times,
//! the IP Helper's TCP and UDP statistics, the processors' interrupt and DPC counts),
//! Winsock's socket calls, the console's control events, thread priority.

pub(crate) mod counters;
pub(crate) mod daemon;
pub(crate) mod host;
pub(crate) mod limits;
pub(crate) mod net;
pub(crate) mod sched;
pub(crate) mod signals;
pub(crate) mod socket;
#[cfg(test)]
pub(crate) mod test_support;

/// How messages name this OS.
pub(crate) const NAME: &str = "Windows";

/// A socket's handle.
pub(crate) type RawSock = std::os::windows::io::RawSocket;

/// Whether an error says the stream's handle is closed or invalid (a stdout the caller
/// closed), or that the pipe's reader went away (`| head -1`; the standard library calls
/// only ERROR_BROKEN_PIPE and ERROR_NO_DATA a broken pipe).
pub(crate) fn is_closed_handle(e: &std::io::Error) -> bool {
    use windows_sys::Win32::Foundation::{ERROR_INVALID_HANDLE, ERROR_PIPE_NOT_CONNECTED};
    [ERROR_INVALID_HANDLE, ERROR_PIPE_NOT_CONNECTED]
        .iter()
        .any(|c| e.raw_os_error() == Some(*c as i32))
}

impl<T: std::os::windows::io::AsRawSocket> crate::sys::AsSock for T {
    fn raw_sock(&self) -> RawSock {
        self.as_raw_socket()
    }
}

/// A FILETIME as one number of 100-nanosecond units.
fn filetime(t: windows_sys::Win32::Foundation::FILETIME) -> u64 {
    (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)
}
