//! Getting and running it: the static binary in an empty root (what a `FROM scratch`
//! image holds), and the Kubernetes manifests validated offline.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{Launch, Ports, Scratch, is_root, may_skip};

/// Runs `cmd` to completion within `limit` (killed past it), its output kept in a scratch
/// folder named after `name`; (success, stdout, stderr).
fn run_bounded(name: &str, mut cmd: Command, limit: Duration) -> (bool, String, String) {
    let dir = Scratch::new(name);
    let (out, err) = (dir.file("out"), dir.file("err"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (status.success(), dir.read("out"), dir.read("err"))
}

#[test]
fn the_static_binary_runs_in_an_empty_root() {
    if !is_root() && may_skip("the empty-root test needs root (unshare, chroot)") {
        return;
    }
    let _ports = Ports::take(1);
    // A release build of its own: the CPU-hungry part, kept away from the tests whose
    // figures need a quiet CPU.
    let built = {
        let _quiet = crate::util::exclusive();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-static");
        run_bounded(
            "build-static",
            Command::new(script),
            Duration::from_secs(20 * 60),
        )
    };
    assert!(built.0, "scripts/build-static failed: {}", built.2);
    let bin = built
        .1
        .lines()
        .last()
        .expect("the script prints the binary's path");
    // The root holds the binary, an empty /proc to mount and a hosts file: nothing else.
    let root = Scratch::new("empty-root");
    std::fs::create_dir_all(root.file("proc")).unwrap();
    std::fs::create_dir_all(root.file("etc")).unwrap();
    std::fs::write(root.file("etc/hosts"), "127.0.0.1 receiver-host\n").unwrap();
    std::fs::copy(bin, root.file("ntttcp")).unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "-p", "-f"])
        .arg(format!("--mount-proc={}", root.file("proc").display()))
        .arg("chroot")
        .arg(root.file(""))
        .arg("/ntttcp");
    let args = "--loopback -m 2,*,127.0.0.1 -p @1 -t 1 --format json";
    let o = Launch::new("static", args)
        .binary(cmd)
        .spawn()
        .wait(Duration::from_secs(30));
    assert_eq!(o.code(), Some(0), "{o:?}");
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON on stdout");
    let received = doc["reports"][1]["totals"]["bytes"].as_u64().unwrap_or(0);
    assert!(received > 1_000_000, "{doc:#}");
    assert!(
        doc["reports"][0]["cpu"]["cores"].as_u64() > Some(0),
        "{doc:#}"
    );
}

#[test]
fn cargo_install_puts_a_working_ntttcp_in_place() {
    let root = Scratch::new("cargo-install");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // A debug build of its own (quicker than release; the install step is what is tested).
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["install", "--locked", "--debug", "--path"])
        .arg(manifest)
        .arg("--root")
        .arg(root.file(""))
        .arg("--target-dir")
        .arg(Path::new(env!("CARGO_TARGET_TMPDIR")).join("install-test"));
    let built = {
        let _quiet = crate::util::exclusive();
        run_bounded("cargo-install-log", cmd, Duration::from_secs(20 * 60))
    };
    assert!(built.0, "cargo install failed: {}", built.2);
    let bin = root.file("bin/ntttcp");
    let o = Command::new(&bin)
        .arg("--version")
        .output()
        .expect("installed ntttcp");
    let version = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && version.starts_with("ntttcp "),
        "{version}"
    );
}

#[test]
fn the_kubernetes_manifests_validate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let has_tool = Command::new("kubernetes-validate")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_tool
        && may_skip("kubernetes-validate is not installed (pip install kubernetes-validate)")
    {
        return;
    }
    let mut cmd = Command::new("kubernetes-validate");
    cmd.arg("--strict").args(&files);
    let (ok, out, err) = run_bounded("validate", cmd, Duration::from_secs(120));
    assert!(ok, "{out}{err}");
    // Every resource passed: the receiver Deployment and Service, the node DaemonSet, the
    // sender Job, and the fleet's receiver StatefulSet and Indexed Job of senders.
    for kind in [
        "deployment/",
        "service/",
        "daemonset/",
        "job/",
        "statefulset/ntttcp-fleet-rx",
        "job/ntttcp-fleet-senders",
    ] {
        assert!(
            out.contains(&format!("passed for resource {kind}"))
                || err.contains(&format!("passed for resource {kind}")),
            "{kind}: {out}{err}"
        );
    }
}
