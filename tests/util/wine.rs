//! The Windows build under Wine: `ntttcp.exe` (made by `scripts/build-windows --wine`,
//! named by NTTTCP_WINDOWS_EXE) run as a process beside the Linux build, on loopback. Wine
//! keeps one prefix for the whole run, under cargo's scratch directory for tests.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use super::{Launch, Output, Proc, may_skip};

/// The .exe under test, or None (the caller skips, visibly, unless CI requires it).
pub(crate) fn exe() -> Option<PathBuf> {
    let Some(p) = std::env::var_os("NTTTCP_WINDOWS_EXE") else {
        may_skip(
            "no Windows build to run under Wine (scripts/build-windows --wine, then NTTTCP_WINDOWS_EXE)",
        );
        return None;
    };
    let p = PathBuf::from(p);
    assert!(p.is_file(), "NTTTCP_WINDOWS_EXE: no file {}", p.display());
    assert!(
        p.with_file_name("bcryptprimitives.dll").is_file(),
        "Wine 8 needs the ProcessPrng stand-in beside {} (scripts/build-windows --wine)",
        p.display()
    );
    prefix_ready(&p);
    Some(p)
}

/// `wine EXE` with Wine's own diagnostics off and the run's prefix.
pub(crate) fn wine(exe: &std::path::Path) -> Command {
    let mut cmd = Command::new("wine");
    cmd.arg(exe)
        .env("WINEDEBUG", "-all")
        .env("WINEPREFIX", prefix());
    cmd
}

fn prefix() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("wine-prefix")
}

/// The first Wine process of a run makes the prefix (seconds); later ones find it ready.
fn prefix_ready(exe: &std::path::Path) {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let o = Launch::new("wine --version", "--version")
            .binary(wine(exe))
            .spawn()
            .wait(Duration::from_secs(120));
        assert_eq!(
            o.code(),
            Some(0),
            "the .exe does not start under Wine: {o:?}"
        );
        assert!(o.stdout.starts_with("ntttcp "), "{o:?}");
    });
}

/// Starts `wine ntttcp.exe ARGS` (`@K` ports as for `spawn`). The PID held is the Wine
/// process that runs the program, so signals and the kill on drop reach it.
pub(crate) fn spawn_exe(exe: &std::path::Path, label: &str, args: &str) -> Proc {
    Launch::new(label, args).binary(wine(exe)).spawn()
}

/// Runs `wine ntttcp.exe ARGS` to completion within `limit`.
pub(crate) fn run_exe(exe: &std::path::Path, args: &str, limit: Duration) -> Output {
    spawn_exe(exe, "ntttcp.exe", args).wait(limit)
}
