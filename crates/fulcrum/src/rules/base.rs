//! The parts of a fetch context that stay the same while a list of rules runs ([`Base`]),
//! and the context each rule is judged in, made from them.
//!
//! Must not touch: what the rules do.

use fulcrum_http::Head;

use super::sample::{Ctx, ProcVars, Vars};
use super::view;

/// The parts of a fetch context that do not change while rules run.
pub struct Base<'a> {
    pub src: Option<std::net::SocketAddr>,
    pub dst: Option<std::net::SocketAddr>,
    pub proc_vars: &'a ProcVars,
    pub frontend: &'a str,
    pub fe: Option<&'a dyn view::FrontendView>,
    pub bind_no: u16,
    pub backend: Option<&'a dyn view::BackendView>,
    pub server: Option<&'a str>,
    pub backends: &'a dyn view::Backends,
    /// Body bytes already received: the request's, or the response's in response rules.
    pub body: &'a [u8],
    /// `body` is still chunk-framed (see `Ctx::body_chunked`).
    pub body_chunked: bool,
    /// `tune.bufsize`: a header edit that would not fit in the buffer with the body data there
    /// (`data_htx`) fails, as in HAProxy (see [`room`]).
    pub max_head: usize,
    /// What the message's body data takes in the buffer, as HAProxy counts it
    /// ([`room::data_len`]).
    pub data_htx: usize,
    /// The client connection (`ssl_fc*`, `ssl_c_*`).
    pub client: Option<&'a crate::connection::Stream>,
    /// The client connection's TLS as `fulcrum explain` is told it (no `client` then).
    pub told_tls: Option<&'a crate::tls::facts::Told<'a>>,
    /// The request came over HTTP/2 (`req.ver`, `%HV`).
    pub h2: bool,
    /// Its PROXY protocol header (`fc_pp_*`).
    pub pp: Option<&'a crate::connection::proxy::Header>,
    /// The server connection, in response rules (`ssl_bc*`).
    pub server_stream: Option<crate::tls::facts::ServerSide<'a>>,
    /// The response's compression, once decided (`res.comp`).
    pub comp: Option<fulcrum_config::compression::CompAlgo>,
}

impl<'a> Base<'a> {
    /// A context over `head`: the request when `req` is `None`, else the response to `req`.
    pub fn ctx<'c>(&'c self, head: &'c Head, req: Option<&'c Head>, vars: &'c Vars) -> Ctx<'c> {
        let (req, resp) = match req {
            None => (Some(head), None),
            Some(r) => (Some(r), Some(head)),
        };
        let (src, dst) = vars.addrs.as_ref().map_or((self.src, self.dst), |a| (a.src, a.dst));
        Ctx {
            src,
            dst,
            req,
            resp,
            vars,
            proc_vars: self.proc_vars,
            frontend: self.frontend,
            fe: self.fe,
            bind_no: self.bind_no,
            backend: self.backend,
            server: self.server,
            backends: self.backends,
            body: self.body,
            body_chunked: self.body_chunked,
            client: self.client,
            told_tls: self.told_tls,
            h2: self.h2,
            payload: &[],
            pp: self.pp,
            server_stream: self.server_stream,
            more: None,
            comp: self.comp,
            raw_pending: false,
        }
    }
}
