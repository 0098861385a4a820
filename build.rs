//! Build script: the git commit, when built from a checkout, for `ntttcp --version` (a
//! build from a source archive has none and says nothing about it).

use std::process::Command;

fn main() {
    // A new commit or another branch changes these.
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty());
    if let Some(c) = commit {
        println!("cargo:rustc-env=NTTTCP_GIT_COMMIT={c}");
    }
}
