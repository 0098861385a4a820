//! One way to start the binary under test: `Launch::new(label, args)`, what it runs
//! under (a descriptor limit, a shell step, a wrapper, a network namespace, another
//! build of ntttcp), then `spawn`. `@K` in the arguments names port K of the test's block.

use std::ffi::OsString;
use std::process::Command;

use super::{Proc, bin, start_reading};

/// How one `ntttcp` process is started.
pub(crate) struct Launch {
    label: String,
    args: String,
    /// Programs that run it, outermost first (`timeout 2`, `ip netns exec NS`); each
    /// execs the next, and the PID held is the outermost's.
    wrappers: Vec<Vec<OsString>>,
    /// A shell step just before it (limits, redirections); the shell execs ntttcp.
    setup: Option<String>,
    /// Another ntttcp than the one cargo built (the static build, the .exe under Wine).
    binary: Option<Command>,
    /// Whether its stdout is read as it is written (else only on `Proc::read_stdout`).
    read_stdout: bool,
}

impl Launch {
    /// `ntttcp ARGS`, the binary cargo built, its output read as it comes.
    pub(crate) fn new(label: &str, args: &str) -> Self {
        Self {
            label: label.into(),
            args: args.into(),
            wrappers: Vec::new(),
            setup: None,
            binary: None,
            read_stdout: true,
        }
    }

    /// With RLIMIT_NOFILE (soft and hard) at `n`.
    pub(crate) fn nofile(self, n: u64) -> Self {
        self.after(&format!("ulimit -n {n}"))
    }

    /// After the shell command `setup` (`ulimit -v 800000`, `exec >/dev/full`).
    pub(crate) fn after(mut self, setup: &str) -> Self {
        self.setup = Some(match self.setup.take() {
            Some(before) => format!("{before} && {setup}"),
            None => setup.into(),
        });
        self
    }

    /// Under `wrapper` (`["timeout", "2"]`); the PID held is the wrapper's.
    pub(crate) fn wrapped(mut self, wrapper: &[&str]) -> Self {
        self.wrappers
            .push(wrapper.iter().map(OsString::from).collect());
        self
    }

    /// Inside network namespace `ns` (`ip netns exec` execs the binary, so the PID held
    /// is ntttcp's own).
    pub(crate) fn in_netns(self, ns: &str) -> Self {
        self.wrapped(&["ip", "netns", "exec", ns])
    }

    /// With nobody reading its stdout until `Proc::read_stdout`: once the pipe is full,
    /// the process blocks writing to it.
    pub(crate) fn unread(mut self) -> Self {
        self.read_stdout = false;
        self
    }

    /// Runs `binary` (a command that is ntttcp, its own arguments and environment
    /// included) instead of the binary cargo built.
    pub(crate) fn binary(mut self, binary: Command) -> Self {
        self.binary = Some(binary);
        self
    }

    /// Starts it.
    pub(crate) fn spawn(self) -> Proc {
        let (program, mut words, envs) = match &self.binary {
            Some(b) => (
                b.get_program().to_owned(),
                b.get_args().map(ToOwned::to_owned).collect::<Vec<_>>(),
                b.get_envs()
                    .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                    .collect::<Vec<_>>(),
            ),
            None => (OsString::from(bin()), Vec::new(), Vec::new()),
        };
        words.insert(0, program);
        if let Some(setup) = &self.setup {
            let shell = format!("{setup} && exec \"$0\" \"$@\"");
            words.splice(0..0, ["sh".into(), "-c".into(), shell.into()]);
        }
        for wrapper in self.wrappers.iter().rev() {
            words.splice(0..0, wrapper.iter().cloned());
        }
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]).envs(envs);
        start_reading(cmd, &self.label, &self.args, self.read_stdout)
    }
}
