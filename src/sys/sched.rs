//! What the scheduler did to the calling thread: how often it was preempted.

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
