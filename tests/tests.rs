//! The one integration-test binary: real processes of the built `ntttcp` on 127.0.0.1.
//! Each test takes its ports from one allocator (`util::Ports`), so tests run in parallel
//! without sharing a port, and every child process is killed by PID on drop.

mod util;

mod agreement;
mod bidir;
mod cli;
mod conformance;
mod connect_rate;
mod control;
mod daemon;
mod descriptors;
mod extensions;
mod faults;
mod files;
mod floods;
mod install;
mod loopback;
mod merge;
mod netns;
mod outputs;
mod placement;
mod ports;
mod reverse;
mod rr;
mod sockets;
mod streams;
mod two_hosts;
mod udp;
mod windows_exe;
mod windows_sync;
mod writes;
