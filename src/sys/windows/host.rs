//! Windows' facts about the host that sysinfo lacks or gets through PDH (which Wine
//! lacks): the OS line, this process's CPU time and the local time of day.

use windows_sys::Win32::Foundation::FILETIME;

use super::filetime;

/// "Windows 10.0.19045 HOST x86_64": the version Windows reports of itself
/// (RtlGetVersion, which no compatibility shim alters), the host name and the machine.
#[allow(unsafe_code)]
pub(crate) fn os_line() -> String {
    use windows_sys::Win32::System::SystemInformation::OSVERSIONINFOW;
    // SAFETY: a zeroed OSVERSIONINFOW (plain data) with its size set, which the call fills.
    let v = unsafe {
        let mut v: OSVERSIONINFOW = std::mem::zeroed();
        v.dwOSVersionInfoSize = std::mem::size_of::<OSVERSIONINFOW>() as u32;
        windows_sys::Wdk::System::SystemServices::RtlGetVersion(&mut v);
        v
    };
    format!(
        "Windows {}.{}.{} {} {}",
        v.dwMajorVersion,
        v.dwMinorVersion,
        v.dwBuildNumber,
        crate::sys::host::hostname(),
        std::env::consts::ARCH
    )
}

/// CPU time this process has used so far (user + kernel, all threads), milliseconds; 0
/// when unknown.
#[allow(unsafe_code)]
pub(crate) fn process_cpu_ms() -> u64 {
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessTimes};
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: GetCurrentProcess is a pseudo-handle that needs no closing; the call writes
    // four FILETIMEs we own.
    let ok = unsafe {
        GetProcessTimes(
            GetCurrentProcess(),
            &mut created,
            &mut exited,
            &mut kernel,
            &mut user,
        )
    };
    if ok == 0 {
        return 0;
    }
    (filetime(kernel) + filetime(user)) / 10_000
}

/// The local wall-clock time as (hour, minute, second), in the machine's time zone.
#[allow(unsafe_code)]
pub(crate) fn local_time() -> (u32, u32, u32) {
    // SAFETY: a zeroed SYSTEMTIME (plain data) the call fills.
    let t = unsafe {
        let mut t: windows_sys::Win32::Foundation::SYSTEMTIME = std::mem::zeroed();
        windows_sys::Win32::System::SystemInformation::GetLocalTime(&mut t);
        t
    };
    (
        u32::from(t.wHour),
        u32::from(t.wMinute),
        u32::from(t.wSecond),
    )
}
