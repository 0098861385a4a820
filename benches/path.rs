//! The path a benchmark runs over: 127.0.0.1, or (`--veth`) two network namespaces
//! joined by a veth pair, and how a tool is started at either end of it.

use std::process::{Child, Command, Stdio};

/// Two network namespaces joined by a veth pair (`--veth`), removed when dropped.
pub(crate) struct Namespaces([String; 2]);

impl Namespaces {
    pub(crate) fn new() -> Result<Self, String> {
        let id = std::process::id();
        let ns = Self([format!("ntb-rx-{id}"), format!("ntb-tx-{id}")]);
        let [rx, tx] = &ns.0;
        let steps = [
            format!("netns add {rx}"),
            format!("netns add {tx}"),
            format!("link add ntb-tx netns {tx} type veth peer name ntb-rx netns {rx}"),
            format!("-n {tx} addr add 10.231.0.1/24 dev ntb-tx"),
            format!("-n {rx} addr add {VETH_RX_ADDR}/24 dev ntb-rx"),
            format!("-n {tx} link set ntb-tx up"),
            format!("-n {rx} link set ntb-rx up"),
            format!("-n {tx} link set lo up"),
            format!("-n {rx} link set lo up"),
        ];
        for step in steps {
            let ok = Command::new("ip")
                .args(step.split_whitespace())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err(format!("ip {step} failed (root and iproute2 needed)"));
            }
        }
        let _ = VETH.set((rx.clone(), tx.clone()));
        Ok(ns)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Which end of the path a process runs at.
#[derive(Clone, Copy)]
pub(crate) enum End {
    Rx,
    Tx,
}
pub(crate) use End::{Rx, Tx};

/// `--veth`: the two network namespaces joined by a veth pair, receiver end first.
pub(crate) static VETH: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();

/// The receiver's address on the path.
pub(crate) fn target() -> &'static str {
    if VETH.get().is_some() {
        VETH_RX_ADDR
    } else {
        "127.0.0.1"
    }
}

const VETH_RX_ADDR: &str = "10.231.0.2";

pub(crate) fn spawn(end: End, cmd: &str, args: &str) -> Result<Child, String> {
    let mut c = match VETH.get() {
        Some((rx, tx)) => {
            let mut c = Command::new("ip");
            let ns = match end {
                Rx => rx,
                Tx => tx,
            };
            c.args(["netns", "exec", ns, cmd]);
            c
        }
        None => Command::new(cmd),
    };
    crate::tether::tethered(&mut c)
        .args(args.split_whitespace())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{cmd}: {e}"))
}
