//! The cross-process test-port claim works for every user after any other: a block
//! claimed by root leaves its lock directory and files usable by an ordinary user.

use std::process::Command;

use crate::util::{Ports, is_root, may_skip, port};

/// Run by the test below as a second user (ignored otherwise): claims a block and says
/// which.
#[test]
#[ignore = "run as a second user by a_second_user_claims_ports_after_root"]
fn claim_probe() {
    let _ports = Ports::take(1);
    println!("claimed port {}", port(0));
}

#[test]
fn a_second_user_claims_ports_after_root() {
    if !is_root() && may_skip("claiming as a second user needs root (setpriv)") {
        return;
    }
    // Root claims first: the shared lock directory and this block's file are root's.
    let _ports = Ports::take(1);
    let mine = port(0);
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(["--exact", "ports::claim_probe", "--ignored", "--nocapture"])
        .output()
        .expect("setpriv");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "as uid 65534: {stdout}\n{stderr}");
    let theirs: u16 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("claimed port "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no claim in: {stdout}"));
    assert_ne!(theirs, mine, "the second user took a block of its own");
}
