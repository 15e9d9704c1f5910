//! `source` lines at run time: how a server's (or its backend's) connections are bound
//! before they connect: interface, transparent foreign address (`usesrc`), source address
//! and port range. Sockets only through the `socket2::Socket` it is handed.

use std::io;

/// `usesrc hdr_ip()` found no value to take: HAProxy's internal error.
#[derive(Debug)]
struct NoHeader;

impl std::fmt::Display for NoHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no address in the request for usesrc hdr_ip()")
    }
}

impl std::error::Error for NoHeader {}

/// Whether `e` is the refusal of a `usesrc hdr_ip()` without an address.
#[cold]
#[inline(never)]
pub fn is_no_header(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|r| r.is::<NoHeader>())
}

/// A request's header value by name and occurrence (`hdr(<name>,<occ>)`'s pick), for
/// `usesrc hdr_ip()`: the connection's caller reads its request.
pub type HeaderAt<'h> = dyn Fn(&str, i32) -> Option<&'h [u8]> + 'h;

/// The IPv4 address `usesrc hdr_ip(name,occ)` binds, read as HAProxy's `inetaddr_host_lim`
/// reads it (the dotted quad the value starts with, 0.0.0.0 when there is none); `None` with
/// occurrence 0 or when the occurrence is not there.
#[cold]
#[inline(never)]
fn header_ip(header: &HeaderAt<'_>, name: &str, occ: i32) -> Option<std::net::Ipv4Addr> {
    let v = header(name, occ).filter(|_| occ != 0)?;
    let quad = v.iter().position(|b| !(b.is_ascii_digit() || *b == b'.')).unwrap_or(v.len());
    let text = std::str::from_utf8(&v[..quad]).unwrap_or_default();
    Some(text.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED))
}

/// A `source` line ready for the sockets it binds (its port range's next port).
#[derive(Debug)]
pub struct SourceBind {
    pub cfg: fulcrum_config::source::Source,
    next: std::sync::atomic::AtomicU32,
}

impl SourceBind {
    pub fn new(cfg: fulcrum_config::source::Source) -> Self {
        Self { cfg, next: Default::default() }
    }

    /// Binds `sock` before its connect, as HAProxy's `tcp_connect_server()`: the interface,
    /// then the foreign address `usesrc` asks for (`IP_TRANSPARENT`), or the source address
    /// (a port of its range, the next one free of ten tried; without a port, the kernel
    /// picks it at connect time: `IP_BIND_ADDRESS_NO_PORT`).
    pub fn bind(
        &self,
        sock: &socket2::Socket,
        client: Option<std::net::SocketAddr>,
        header: &HeaderAt<'_>,
    ) -> io::Result<()> {
        self.bind_as(sock, (client, header), true)
    }

    /// A health check's connection: bound as a request's, without `usesrc` (HAProxy's checks
    /// have no client address to take).
    pub fn bind_check(&self, sock: &socket2::Socket) -> io::Result<()> {
        self.bind_as(sock, (None, &|_, _| None), false)
    }

    fn bind_as(
        &self,
        sock: &socket2::Socket,
        (client, header): (Option<std::net::SocketAddr>, &HeaderAt<'_>),
        transparent: bool,
    ) -> io::Result<()> {
        use fulcrum_config::source::UseSrc;
        let c = &self.cfg;
        if let Some(name) = &c.interface {
            sock.bind_device(Some(name.as_bytes()))?;
        }
        let foreign = match (&c.usesrc, client) {
            _ if !transparent => None,
            (Some(UseSrc::Addr(a)), _) => Some(*a),
            (Some(UseSrc::Client), Some(cl)) => Some(cl),
            (Some(UseSrc::ClientIp), Some(cl)) => Some(std::net::SocketAddr::new(cl.ip(), 0)),
            (Some(UseSrc::HdrIp { name, occ }), _) => match header_ip(header, name, *occ) {
                Some(ip) => Some(std::net::SocketAddr::new(ip.into(), 0)),
                None => return Err(io::Error::other(NoHeader)),
            },
            _ => None,
        };
        if let Some(a) = foreign {
            match a {
                std::net::SocketAddr::V4(_) => sock.set_ip_transparent_v4(true)?,
                std::net::SocketAddr::V6(_) => sock.set_ip_transparent_v6(true)?,
            }
            sock.set_reuse_address(true)?;
            return sock.bind(&a.into());
        }
        let Some(high) = c.port_high else {
            if c.addr.port() == 0 {
                use std::os::fd::AsRawFd;
                let _ = crate::sys::set_ip_opt(sock.as_raw_fd(), libc::IP_BIND_ADDRESS_NO_PORT, 1);
            }
            return sock.bind(&c.addr.into());
        };
        let low = c.addr.port();
        let span = u32::from(high - low) + 1;
        let mut last = io::Error::from(io::ErrorKind::AddrInUse);
        for _ in 0..10 {
            let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % span;
            let a = std::net::SocketAddr::new(c.addr.ip(), low + n as u16);
            match sock.bind(&a.into()) {
                Ok(()) => return Ok(()),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}
