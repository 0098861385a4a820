//! Several connections of one worker thread, each driven by its own loop on the thread's
//! current-thread runtime (request/response and reverse tests).

use std::future::Future;
use std::io;
use std::net::TcpStream;
use std::pin::Pin;
use std::task::Poll;

use crate::stop::Flag;

use super::worker::runtime;

/// Runs `job` on every socket at once until "stop" or the first error, and gives the
/// sockets back (for their TCP_INFO) with that error. The sockets move onto the runtime
/// and back: no descriptor is duplicated.
pub(super) fn on_runtime<J>(
    socks: Vec<TcpStream>,
    stop: &Flag,
    job: J,
) -> (Vec<TcpStream>, io::Result<()>)
where
    J: AsyncFn(&mut tokio::net::TcpStream) -> io::Result<()>,
{
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return (socks, Err(e)),
    };
    rt.block_on(async {
        let mut streams = Vec::with_capacity(socks.len());
        let mut result = Ok(());
        for s in socks {
            match s
                .set_nonblocking(true)
                .and_then(|()| tokio::net::TcpStream::from_std(s))
            {
                Ok(t) => streams.push(t),
                Err(e) => result = Err(e),
            }
        }
        if result.is_ok() {
            let loops = streams.iter_mut().map(|t| Box::pin(job(t))).collect();
            result = tokio::select! {
                _ = stop.wait() => Ok(()),
                r = first_error(loops) => r,
            };
        }
        let back = streams
            .into_iter()
            .filter_map(|t| t.into_std().ok())
            .collect();
        (back, result)
    })
}

/// Polls every loop until one fails (its error) or all have ended.
pub(super) async fn first_error<F>(loops: Vec<Pin<Box<F>>>) -> io::Result<()>
where
    F: Future<Output = io::Result<()>>,
{
    let mut loops: Vec<Option<Pin<Box<F>>>> = loops.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut running = false;
        for slot in loops.iter_mut() {
            let Some(l) = slot else { continue };
            match l.as_mut().poll(cx) {
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => *slot = None,
                Poll::Pending => running = true,
            }
        }
        if running {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    })
    .await
}
