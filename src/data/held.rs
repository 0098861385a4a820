//! A receiver's end of a connection-rate test's connections: held until their sender
//! closes them, and closed with a reset, as is every connection a receiver refuses.

use std::io;
use std::time::Duration;

use socket2::SockRef;

/// Closes an accepted connection with a reset rather than a FIN: nothing lingers in
/// TIME_WAIT on our side.
pub(super) fn reset(s: &tokio::net::TcpStream) {
    let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
}

/// Holds a connection-rate test's connection until its sender closes it (a reset or
/// a FIN; bytes would be a stranger's, read and ignored), or for `at_most`.
pub(super) async fn hold(s: tokio::net::TcpStream, at_most: Duration) {
    let closed = async {
        let mut scrap = [0u8; 64];
        loop {
            // Readiness alone can be stale: only a read that says so is an end.
            if s.readable().await.is_err() {
                return;
            }
            match s.try_read(&mut scrap) {
                // A FIN, or the reset our senders close with.
                Ok(0) => return,
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return,
                // Stray bytes, or readiness that was stale.
                Ok(_) | Err(_) => {}
            }
        }
    };
    let _ = tokio::time::timeout(at_most, closed).await;
    reset(&s);
}
