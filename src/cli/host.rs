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
    if let Some(at) = cfg.start_at {
        ahead(at)?;
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

/// A `--start-at` instant must lie ahead on this host's clock, and at most a day ahead.
fn ahead(at: std::time::SystemTime) -> Result<(), UsageError> {
    let now = std::time::SystemTime::now();
    let shown = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let refuse = |why: String| {
        Err(UsageError(format!(
            "invalid value '{shown:.3}' for '--start-at': {why}"
        )))
    };
    match at.duration_since(now) {
        Err(e) => refuse(format!(
            "it is {:.1} s in the past on this host's clock",
            e.duration().as_secs_f64()
        )),
        Ok(d) if d > std::time::Duration::from_secs(86_400) => refuse(format!(
            "it is {:.0} s ahead, more than a day",
            d.as_secs_f64()
        )),
        Ok(_) => Ok(()),
    }
}
