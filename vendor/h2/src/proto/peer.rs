use crate::error::Reason;
use crate::frame::{Pseudo, StreamId};
use crate::hpack::raw::RawHead;
use crate::proto::{Error, Open};

use http::{HeaderMap, Request, Response};

use std::fmt;

/// Either a Client or a Server
pub(crate) trait Peer {
    /// Message type polled from the transport
    type Poll: fmt::Debug;
    const NAME: &'static str;

    fn r#dyn() -> Dyn;

    //fn is_server() -> bool;

    fn convert_poll_message(
        pseudo: Pseudo,
        fields: HeaderMap,
        stream_id: StreamId,
    ) -> Result<Self::Poll, Error>;

    /*
    fn is_local_init(id: StreamId) -> bool {
        assert!(!id.is_zero());
        Self::is_server() == id.is_server_initiated()
    }
    */
}

/// A dynamic representation of `Peer`.
///
/// This is used internally to avoid incurring a generic on all internal types.
#[derive(Debug, Copy, Clone, Eq, PartialEq)]
pub(crate) enum Dyn {
    Client,
    Server,
}

#[derive(Debug)]
pub enum PollMessage {
    Client(Response<()>),
    Server(Request<()>),
    /// Fulcrum: a request or final response head decoded as bytes (`raw_heads`), checked as
    /// `convert_poll_message` checks a head.
    Raw(RawHead),
}

// ===== impl Dyn =====

impl Dyn {
    pub fn is_server(&self) -> bool {
        *self == Dyn::Server
    }

    pub fn is_local_init(&self, id: StreamId) -> bool {
        assert!(!id.is_zero());
        self.is_server() == id.is_server_initiated()
    }

    pub fn convert_poll_message(
        &self,
        pseudo: Pseudo,
        fields: HeaderMap,
        stream_id: StreamId,
    ) -> Result<PollMessage, Error> {
        if self.is_server() {
            crate::server::Peer::convert_poll_message(pseudo, fields, stream_id)
                .map(PollMessage::Server)
        } else {
            crate::client::Peer::convert_poll_message(pseudo, fields, stream_id)
                .map(PollMessage::Client)
        }
    }

    /// Fulcrum: the checks `convert_poll_message` makes, on a head decoded as bytes (the
    /// request's `:authority` and `:path` are left to the user, who parses them anyway).
    pub fn check_raw(&self, raw: RawHead, stream_id: StreamId) -> Result<PollMessage, Error> {
        macro_rules! malformed {
            ($($arg:tt)*) => {{
                tracing::debug!($($arg)*);
                return Err(Error::library_reset(stream_id, Reason::PROTOCOL_ERROR));
            }}
        }
        if !self.is_server() {
            if raw.status().is_none() {
                malformed!("malformed headers: missing :status");
            }
            return Ok(PollMessage::Raw(raw));
        }
        let Some(method) = raw.method() else {
            malformed!("malformed headers: missing method")
        };
        let is_connect = method == b"CONNECT";
        let has_protocol = raw.protocol().is_some();
        if has_protocol && !is_connect {
            malformed!("malformed headers: :protocol on non-CONNECT request");
        }
        if raw.status().is_some() {
            malformed!("malformed headers: :status field on request");
        }
        match raw.scheme() {
            Some(_) if is_connect && !has_protocol => {
                malformed!("malformed headers: :scheme in CONNECT")
            }
            Some(scheme) if !valid_scheme(scheme) => {
                malformed!("malformed headers: malformed scheme")
            }
            Some(_) => {}
            None if !is_connect || has_protocol => malformed!("malformed headers: missing scheme"),
            None => {}
        }
        match raw.path() {
            Some(_) if is_connect && !has_protocol => {
                malformed!("malformed headers: :path in CONNECT")
            }
            Some(b"") => malformed!("malformed headers: missing path"),
            Some(_) => {}
            // (`convert_poll_message` refuses it too, as a URI with a scheme and no path.)
            None if !is_connect || has_protocol => malformed!("malformed headers: missing path"),
            None => {}
        }
        Ok(PollMessage::Raw(raw))
    }

    /// Returns true if the remote peer can initiate a stream with the given ID.
    pub fn ensure_can_open(&self, id: StreamId, mode: Open) -> Result<(), Error> {
        if self.is_server() {
            // Ensure that the ID is a valid client initiated ID
            if mode.is_push_promise() || !id.is_client_initiated() {
                proto_err!(conn: "cannot open stream {:?} - not client initiated", id);
                return Err(Error::library_go_away(Reason::PROTOCOL_ERROR));
            }

            Ok(())
        } else {
            // Ensure that the ID is a valid server initiated ID
            if !mode.is_push_promise() || !id.is_server_initiated() {
                proto_err!(conn: "cannot open stream {:?} - not server initiated", id);
                return Err(Error::library_go_away(Reason::PROTOCOL_ERROR));
            }

            Ok(())
        }
    }
}

/// A URI scheme as `http::uri::Scheme` takes it: letters, digits, `+`, `-`, `.`, `~`; at
/// most 64 bytes (and not empty).
fn valid_scheme(s: &[u8]) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b'~'))
}
