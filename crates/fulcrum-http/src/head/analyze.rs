//! The framing analysis of a head's fields (HAProxy's rules for Content-Length,
//! Transfer-Encoding, Connection, Upgrade, Expect): what a parse ends with and what every edit
//! runs on the list it would produce. Must not touch: the head's store.

use super::*;

/// What the framing analysis needs of the start line.
pub(super) struct Ctx<'a> {
    pub(super) kind: Kind,
    pub(super) version: Version,
    pub(super) target: &'a [u8],
    pub(super) form: Form,
    pub(super) status: u16,
    /// The Host values were checked against the target already (by the parser).
    pub(super) host_checked: bool,
}

pub(super) enum Flaw {
    Head(HeadError),
    ClAndTe,
}

impl From<HeadError> for Flaw {
    fn from(e: HeadError) -> Flaw {
        Flaw::Head(e)
    }
}

impl From<Flaw> for EditError {
    fn from(f: Flaw) -> EditError {
        match f {
            Flaw::Head(e) => EditError::Invalid(e),
            Flaw::ClAndTe => EditError::ContentLengthWithTransferEncoding,
        }
    }
}

/// The framing analysis of a whole field list, after the parser merged duplicate
/// Content-Lengths and removed Content-Length beside Transfer-Encoding. Edits run it on the
/// list they would produce, so an edit is refused exactly when the parser would refuse the
/// result.
pub(super) fn analyze<'a>(
    ctx: &Ctx<'_>,
    fields: impl Iterator<Item = (Special, &'a [u8])>,
    check_websocket: bool,
) -> Result<Info, Flaw> {
    let mut info = Info::default();
    let mut cl = None;
    let (mut te, mut chunked, mut last_chunked, mut other) = (false, 0, false, false);
    let (mut hosts, mut websocket, mut key, mut accept) = (0, false, false, false);
    let request = ctx.kind == Kind::Request;
    for (special, value) in fields {
        match special {
            Special::ContentLength => {
                let n = parse_decimal(value).ok_or(HeadError::BadContentLength)?;
                if cl.replace(n).is_some() {
                    return Err(HeadError::ConflictingContentLength.into());
                }
            }
            Special::TransferEncoding => {
                te = true;
                // A field without any coding is refused on its own (HAProxy would let a later
                // `chunked` field cover it), so that removing fields never leaves one behind.
                if comma_values(value).all(<[u8]>::is_empty) {
                    return Err(HeadError::BadTransferEncoding.into());
                }
                for coding in comma_values(value).filter(|c| !c.is_empty()) {
                    last_chunked = coding.eq_ignore_ascii_case(b"chunked");
                    if last_chunked {
                        chunked += 1;
                    } else {
                        other = true;
                    }
                }
            }
            Special::Host if request => {
                hosts += 1;
                if !ctx.host_checked && !target::host_matches_in(ctx.target, ctx.form, value) {
                    return Err(HeadError::BadHost.into());
                }
            }
            Special::Connection => {
                for token in comma_values(value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        info.conn_close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        info.conn_keep_alive = true;
                    } else if token.eq_ignore_ascii_case(b"upgrade") {
                        info.conn_upgrade = true;
                    }
                }
            }
            Special::Upgrade => {
                info.upgrade = true;
                websocket |= has_token(value, b"websocket");
            }
            Special::Expect => {
                info.expect_continue |= request
                    && ctx.version == Version::Http11
                    && value.eq_ignore_ascii_case(b"100-continue");
            }
            Special::WsKey => key = true,
            Special::WsAccept => accept = true,
            _ => {}
        }
    }
    if hosts > 1 {
        return Err(HeadError::DuplicateHost.into());
    }
    info.body = if te {
        if chunked > 1 || !last_chunked {
            return Err(HeadError::BadTransferEncoding.into());
        }
        if other {
            return Err(HeadError::UnsupportedTransferCoding.into());
        }
        if cl.is_some() {
            return Err(Flaw::ClAndTe);
        }
        Body::Chunked
    } else if let Some(n) = cl {
        Body::Length(n)
    } else if request {
        Body::None
    } else {
        Body::UntilClose
    };
    if check_websocket && info.conn_upgrade && websocket {
        let missing = if request { !key } else { ctx.status == 101 && !accept };
        if missing {
            return Err(HeadError::BadWebSocketHandshake.into());
        }
    }
    Ok(info)
}
