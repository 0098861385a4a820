//! Linux's answers about the network: half-open connections (/proc/net/tcp) and the
//! device that owns an address (getifaddrs).

use std::net::IpAddr;

use super::procfs::count_half_open;

/// `count_half_open` over this network namespace's IPv4 and IPv6 tables.
pub(crate) fn half_open(ports: &[u16]) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .map(|f| count_half_open(&std::fs::read_to_string(f).unwrap_or_default(), ports))
        .sum()
}

/// The name of the interface that owns `ip` (for SO_BINDTODEVICE), if any.
#[allow(unsafe_code)]
pub(crate) fn device_of(ip: IpAddr) -> Option<String> {
    let mut found = None;
    // SAFETY: getifaddrs allocates a list we only read and then free exactly once; every
    // pointer is checked for null before use, and sockaddrs are read by their family.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) != 0 {
            return None;
        }
        let mut cur = head;
        while !cur.is_null() && found.is_none() {
            let ifa = &*cur;
            cur = ifa.ifa_next;
            if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
                continue;
            }
            let addr = match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes())
                }
                libc::AF_INET6 => {
                    let sin6 = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    IpAddr::from(sin6.sin6_addr.s6_addr)
                }
                _ => continue,
            };
            if addr == ip {
                let name = std::ffi::CStr::from_ptr(ifa.ifa_name);
                found = Some(name.to_string_lossy().into_owned());
            }
        }
        libc::freeifaddrs(head);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_device_of_an_address() {
        assert_eq!(
            device_of("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert_eq!(device_of("203.0.113.77".parse().unwrap()), None);
    }
}
