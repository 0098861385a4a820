//! The scheduler and the calling thread: how often it was preempted, and a real-time
//! priority for the threads that keep deadlines.

/// Times the calling thread has been switched out involuntarily (preempted while it could
/// run), from getrusage(RUSAGE_THREAD); 0 where that cannot be read.
#[allow(unsafe_code)]
pub(crate) fn preemptions() -> u64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `u` is a writable rusage the call fills; RUSAGE_THREAD names this thread.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, u.as_mut_ptr()) } == 0;
    if !ok {
        return 0;
    }
    // SAFETY: zeroed is a valid rusage, and the call succeeded, so it is filled.
    let u = unsafe { u.assume_init() };
    u.ru_nivcsw as u64
}

/// Gives the calling thread a real-time priority (SCHED_FIFO 1) with `prompt`, so that it
/// wakes at a deadline however busy the CPUs are, or the default policy back without. The
/// thread must only sleep and take short samples while prompt. False where the system
/// does not allow it (no CAP_SYS_NICE, an RT budget of 0 in a cgroup); threads it creates
/// start with the default policy either way.
#[allow(unsafe_code)]
pub(crate) fn prompt_wakeups(prompt: bool) -> bool {
    let (policy, priority) = if prompt {
        (libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, 1)
    } else {
        (libc::SCHED_OTHER, 0)
    };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 is this thread.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::preemptions;

    #[test]
    fn a_thread_kept_off_its_cpu_counts_a_preemption() {
        // Two threads spinning on one CPU: the scheduler must switch between them.
        let one = core_affinity::CoreId {
            id: crate::sys::affinity::allowed_cpus()[0],
        };
        let spin = move || {
            core_affinity::set_for_current(one);
            let (before, began) = (preemptions(), std::time::Instant::now());
            while preemptions() == before && began.elapsed() < std::time::Duration::from_secs(10) {
                std::hint::spin_loop();
            }
            preemptions() - before
        };
        let (a, b) = (std::thread::spawn(spin), std::thread::spawn(spin));
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        assert!(
            a > 0 || b > 0,
            "neither of two threads on one CPU was preempted"
        );
    }
}
