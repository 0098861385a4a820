//! Windows NTttcp's own coordination, used for Windows-dialect
//! lines without `-ns`:
//!
//! * **Token exchange.** Once a thread's data connection exists, each side opens (sender)
//!   or accepts (receiver) a TCP connection on that thread's data port + 1000, sends one
//!   byte `X`, reads one byte and closes. A side starts its clock when every thread has
//!   exchanged its token. There is no duration negotiation: each side times itself.
//! * **Port hand-out (`-sp`).** The receiver listens on the base port and answers each
//!   sender thread's connection with a 4-byte native-endian (little-endian on x86)
//!   integer: its data port, base+1, base+2, … in the order the connections arrive.
//!
//! Every read, write and connect here is bounded by the caller's deadline.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::connect::Failure;
use crate::config::Source;
use tokio::time::timeout;

/// The one-byte token both sides send.
pub(crate) const TOKEN: u8 = b'X';
/// Token port = data port + this.
pub(crate) const TOKEN_PORT_OFFSET: u16 = 1000;

/// Connects to `addr` for the token exchange or the port hand-out.
async fn connect_retry(addr: SocketAddr, deadline: Instant, source: &Source) -> Result<TcpStream> {
    match super::connect::connect(addr, source, deadline, None).await {
        Ok(s) => Ok(s),
        Err(Failure::Io(e)) => Err(e).with_context(|| format!("connect to {addr}")),
        Err(Failure::NoAnswer | Failure::Interrupted) => {
            bail!("connect to {addr}: no answer before the deadline")
        }
    }
}

/// Sender side of one thread's token exchange on `addr` (its data port + 1000).
pub(crate) async fn exchange_as_sender(
    addr: SocketAddr,
    deadline: Instant,
    source: &Source,
) -> Result<()> {
    let mut s = connect_retry(addr, deadline, source).await?;
    swap_tokens(&mut s, deadline)
        .await
        .with_context(|| format!("sync token exchange with {addr}"))
}

/// Receiver side: accepts one connection on `listener` and swaps tokens, waiting at most
/// `per_peer` for the peer's byte once connected.
pub(crate) async fn exchange_as_receiver(listener: &TcpListener, per_peer: Duration) -> Result<()> {
    let (mut s, peer) = listener.accept().await.context("accept a sync token")?;
    swap_tokens(&mut s, Instant::now() + per_peer)
        .await
        .with_context(|| format!("sync token exchange with {peer}"))
}

/// Sends our token and reads the peer's, both by `deadline`, then closes our side.
pub(crate) async fn swap_tokens<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    deadline: Instant,
) -> Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    timeout(left, s.write_all(&[TOKEN]))
        .await
        .context("peer did not take the token in time")??;
    let mut b = [0u8; 1];
    let left = deadline.saturating_duration_since(Instant::now());
    timeout(left, s.read_exact(&mut b))
        .await
        .context("no token from the peer in time")??;
    let _ = s.shutdown().await;
    Ok(())
}

/// Sender side of `-sp`: asks the receiver at `base` for a data port.
pub(crate) async fn request_port(
    base: SocketAddr,
    deadline: Instant,
    source: &Source,
) -> Result<u16> {
    let mut s = connect_retry(base, deadline, source).await?;
    read_port(&mut s, deadline, base).await
}

/// Reads the data port the receiver at `base` hands out, by `deadline`.
pub(crate) async fn read_port<S: AsyncRead + Unpin>(
    s: &mut S,
    deadline: Instant,
    base: SocketAddr,
) -> Result<u16> {
    let mut b = [0u8; 4];
    let left = deadline.saturating_duration_since(Instant::now());
    timeout(left, s.read_exact(&mut b))
        .await
        .with_context(|| format!("no data port from {base} in time"))??;
    let port = u32::from_le_bytes(b);
    match u16::try_from(port) {
        Ok(p) if p > 0 => Ok(p),
        _ => bail!("receiver {base} handed out an invalid data port {port}"),
    }
}

/// Receiver side of `-sp`: hands out `base+1 … base+count` in turn, forever.
pub(crate) async fn serve_ports(listener: TcpListener, base: u16, count: u16, per_peer: Duration) {
    let mut next = 0u16;
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let port = u32::from(base) + 1 + u32::from(next);
        next = (next + 1) % count.max(1);
        let _ = timeout(per_peer, s.write_all(&port.to_le_bytes())).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_ports_over_real_sockets() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let source = crate::config::Source::default();
        rt.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(5);
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let (a, b) = tokio::join!(
                exchange_as_receiver(&l, Duration::from_secs(5)),
                exchange_as_sender(addr, deadline, &source)
            );
            a.unwrap();
            b.unwrap();

            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = l.local_addr().unwrap();
            let server = tokio::spawn(serve_ports(l, 7000, 2, Duration::from_secs(1)));
            let mut got = Vec::new();
            for _ in 0..3 {
                got.push(request_port(base, deadline, &source).await.unwrap());
            }
            assert_eq!(got, [7001, 7002, 7001]);
            server.abort();

            // A peer that connects and never answers runs into the deadline.
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let _held = tokio::spawn(async move {
                let (_s, _) = l.accept().await.unwrap();
                tokio::time::sleep(Duration::from_secs(10)).await;
            });
            let t = Instant::now();
            let e = exchange_as_sender(addr, Instant::now() + Duration::from_millis(300), &source)
                .await
                .unwrap_err();
            assert!(format!("{e:#}").contains("no token"), "{e:#}");
            assert!(t.elapsed() < Duration::from_secs(2));
        });
    }
}
