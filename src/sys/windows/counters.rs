//! The system counters of one instant, from the sources NTttcp reads: GetSystemTimes for
//! CPU time, the IP Helper's TCP and UDP statistics (IPv4 and IPv6), and the processors'
//! interrupt and DPC counts (NtQuerySystemInformation). A count Windows does not give
//! (Wine answers 0 for interrupts and DPCs) is unknown, not zero.

use windows_sys::Wdk::System::SystemInformation as si;
use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::NetworkManagement::IpHelper as ip;
use windows_sys::Win32::Networking::WinSock::{AF_INET, AF_INET6};

use super::filetime;
use crate::sys::Snapshot;
use crate::sys::cpu::CpuTimes;
use crate::sys::net::{TcpCounters, UdpCounters};

/// Reads every counter; one that cannot be read leaves its fields at zero or unknown.
pub(crate) fn snapshot() -> Snapshot {
    let per_cpu = per_processor::<ProcessorPerformance>(si::SystemProcessorPerformanceInformation);
    let per_cpu = per_cpu.unwrap_or_default();
    let sum = |f: fn(&ProcessorPerformance) -> u64| per_cpu.iter().map(f).sum::<u64>();
    let mut cpu = system_times();
    // Kernel time includes the time spent in interrupts and DPCs: shown apart, as irq and
    // softirq time are on Linux.
    // A real Windows host has taken interrupts since boot. Wine answers 0 for them and
    // their time, and random bytes for the DPC counts: none of them is known then.
    let interrupts = Some(sum(|p| u64::from(p.interrupt_count))).filter(|n| *n > 0);
    if interrupts.is_some() {
        cpu.irq = sum(|p| p.interrupt_time.max(0) as u64);
        let dpc = sum(|p| p.dpc_time.max(0) as u64);
        cpu.softirq = Some(dpc);
        cpu.system = cpu.system.saturating_sub(cpu.irq + dpc);
    }
    Snapshot {
        cpu,
        interrupts,
        net_rx: interrupts.and_then(|_| dpc_count()),
        tcp: tcp_counters(),
        udp: udp_counters(),
        process_cpu_ms: super::host::process_cpu_ms(),
        ..Snapshot::default()
    }
}

/// The system's CPU time now (GetSystemTimes; interrupt and DPC time stay in kernel time,
/// which changes no busy fraction).
pub(crate) fn cpu_times() -> CpuTimes {
    system_times()
}

/// CPU time of all processors, in 100 ns units: user, kernel less idle, idle.
#[allow(unsafe_code)]
fn system_times() -> CpuTimes {
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut idle, mut kernel, mut user) = (zero, zero, zero);
    // SAFETY: three FILETIMEs we own, each written once by the call.
    let ok = unsafe {
        windows_sys::Win32::System::Threading::GetSystemTimes(&mut idle, &mut kernel, &mut user)
    };
    if ok == 0 {
        return CpuTimes::default();
    }
    let (idle, kernel) = (filetime(idle), filetime(kernel));
    CpuTimes {
        user: filetime(user),
        system: kernel.saturating_sub(idle),
        idle,
        ..CpuTimes::default()
    }
}

/// One processor's entry of SystemProcessorPerformanceInformation, as Windows lays it
/// out (windows-sys leaves the last three fields reserved).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessorPerformance {
    _idle: i64,
    _kernel: i64,
    _user: i64,
    dpc_time: i64,
    interrupt_time: i64,
    interrupt_count: u32,
}

/// One processor's entry of SystemInterruptInformation.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessorInterrupts {
    _context_switches: u32,
    dpc_count: u32,
    _dpc_rate: u32,
    _time_increment: u32,
    _dpc_bypass_count: u32,
    _apc_bypass_count: u32,
}

/// An array of one entry per processor from NtQuerySystemInformation.
#[allow(unsafe_code)]
fn per_processor<T: Copy + Default>(class: si::SYSTEM_INFORMATION_CLASS) -> Option<Vec<T>> {
    let n = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(64);
    let mut v = vec![T::default(); n];
    let mut len: u32 = 0;
    // SAFETY: the buffer is ours, of the byte length we pass; the call writes at most that
    // many bytes of plain-data entries and says how many it wrote.
    let status = unsafe {
        si::NtQuerySystemInformation(
            class,
            v.as_mut_ptr().cast(),
            (n * std::mem::size_of::<T>()) as u32,
            &mut len,
        )
    };
    if status < 0 {
        return None;
    }
    v.truncate(len as usize / std::mem::size_of::<T>());
    Some(v)
}

/// DPCs since boot, summed over processors; None when Windows gives none.
fn dpc_count() -> Option<u64> {
    let v = per_processor::<ProcessorInterrupts>(si::SystemInterruptInformation)?;
    Some(v.iter().map(|p| u64::from(p.dpc_count)).sum()).filter(|n| *n > 0)
}

/// The TCP MIB of IPv4 and IPv6 together.
fn tcp_counters() -> TcpCounters {
    both_families(tcp_of)
}

/// The TCP MIB of one address family; zero when Windows refuses.
#[allow(unsafe_code)]
fn tcp_of(family: u16) -> TcpCounters {
    // SAFETY: a zeroed MIB_TCPSTATS_LH (plain data) the call fills.
    let mut s: ip::MIB_TCPSTATS_LH = unsafe { std::mem::zeroed() };
    // SAFETY: `s` is ours and of the type the call writes.
    if unsafe { ip::GetTcpStatisticsEx(&mut s, u32::from(family)) } != 0 {
        return TcpCounters::default();
    }
    TcpCounters {
        out_segs: u64::from(s.dwOutSegs),
        in_segs: u64::from(s.dwInSegs),
        retrans_segs: u64::from(s.dwRetransSegs),
        attempt_fails: u64::from(s.dwAttemptFails),
    }
}

/// A MIB's IPv4 and IPv6 tables summed. Windows keeps one per family; Wine answers both
/// from Linux's one table. The IPv4 table is read on either side of the IPv6 one: an IPv6
/// table that lies between the two readings, field for field, is the same table again
/// and counts once.
fn both_families<T: Mib>(of: fn(u16) -> T) -> T {
    let (v4, v6, v4_again) = (of(AF_INET), of(AF_INET6), of(AF_INET));
    let (a, b, c) = (v4.fields(), v6.fields(), v4_again.fields());
    if (0..4).all(|i| a[i] <= b[i] && b[i] <= c[i]) {
        v4_again
    } else {
        v4 + v6
    }
}

/// A MIB table as its counters, for `both_families`.
trait Mib: std::ops::Add<Output = Self> + Copy {
    fn fields(&self) -> [u64; 4];
}

impl Mib for TcpCounters {
    fn fields(&self) -> [u64; 4] {
        [
            self.out_segs,
            self.in_segs,
            self.retrans_segs,
            self.attempt_fails,
        ]
    }
}

impl Mib for UdpCounters {
    fn fields(&self) -> [u64; 4] {
        [
            self.in_datagrams,
            self.out_datagrams,
            self.in_errors,
            self.rcvbuf_errors.unwrap_or(0),
        ]
    }
}

/// The UDP MIB of IPv4 and IPv6 together.
fn udp_counters() -> UdpCounters {
    both_families(udp_of)
}

/// The UDP MIB of one address family; zero when Windows refuses. Windows does not count
/// receive-buffer drops apart from the other errors.
#[allow(unsafe_code)]
fn udp_of(family: u16) -> UdpCounters {
    let mut s = ip::MIB_UDPSTATS::default();
    // SAFETY: `s` is ours and of the type the call writes.
    if unsafe { ip::GetUdpStatisticsEx(&mut s, u32::from(family)) } != 0 {
        return UdpCounters::default();
    }
    UdpCounters {
        in_datagrams: u64::from(s.dwInDatagrams),
        out_datagrams: u64::from(s.dwOutDatagrams),
        in_errors: u64::from(s.dwInErrors),
        rcvbuf_errors: None,
    }
}
