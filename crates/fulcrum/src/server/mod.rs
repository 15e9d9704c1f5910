//! A server of a backend at run time: where it is, its weight and state, its live connection
//! count and counters. Shared by all workers through the backend's `Arc`; only atomics change.
//!
//! Must not touch: selection (the backend and balancer do that) or sockets (the session does).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::counters::Counters;

/// Where connections to a server go, resolved at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Inet(SocketAddr),
    /// No port in the config: the port the client connected to, plus an offset.
    InetRelative {
        ip: IpAddr,
        offset: i32,
    },
    Unix(PathBuf),
}

impl Target {
    /// The address to connect to for a client that connected to `dst_port`.
    pub fn resolve(&self, dst_port: u16) -> Endpoint<'_> {
        match self {
            Target::Inet(a) => Endpoint::Inet(*a),
            Target::InetRelative { ip, offset } => {
                let port = (i32::from(dst_port) + offset).clamp(0, 65535) as u16;
                Endpoint::Inet(SocketAddr::new(*ip, port))
            }
            Target::Unix(p) => Endpoint::Unix(p),
        }
    }
}

/// A concrete address to connect to.
#[derive(Debug, Clone, Copy)]
pub enum Endpoint<'a> {
    Inet(SocketAddr),
    Unix(&'a std::path::Path),
}

#[derive(Debug)]
pub struct Server {
    pub name: String,
    pub target: Target,
    weight: AtomicU32,
    /// 0: unlimited.
    pub maxconn: u32,
    /// 0: unlimited.
    pub maxqueue: u32,
    pub backup: bool,
    /// In maintenance (`disabled`, or set so at run time).
    maint: AtomicBool,
    /// Connections currently assigned to this server (including ones still connecting).
    cur_conns: AtomicU32,
    pub counters: Counters,
    /// Idle connections to this server in the workers' pools (`pool-max-conn` caps them).
    pub idle_conns: AtomicU32,
    /// `pool-max-conn`: -1 unlimited, 0 no pooling.
    pub pool_max_conn: i32,
    /// `cookie <value>`: the persistence cookie value naming this server.
    pub cookie: Option<String>,
}

impl Server {
    pub fn new(name: String, target: Target, weight: u32, maxconn: u32, maxqueue: u32) -> Self {
        Self {
            name,
            target,
            weight: AtomicU32::new(weight),
            maxconn,
            maxqueue,
            backup: false,
            maint: AtomicBool::new(false),
            cur_conns: AtomicU32::new(0),
            counters: Counters::default(),
            idle_conns: AtomicU32::new(0),
            pool_max_conn: -1,
            cookie: None,
        }
    }

    pub fn weight(&self) -> u32 {
        self.weight.load(Ordering::Relaxed)
    }
    pub(crate) fn set_weight_raw(&self, w: u32) {
        self.weight.store(w, Ordering::Relaxed);
    }
    pub fn in_maintenance(&self) -> bool {
        self.maint.load(Ordering::Relaxed)
    }
    pub(crate) fn set_maintenance_raw(&self, on: bool) {
        self.maint.store(on, Ordering::Relaxed);
    }
    pub fn cur_conns(&self) -> u32 {
        self.cur_conns.load(Ordering::Relaxed)
    }
    /// Up and not in maintenance (health checks will refine this).
    pub fn is_up(&self) -> bool {
        !self.in_maintenance()
    }
    pub fn has_free_slot(&self) -> bool {
        self.maxconn == 0 || self.cur_conns() < self.maxconn
    }

    /// Takes a connection slot if the server's `maxconn` allows.
    pub(crate) fn try_take_slot(&self) -> bool {
        if self.maxconn == 0 {
            self.cur_conns.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        self.cur_conns
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                (c < self.maxconn).then_some(c + 1)
            })
            .is_ok()
    }

    pub(crate) fn give_back_slot(&self) {
        self.cur_conns.fetch_sub(1, Ordering::SeqCst);
    }
}
