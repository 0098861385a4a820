//! The scheduler and the calling thread on Windows.

use windows_sys::Win32::System::Threading as th;

/// Windows keeps no count of a thread's involuntary switches: 0, so no sample is set
/// aside as preempted.
pub(crate) fn preemptions() -> u64 {
    0
}

/// Gives the calling thread the time-critical priority with `prompt` (it wakes at a
/// deadline however busy the CPUs are), or the normal one back without. False where
/// Windows refuses.
#[allow(unsafe_code)]
pub(crate) fn prompt_wakeups(prompt: bool) -> bool {
    let priority = if prompt {
        th::THREAD_PRIORITY_TIME_CRITICAL
    } else {
        th::THREAD_PRIORITY_NORMAL
    };
    // SAFETY: GetCurrentThread is a pseudo-handle for this thread that needs no closing.
    unsafe { th::SetThreadPriority(th::GetCurrentThread(), priority) != 0 }
}
