//! The cross-process test-port claim works for every user after any other: the lock
//! directory and a lock file made by root are usable by an ordinary user.

use std::process::Command;

use crate::util::{Ports, is_root, may_skip, port};

/// Run by the test below as a second user (ignored otherwise): claims the block it was
/// handed (`NTTTCP_TEST_BLOCK`), whose lock file root made, and says which port.
#[test]
#[ignore = "run as a second user by a_second_user_claims_ports_after_root"]
fn claim_probe() {
    let block = std::env::var("NTTTCP_TEST_BLOCK").expect("a block to claim");
    let _ports = Ports::take_block(block.parse().expect("a block index"));
    println!("claimed port {}", port(0));
}

#[test]
fn a_second_user_claims_ports_after_root() {
    if !is_root() && may_skip("claiming as a second user needs root (setpriv)") {
        return;
    }
    // Root claims first (the shared lock directory is root's), and makes the lock file
    // of a block it sets aside for the second user, one no test of this run uses.
    let _ports = Ports::take(1);
    let mine = port(0);
    let block = Ports::set_aside();
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(["--exact", "ports::claim_probe", "--ignored", "--nocapture"])
        .env("NTTTCP_TEST_BLOCK", block.to_string())
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
