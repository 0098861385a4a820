//! The step after parsing: what a parsed command line asks of this host. Parsing itself
//! reads nothing; these checks look at the interfaces and addresses (a receiver listens
//! on one of its own addresses, `-a` is one of ours, `--show-nic-packets` names an
//! interface, `--congestion` an algorithm this kernel has) and fill in what the host
//! answers (the interface owning `-a`).

use std::net::IpAddr;

use crate::config::{Config, Role, UsageError};
use crate::sys::net::{device_of, is_local_address};

/// Checks `cfg` against this host and fills in the source interface.
pub(crate) fn check_on_this_host(cfg: &mut Config) -> Result<(), UsageError> {
    if cfg.role == Role::Receiver {
        for host in cfg.streams.ports.iter().filter_map(|p| p.host.as_deref()) {
            if let Ok(ip) = host.parse::<IpAddr>()
                && !is_local_address(ip)
            {
                return Err(UsageError(format!(
                    "invalid receiver address '{host}': it is not an address of this host"
                )));
            }
        }
    }
    if let Some(ip) = cfg.source.addr {
        if !is_local_address(ip) {
            return Err(UsageError(format!(
                "invalid value '{ip}' for '{}': it is not an address of this host",
                cfg.source.flag
            )));
        }
        cfg.source.device = device_of(ip);
    }
    if let Some(c) = cfg.data.sockopts.congestion {
        crate::sys::socket::congestion_available(c.as_str())
            .map_err(|why| UsageError(format!("invalid value '{c}' for '--congestion': {why}")))?;
    }
    if let Some(nic) = &cfg.show.nic
        && !std::path::Path::new("/sys/class/net").join(nic).exists()
    {
        return Err(UsageError(format!(
            "invalid value '{nic}' for '--show-nic-packets': no such network interface"
        )));
    }
    Ok(())
}
