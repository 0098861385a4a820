//! Windows' answers about the network: half-open connections (the IP Helper's TCP
//! tables), and device names, which Windows does not bind sockets by.

use std::net::IpAddr;

use windows_sys::Win32::NetworkManagement::IpHelper as ip;

/// Windows binds no socket to a device by name: the `-a` address alone chooses the
/// interface, so there is no device to look up.
pub(crate) fn device_of(_ip: IpAddr) -> Option<String> {
    None
}

/// Connections to one of `ports` still half-open (SYN_RCVD) in the IPv4 and IPv6 TCP
/// tables: their handshake's last ACK has not arrived.
pub(crate) fn half_open(ports: &[u16]) -> usize {
    let ours = |state: i32, port_be: u32| {
        state == ip::MIB_TCP_STATE_SYN_RCVD && ports.contains(&u16::from_be(port_be as u16))
    };
    let v4 = table::<ip::MIB_TCPROW_LH>(|buf, len| {
        // SAFETY: `buf` holds `len` bytes the call may write, a table header then rows.
        #[allow(unsafe_code)]
        unsafe {
            ip::GetTcpTable(buf.cast(), len, 0)
        }
    });
    let v6 = table::<ip::MIB_TCP6ROW>(|buf, len| {
        // SAFETY: as above, for the IPv6 table.
        #[allow(unsafe_code)]
        unsafe {
            ip::GetTcp6Table(buf.cast(), len, 0)
        }
    });
    // SAFETY: every row of the IPv4 table is a MIB_TCPROW_LH, whose state union is a u32.
    #[allow(unsafe_code)]
    let n4 = v4
        .iter()
        .filter(|r| ours(unsafe { r.Anonymous.dwState } as i32, r.dwLocalPort))
        .count();
    let n6 = v6.iter().filter(|r| ours(r.State, r.dwLocalPort)).count();
    n4 + n6
}

/// The rows of an IP Helper table (a u32 count, then the rows from the next aligned
/// offset), read with the call's two-step size protocol; empty when it fails.
#[allow(unsafe_code)]
fn table<Row: Copy>(call: impl Fn(*mut u64, *mut u32) -> u32) -> Vec<Row> {
    let mut len: u32 = 0;
    let _ = call(std::ptr::null_mut(), &mut len);
    // A few rows of headroom for connections made between the two calls.
    let words = (len as usize + 8 * std::mem::size_of::<Row>()).div_ceil(8);
    let mut buf = vec![0u64; words.max(1)];
    let mut len = (buf.len() * 8) as u32;
    if call(buf.as_mut_ptr(), &mut len) != 0 {
        return Vec::new();
    }
    let first = std::mem::size_of::<u32>().next_multiple_of(std::mem::align_of::<Row>());
    let room = (buf.len() * 8).saturating_sub(first) / std::mem::size_of::<Row>();
    // SAFETY: the buffer starts with the u32 count the call wrote; the rows follow at
    // `first` (the table struct's layout), and no more than fit in the buffer are read.
    unsafe {
        let base = buf.as_ptr().cast::<u8>();
        let n = (base.cast::<u32>().read() as usize).min(room);
        let rows = base.add(first).cast::<Row>();
        (0..n).map(|i| rows.add(i).read_unaligned()).collect()
    }
}
