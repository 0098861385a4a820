//! CPU pinning of worker threads (core_affinity, on every OS), the list of CPUs we may
//! use, and the real-time priority of the threads that keep deadlines.

pub(crate) use super::os::sched::prompt_wakeups;

use crate::config::{CpuSpec, Placement};

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

/// Whether a TCP stream's peer is on this host, which `Placement::Auto` pins for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// On this host (the target is one of its addresses).
    Local,
    /// Elsewhere, not yet known (a receiver before its first connection), or UDP.
    Other,
}

/// The CPU sender worker `k` of a mapping runs on: the given CPU; for `*`, none
/// (`Placement::None`, or `Auto` towards another host) or the k-th allowed one,
/// round-robin.
pub(crate) fn sender_cpu(
    spec: CpuSpec,
    how: Placement,
    peer: Peer,
    k: usize,
    allowed: &[usize],
) -> Option<usize> {
    match (spec, how) {
        (CpuSpec::Cpu(c), _) => Some(c),
        (CpuSpec::Any, Placement::None) => None,
        (CpuSpec::Any, Placement::Auto) if peer == Peer::Other => None,
        (CpuSpec::Any, _) => Some(allowed[k % allowed.len()]),
    }
}

/// The CPU receiver worker `k` runs on: as a sender's, but half the CPU list away from
/// sender worker `k` with `Placement::Opposite`, and for UDP with round-robin too. UDP has
/// no flow control, so a receiver sharing its sender's core (as TCP streams do best, on
/// one host) only runs when the sender yields, and its buffer overflows meanwhile: on
/// loopback here 60 % loss and 1.9 Gbit/s received on one core against 2 % and
/// 5.0 Gbit/s on two. With `Auto` a TCP receiver starts unpinned and takes
/// `receiver_cpu(.., Peer::Local, ..)` once its first connection comes from this host.
pub(crate) fn receiver_cpu(
    spec: CpuSpec,
    how: Placement,
    udp: bool,
    peer: Peer,
    k: usize,
    allowed: &[usize],
) -> Option<usize> {
    let apart = how == Placement::Opposite || (udp && how == Placement::RoundRobin);
    let k = if apart { k + allowed.len() / 2 } else { k };
    let peer = if udp { Peer::Other } else { peer };
    sender_cpu(spec, how, peer, k, allowed)
}

/// Pins the calling thread to `cpu`, if one is given. Returns false if the kernel refused.
pub(crate) fn pin_current(cpu: Option<usize>) -> bool {
    cpu.is_none_or(|id| core_affinity::set_for_current(core_affinity::CoreId { id }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_over_allowed_cpus() {
        let allowed = [0, 2, 5];
        let rr = Placement::RoundRobin;
        let got: Vec<_> = (0..5)
            .map(|k| sender_cpu(CpuSpec::Any, rr, Peer::Other, k, &allowed))
            .collect();
        assert_eq!(got, [Some(0), Some(2), Some(5), Some(0), Some(2)]);
        assert_eq!(
            sender_cpu(CpuSpec::Cpu(1), rr, Peer::Other, 7, &allowed),
            Some(1)
        );
        assert!(!allowed_cpus().is_empty());
    }

    #[test]
    fn placements_of_the_two_ends() {
        let two = [0, 1];
        let rx_to = |how, udp, peer| -> Vec<_> {
            (0..4)
                .map(|k| receiver_cpu(CpuSpec::Any, how, udp, peer, k, &two))
                .collect()
        };
        let tx_to = |how, peer| -> Vec<_> {
            (0..4)
                .map(|k| sender_cpu(CpuSpec::Any, how, peer, k, &two))
                .collect()
        };
        let rx = |how, udp| rx_to(how, udp, Peer::Other);
        let tx = |how| tx_to(how, Peer::Other);
        let (on, none) = (|c: usize| Some(c), None);
        assert_eq!(tx(Placement::RoundRobin), [on(0), on(1), on(0), on(1)]);
        assert_eq!(
            rx(Placement::RoundRobin, false),
            tx(Placement::RoundRobin),
            "a stream shares a core"
        );
        assert_eq!(
            rx(Placement::RoundRobin, true),
            [on(1), on(0), on(1), on(0)],
            "UDP sits opposite"
        );
        assert_eq!(rx(Placement::Opposite, false), [on(1), on(0), on(1), on(0)]);
        assert_eq!(rx(Placement::None, true), [none; 4]);
        assert_eq!(tx(Placement::None), [none; 4]);
        assert_eq!(
            receiver_cpu(
                CpuSpec::Cpu(1),
                Placement::None,
                false,
                Peer::Other,
                0,
                &two
            ),
            on(1),
            "a CPU number pins"
        );
        // Auto: round-robin, sharing a core, only where the TCP peer is on this host.
        let auto = Placement::Auto;
        assert_eq!(tx(auto), [none; 4]);
        assert_eq!(rx(auto, false), [none; 4]);
        assert_eq!(tx_to(auto, Peer::Local), [on(0), on(1), on(0), on(1)]);
        assert_eq!(rx_to(auto, false, Peer::Local), tx_to(auto, Peer::Local));
        assert_eq!(
            rx_to(auto, true, Peer::Local),
            [none; 4],
            "UDP: no affinity"
        );
        assert_eq!(
            sender_cpu(CpuSpec::Cpu(1), auto, Peer::Other, 0, &two),
            on(1),
            "a CPU number pins"
        );
    }
}
