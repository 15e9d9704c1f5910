//! The messages a proxy answers with, read at start-up: `errorfile`, `errorloc`,
//! `http-error` replies and `errorfiles` sections, into the raw responses the run time sends
//! (`http_settings::messages`). A file that cannot be read is an error naming it, for `mode
//! tcp` proxies too, as HAProxy checks them. Must not touch: sockets.

use std::sync::Arc;

use fulcrum_config as cfg;

/// A `mode tcp` proxy answers no HTTP error, but HAProxy still reads its `errorfile`s and
/// refuses one it cannot open: so does the check.
pub(super) fn error_files_readable(p: &cfg::Proxy, config: &cfg::Config, errors: &mut Vec<String>) {
    for src in p.errors.values() {
        if let Err(e) = error_message(src, &config.http_errors) {
            errors.push(e);
        }
    }
}

/// The raw response an error source gives (`None`: the built-in message stays).
pub(super) fn error_message(
    src: &cfg::ErrorSource,
    sections: &[cfg::HttpErrorsSection],
) -> Result<Option<Vec<u8>>, String> {
    match src {
        cfg::ErrorSource::File { path, span } => crate::files::read(path).map(Some).map_err(|e| {
            let why = crate::sys::os_words(&e);
            format!(
                "parsing [{span}] : errorfile : error opening file '{}' : {why}.",
                path.display()
            )
        }),
        cfg::ErrorSource::Location { code, url, .. } => {
            // HAProxy's errorloc answers, byte for byte.
            let line = if *code == 303 { "303 See Other" } else { "302 Found" };
            Ok(Some(
                format!(
                    "HTTP/1.1 {line}\r\nCache-Control: no-cache\r\nContent-length: 0\r\nLocation: {url}\r\n\r\n"
                )
                .into_bytes(),
            ))
        }
        // `default-errorfiles`: HAProxy's own message, whatever a defaults section loaded.
        cfg::ErrorSource::Reply { reply, .. } if reply.body == cfg::ReplyBody::ErrorFiles => {
            Ok(Some(crate::http_settings::messages::builtin_or_generic(reply.status).to_vec()))
        }
        cfg::ErrorSource::Reply { reply, span } => match reply_message(reply, sections, span)? {
            Some(Some(raw)) => Ok(Some(raw.to_vec())),
            Some(None) => Ok(Some(fulcrum_http::reply::raw(reply.status, None, &[], b""))),
            None => static_reply(reply).map(Some).map_err(|(path, e)| {
                let why = crate::sys::os_words(&e);
                format!(
                    "parsing [{span}] : http-error : error opening file '{}' : {why}.",
                    path.display()
                )
            }),
        },
    }
}

/// A reply whose body is a whole message (`errorfile <file>`, `errorfiles <name>`): `None`
/// for other replies; `Some(None)` when the section has no message for the status.
pub(super) fn reply_message(
    r: &cfg::Reply,
    sections: &[cfg::HttpErrorsSection],
    span: &cfg::Span,
) -> Result<Option<Option<Arc<[u8]>>>, String> {
    match &r.body {
        cfg::ReplyBody::ErrorFile(path) => {
            crate::files::read(path).map(|b| Some(Some(Arc::from(b)))).map_err(|e| {
                let why = crate::sys::os_words(&e);
                format!("parsing [{span}] : error opening file '{}' : {why}.", path.display())
            })
        }
        cfg::ReplyBody::ErrorFilesOf(name) => {
            let Some(section) = sections.iter().find(|s| &s.name == name) else {
                return Err(format!("parsing [{span}] : unknown http-errors section '{name}'."));
            };
            match section.errors.get(&r.status) {
                Some(src) => Ok(Some(error_message(src, sections)?.map(Arc::from))),
                None => Ok(Some(None)),
            }
        }
        _ => Ok(None),
    }
}

/// An `http-error status` reply has log-format parts to render for each request.
pub(super) fn renders(r: &cfg::Reply) -> bool {
    let dynamic = |f: &cfg::LogFormat| f.parts.iter().any(|p| !matches!(p, cfg::LogPart::Lit(_)));
    let body = match &r.body {
        cfg::ReplyBody::LfString(f) => dynamic(f),
        cfg::ReplyBody::LfFile { .. } => true,
        _ => false,
    };
    body || r.headers.iter().any(|(_, f)| dynamic(f))
}

/// An `http-error status` reply without log-format parts, rendered once into a raw response;
/// `Err` names a `file` payload that cannot be read, and why.
fn static_reply(r: &cfg::Reply) -> Result<Vec<u8>, (&std::path::Path, std::io::Error)> {
    let body: &[u8] = match &r.body {
        cfg::ReplyBody::String(s) => s.as_bytes(),
        cfg::ReplyBody::LfString(f) => f.text.as_bytes(),
        _ => b"",
    };
    let file_body;
    let body = match &r.body {
        cfg::ReplyBody::File(p) | cfg::ReplyBody::LfFile { path: p, .. } => {
            file_body = crate::files::read(p).map_err(|e| (p.as_path(), e))?;
            &file_body[..]
        }
        _ => body,
    };
    // Header values are log-format strings; without a request to render them against, their
    // text is used as written.
    let headers: Vec<(&[u8], &[u8])> =
        r.headers.iter().map(|(n, f)| (n.as_bytes(), f.text.as_bytes())).collect();
    Ok(fulcrum_http::reply::raw(r.status, r.content_type.as_deref(), &headers, body))
}
