//! How a receiver closes a connection it refuses: with a reset.

use std::time::Duration;

use socket2::SockRef;

/// Closes an accepted connection with a reset rather than a FIN: nothing lingers in
/// TIME_WAIT on our side.
pub(super) fn with_reset(s: &tokio::net::TcpStream) {
    let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
}
