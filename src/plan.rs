//! What one side runs, resolved once: the parsed `Config` and what the host and the path
//! decided before the first data socket (where the receivers are, whether `-Z` pays,
//! TCP_NOTSENT_LOWAT, the UDP datagram size, the ports a Windows receiver handed out).
//!
//! A role builds its `RunPlan` once and everything after reads it: the workers' orders,
//! the report's parameters. Nothing changes a plan or the `Config` under it.

use std::net::SocketAddr;

use crate::config::{Config, Lowat, SockOpts, Workload};

/// One side's resolved run.
#[derive(Debug, Clone)]
pub(crate) struct RunPlan<'a> {
    /// The configuration as parsed.
    pub cfg: &'a Config,
    /// Sender: every receiver port's address, resolved (and handed out by a Windows
    /// receiver with `-sp`); empty on a receiver.
    pub targets: Vec<SocketAddr>,
    /// What the data connections carry, as resolved for this side.
    pub traffic: Traffic,
}

/// What the data connections carry, one typed part per workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Traffic {
    /// TCP bulk data: a plain stream, `-R` or `--bidir` (`workload` says which).
    Bulk {
        /// `Stream`, `Reverse` or `Bidir`.
        workload: Workload,
        /// How this side writes.
        send: BulkSend,
    },
    /// UDP datagrams.
    Datagrams(Datagrams),
    /// `--rr SIZE`: one request of `size` bytes at a time per connection, echoed back.
    RequestResponse {
        /// Bytes per request and per response.
        size: usize,
    },
    /// `--connect-rate`: connections opened and closed; no data.
    ConnectRate,
}

/// How a side writes TCP bulk data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BulkSend {
    /// Bytes per write.
    pub size: usize,
    /// `-Z` in effect: sendfile() from an in-memory file (never towards this host's own
    /// addresses unless `--sendfile-always`).
    pub sendfile: bool,
    /// TCP_NOTSENT_LOWAT of the sender's connections.
    pub notsent_lowat: Lowat,
}

/// How a sender writes UDP datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Datagrams {
    /// Bytes per datagram (without `-b`, the largest the path carries unfragmented).
    pub size: usize,
    /// Datagrams per send: more than one with segmentation offload (GSO).
    pub per_send: usize,
}

impl<'a> RunPlan<'a> {
    /// The plan of a side that resolves nothing beyond its configuration (a receiver:
    /// its senders' headers tell it the rest per connection).
    pub(crate) fn as_configured(cfg: &'a Config) -> Self {
        Self {
            cfg,
            targets: Vec::new(),
            traffic: Traffic::configured(cfg),
        }
    }

    /// What the connections carry.
    pub(crate) fn workload(&self) -> Workload {
        match self.traffic {
            Traffic::Bulk { workload, .. } => workload,
            Traffic::Datagrams(_) => Workload::Stream,
            Traffic::RequestResponse { size } => Workload::RequestResponse { size },
            Traffic::ConnectRate => Workload::ConnectRate,
        }
    }

    /// Bytes per send() call, the sender's buffer length in the reports (`-b`; for
    /// UDP the datagram size in use).
    pub(crate) fn send_size(&self) -> usize {
        match self.traffic {
            Traffic::Bulk { send, .. } => send.size,
            Traffic::Datagrams(d) => d.size,
            Traffic::RequestResponse { .. } | Traffic::ConnectRate => self.cfg.data.send_size,
        }
    }

    /// Bytes a sender worker writes at a time: a request for `--rr`, else a send.
    pub(crate) fn write_size(&self) -> usize {
        match self.traffic {
            Traffic::RequestResponse { size } => size,
            _ => self.send_size(),
        }
    }

    /// Whether this side sends with sendfile() (`-Z` in effect).
    pub(crate) fn sendfile(&self) -> bool {
        matches!(self.traffic, Traffic::Bulk { send, .. } if send.sendfile)
    }

    /// UDP datagrams per send (1 for TCP).
    pub(crate) fn datagrams_per_send(&self) -> usize {
        match self.traffic {
            Traffic::Datagrams(d) => d.per_send,
            _ => 1,
        }
    }

    /// The socket options every data connection gets: the configuration's, with the
    /// TCP_NOTSENT_LOWAT this plan resolved.
    pub(crate) fn sockopts(&self) -> SockOpts {
        match self.traffic {
            Traffic::Bulk { send, .. } => SockOpts {
                notsent_lowat: send.notsent_lowat,
                ..self.cfg.data.sockopts
            },
            _ => self.cfg.data.sockopts,
        }
    }
}

impl Traffic {
    /// The traffic `cfg` asks for, before the host and the path have had a say.
    pub(crate) fn configured(cfg: &Config) -> Self {
        let data = &cfg.data;
        if data.protocol == crate::config::Protocol::Udp {
            return Self::Datagrams(Datagrams {
                size: data.send_size,
                per_send: 1,
            });
        }
        match data.workload {
            Workload::RequestResponse { size } => Self::RequestResponse { size },
            Workload::ConnectRate => Self::ConnectRate,
            workload @ (Workload::Stream | Workload::Reverse | Workload::Bidir) => Self::Bulk {
                workload,
                send: BulkSend {
                    size: data.send_size,
                    sendfile: data.zero_copy.sendfile,
                    notsent_lowat: data.sockopts.notsent_lowat,
                },
            },
        }
    }
}
