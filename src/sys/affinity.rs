//! CPU pinning of worker threads (core_affinity), and the list of CPUs we may use.

use crate::config::CpuSpec;

/// CPU numbers this process may run on (its affinity mask), in ascending order.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    let mut ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort_unstable();
    if ids.is_empty() {
        ids.push(0);
    }
    ids
}

/// The CPU worker `k` of a mapping runs on: the given CPU, or round-robin for `*`.
pub(crate) fn cpu_for(spec: CpuSpec, k: usize, allowed: &[usize]) -> usize {
    match spec {
        CpuSpec::Cpu(c) => c,
        CpuSpec::Any => allowed[k % allowed.len()],
    }
}

/// Where a UDP receiver's worker `k` runs for `*`: half the CPU list away from where
/// sender worker `k` runs. UDP has no flow control, so a receiver sharing its sender's
/// core (as TCP streams do best, on one host) only runs when the sender yields, and its
/// buffer overflows meanwhile: on loopback here 60 % loss and 1.9 Gbit/s received on
/// one core against 2 % and 5.0 Gbit/s on two.
pub(crate) fn udp_receiver_cpu_for(spec: CpuSpec, k: usize, allowed: &[usize]) -> usize {
    cpu_for(spec, k + allowed.len() / 2, allowed)
}

/// Pins the calling thread to `cpu`. Returns false if the kernel refused.
pub(crate) fn pin_current(cpu: usize) -> bool {
    core_affinity::set_for_current(core_affinity::CoreId { id: cpu })
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
    use super::*;

    #[test]
    fn round_robin_over_allowed_cpus() {
        let allowed = [0, 2, 5];
        let got: Vec<usize> = (0..5).map(|k| cpu_for(CpuSpec::Any, k, &allowed)).collect();
        assert_eq!(got, [0, 2, 5, 0, 2]);
        assert_eq!(cpu_for(CpuSpec::Cpu(1), 7, &allowed), 1);
        assert!(!allowed_cpus().is_empty());
    }

    #[test]
    fn udp_receivers_sit_opposite_their_senders() {
        let two = [0, 1];
        let rx: Vec<usize> = (0..4)
            .map(|k| udp_receiver_cpu_for(CpuSpec::Any, k, &two))
            .collect();
        let tx: Vec<usize> = (0..4).map(|k| cpu_for(CpuSpec::Any, k, &two)).collect();
        assert_eq!((rx, tx), (vec![1, 0, 1, 0], vec![0, 1, 0, 1]));
        assert_eq!(
            udp_receiver_cpu_for(CpuSpec::Cpu(0), 0, &two),
            0,
            "as given"
        );
        assert_eq!(udp_receiver_cpu_for(CpuSpec::Any, 0, &[3]), 3, "one CPU");
    }
}
