//! Opening a control connection (the sync channel, Windows tokens, the `-sp` port
//! hand-out): from the sender's `-a` address and device, like its data connections,
//! retrying "refused" (the peer may still be setting up) until a deadline, and giving up
//! at once when interrupted.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::{TcpSocket, TcpStream};

use crate::config::Source;
use crate::stop::Flag;

/// Why no control connection was made.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The interrupt flag was set.
    Interrupted,
    /// Nothing answered before the deadline.
    NoAnswer,
    /// The connection failed otherwise.
    Io(io::Error),
}

/// How long to wait before connecting again after "refused".
const AGAIN: Duration = Duration::from_millis(100);

/// Connects to `addr` from `source`, retrying "refused" until `deadline`.
pub(crate) async fn connect(
    addr: SocketAddr,
    source: &Source,
    deadline: Instant,
    interrupt: Option<&Flag>,
) -> Result<TcpStream, Failure> {
    let interrupted = async {
        match interrupt {
            Some(f) => f.wait().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(interrupted);
    loop {
        let attempt = tokio::time::timeout_at(deadline.into(), connect_from(addr, source));
        let r = tokio::select! {
            r = attempt => r,
            _ = &mut interrupted => return Err(Failure::Interrupted),
        };
        match r {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e))
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && Instant::now() + AGAIN < deadline =>
            {
                tokio::time::sleep(AGAIN).await;
            }
            Ok(Err(e)) => return Err(Failure::Io(e)),
            Err(_) => return Err(Failure::NoAnswer),
        }
    }
}

/// One attempt, bound to the `-a` address and its device when given.
async fn connect_from(addr: SocketAddr, source: &Source) -> io::Result<TcpStream> {
    let Some(ip) = source.addr else {
        return TcpStream::connect(addr).await;
    };
    let sock = if addr.is_ipv6() {
        TcpSocket::new_v6()?
    } else {
        TcpSocket::new_v4()?
    };
    if let Some(dev) = &source.device {
        crate::sys::socket::bind_device(&sock, dev)?;
    }
    sock.bind(SocketAddr::new(ip, 0))?;
    sock.connect(addr).await
}
