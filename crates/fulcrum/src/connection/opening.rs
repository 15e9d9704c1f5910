//! What opening a server connection may need from the client's side ([`Opening`]), built by
//! the sessions and read by the TLS settings (`tls::Sni`, PROXY v2 TLVs) and the sessions;
//! its `sni` is `tcp`'s (it needs the server).
//!
//! Must not touch: proxy logic.

use std::net::SocketAddr;

use super::Stream;

/// What opening a server connection may need from the client's side: addresses for a PROXY
/// protocol header, the client's TLS connection (`send-proxy-v2-ssl`, `sni ssl_fc_sni`), the
/// request's Host (`sni req.hdr(host)`), the stream's unique id.
#[derive(Clone, Copy, Default)]
pub struct Opening<'a> {
    pub src: Option<SocketAddr>,
    pub dst: Option<SocketAddr>,
    pub client: Option<&'a Stream>,
    /// The request (its Host is looked up only for a server whose SNI needs it).
    pub req: Option<&'a fulcrum_http::Head>,
    pub unique_id: Option<&'a str>,
    /// `option abortonclose`: a client that has shut its side gives up at the next retry.
    pub abortonclose: bool,
    /// The request is an upgrade: to a server whose WebSocket goes over HTTP/1.1 (`ws`), TLS
    /// offers ALPN without `h2`.
    pub upgrade: bool,
}
