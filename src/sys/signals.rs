//! Interruptions from outside the process: Ctrl+C, GNU `timeout`'s SIGTERM and a closing
//! terminal's SIGHUP on Linux; the console's Ctrl+C, Ctrl+Break and close on Windows.

pub(crate) use super::os::signals::on_interrupt;
