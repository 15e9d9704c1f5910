//! The CGI parameters of a request, as HAProxy 2.6's FastCGI multiplexer sends them
//! (`fcgi_strm_send_params`, `fcgi_set_default_param`): every request header as `HTTP_<NAME>`
//! (`Content-Length` and `Content-Type` as `CONTENT_LENGTH` and `CONTENT_TYPE`, `TE` only as
//! `trailers`), then the application's `set-param` values, then the defaults no `set-param`
//! replaced: `GATEWAY_INTERFACE`, `DOCUMENT_ROOT`, `SCRIPT_NAME`, `PATH_INFO`, `REQUEST_URI`,
//! `REQUEST_METHOD`, `QUERY_STRING`, `SERVER_NAME`, `SERVER_PORT`, `SERVER_PROTOCOL`,
//! `REMOTE_ADDR`, `REMOTE_PORT`, `SCRIPT_FILENAME`, `PATH_TRANSLATED`, `CONTENT_LENGTH`,
//! `SERVER_SOFTWARE`, `HTTPS`. An empty value is left out, as HAProxy leaves it out.
//!
//! `SCRIPT_NAME` is the request's path, %-decoded, split by the application's `path-info`
//! expression when it matches (its first capture the script, its second the path info), and
//! ending with the `index` file when it ends with `/`.

use std::net::SocketAddr;
use std::ops::Range;

use crate::param;

/// What the parameters are made from.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub method: &'a [u8],
    /// The request target as received (origin or absolute form).
    pub target: &'a [u8],
    /// `HTTP/1.1`, `HTTP/2.0`...
    pub version: &'a [u8],
    pub headers: &'a [(&'a [u8], &'a [u8])],
    /// The client's address (`REMOTE_ADDR`, `REMOTE_PORT`).
    pub client: Option<SocketAddr>,
    /// The address the client reached (`SERVER_PORT`, and `SERVER_NAME` without `Host`).
    pub local: Option<SocketAddr>,
    /// The client came over TLS (`HTTPS=on`).
    pub https: bool,
    /// The body's length, for `CONTENT_LENGTH` when no `Content-Length` header gives it.
    pub body_len: u64,
}

/// Splits a decoded path into the script name and the path info (an `fcgi-app`'s
/// `path-info` regex: its first and second captures), `None` when it does not match.
pub type PathInfo<'a> = &'a dyn Fn(&[u8]) -> Option<(Range<usize>, Option<Range<usize>>)>;

/// The application's settings the parameters use.
#[derive(Clone, Copy)]
pub struct App<'a> {
    pub docroot: &'a [u8],
    pub index: Option<&'a [u8]>,
    pub path_info: Option<PathInfo<'a>>,
    /// `SERVER_SOFTWARE`.
    pub software: &'a [u8],
}

/// Why no parameters could be made (HAProxy fails the request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// No path to take the script name from (`OPTIONS *`).
    NoPath,
    /// The path has a bad %-escape.
    BadEscape,
    /// The decoded path has a NUL or LF, which a `path-info` expression must not see.
    ControlInPath,
}

/// The defaults a `set-param` of that name replaces.
const DEFAULTS: [&str; 17] = [
    "GATEWAY_INTERFACE",
    "DOCUMENT_ROOT",
    "SCRIPT_NAME",
    "PATH_INFO",
    "REQUEST_URI",
    "REQUEST_METHOD",
    "QUERY_STRING",
    "SERVER_NAME",
    "SERVER_PORT",
    "SERVER_PROTOCOL",
    "REMOTE_ADDR",
    "REMOTE_PORT",
    "SCRIPT_FILENAME",
    "PATH_TRANSLATED",
    "CONTENT_LENGTH",
    "SERVER_SOFTWARE",
    "HTTPS",
];

/// Appends the request's parameters, as name-value pairs, to `out` (a `PARAMS` stream's
/// content). `set` are the application's `set-param` results, in order.
pub fn params(
    req: &Request<'_>,
    app: &App<'_>,
    set: &[(&str, &[u8])],
    out: &mut Vec<u8>,
) -> Result<(), ParamError> {
    let mut given = [false; DEFAULTS.len()];
    let mut host: Option<&[u8]> = None;
    for &(name, value) in req.headers {
        if name.eq_ignore_ascii_case(b"content-length") {
            given[14] = true;
            param(out, b"CONTENT_LENGTH", value);
        } else if name.eq_ignore_ascii_case(b"content-type") {
            param(out, b"CONTENT_TYPE", value);
        } else {
            let mut value = value;
            if name.eq_ignore_ascii_case(b"host") {
                host = Some(value);
            } else if name.eq_ignore_ascii_case(b"te") {
                // Only `trailers` may go on, and then alone.
                let Some(at) = find(value, b"trailers") else { continue };
                if value.get(at + 8).is_some_and(|&b| b != b',') {
                    continue;
                }
                value = b"trailers";
            }
            let mut n = Vec::with_capacity(5 + name.len());
            n.extend_from_slice(b"http_");
            n.extend_from_slice(name);
            param(out, &n, value);
        }
    }
    // `set-param` values: in place of the default of the same name, else added.
    let mut over: [Option<&[u8]>; DEFAULTS.len()] = [None; DEFAULTS.len()];
    for &(name, value) in set {
        if let Some(i) = DEFAULTS.iter().position(|d| d.eq_ignore_ascii_case(name)) {
            given[i] = true;
            over[i] = Some(value);
        }
        param(out, name.as_bytes(), value);
    }
    let docroot = over[1].unwrap_or(app.docroot);
    let uri = over[4].map_or_else(|| origin(req.target), |u| u.to_vec());
    let (path, query) = match uri.iter().position(|&b| b == b'?') {
        Some(q) => (&uri[..q], &uri[q + 1..]),
        None => (&uri[..], &b""[..]),
    };
    let (script, pathinfo) = if let Some(s) = over[2] {
        (s.to_vec(), over[3].map(<[u8]>::to_vec).unwrap_or_default())
    } else {
        if path.is_empty() || !path.starts_with(b"/") {
            return Err(ParamError::NoPath);
        }
        let decoded = url_decode(path).ok_or(ParamError::BadEscape)?;
        split(&decoded, app, over[3])?
    };
    let num = |n: u16| n.to_string().into_bytes();
    let local_port = req.local.map_or(0, |a| a.port());
    let server_name = match host {
        Some(h) => h.to_vec(),
        None => req.local.map(|a| a.ip().to_string().into_bytes()).unwrap_or_default(),
    };
    let translated = if pathinfo.is_empty() { Vec::new() } else { [docroot, &pathinfo].concat() };
    let values: [Vec<u8>; DEFAULTS.len()] = [
        b"CGI/1.1".to_vec(),
        docroot.to_vec(),
        script.clone(),
        pathinfo,
        uri.clone(),
        req.method.to_vec(),
        query.to_vec(),
        server_name,
        num(local_port),
        req.version.to_vec(),
        req.client.map(|a| a.ip().to_string().into_bytes()).unwrap_or_default(),
        num(req.client.map_or(0, |a| a.port())),
        [docroot, &script].concat(),
        translated,
        req.body_len.to_string().into_bytes(),
        app.software.to_vec(),
        if req.https { b"on".to_vec() } else { Vec::new() },
    ];
    for (i, v) in values.iter().enumerate() {
        if !given[i] && !v.is_empty() {
            param(out, DEFAULTS[i].as_bytes(), v);
        }
    }
    Ok(())
}

/// The script name and path info of a decoded path.
fn split(
    decoded: &[u8],
    app: &App<'_>,
    pathinfo_set: Option<&[u8]>,
) -> Result<(Vec<u8>, Vec<u8>), ParamError> {
    let mut script = decoded.to_vec();
    let mut pathinfo = pathinfo_set.map(<[u8]>::to_vec).unwrap_or_default();
    if let Some(f) = app.path_info {
        if decoded.iter().any(|&b| b == b'\n' || b == 0) {
            return Err(ParamError::ControlInPath);
        }
        if let Some((s, p)) = f(decoded) {
            script = decoded[s].to_vec();
            if let (None, Some(p)) = (pathinfo_set, p) {
                pathinfo = decoded[p].to_vec();
            }
        }
    }
    if let (Some(index), Some(b'/')) = (app.index, script.last()) {
        script.extend_from_slice(index);
    }
    Ok((script, pathinfo))
}

/// The path and query of a target (an absolute-form one loses its scheme and authority).
fn origin(target: &[u8]) -> Vec<u8> {
    if target.starts_with(b"/") || target == b"*" {
        return target.to_vec();
    }
    let Some(sep) = find(target, b"://") else { return target.to_vec() };
    let rest = &target[sep + 3..];
    match rest.iter().position(|&b| b == b'/' || b == b'?') {
        Some(p) if rest[p] == b'/' => rest[p..].to_vec(),
        Some(p) => [b"/", &rest[p..]].concat(),
        None => b"/".to_vec(),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle))
}

/// `%XX` escapes decoded (`+` stays, as in a path); `None` for a bad escape.
fn url_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hex = |b: u8| (b as char).to_digit(16);
            let hi = hex(*s.get(i + 1)?)?;
            let lo = hex(*s.get(i + 2)?)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(out: &[u8]) -> Vec<(String, String)> {
        crate::decode_pairs(out)
            .expect("pairs")
            .into_iter()
            .map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
            .collect()
    }

    fn get<'a>(p: &'a [(String, String)], name: &str) -> Option<&'a str> {
        p.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    const APP: App<'static> = App {
        docroot: b"/var/www",
        index: Some(b"index.php"),
        path_info: None,
        software: b"Fulcrum",
    };

    fn req<'a>(target: &'a [u8], headers: &'a [(&'a [u8], &'a [u8])]) -> Request<'a> {
        Request {
            method: b"GET",
            target,
            version: b"HTTP/1.1",
            headers,
            client: Some("10.0.0.7:40000".parse().expect("addr")),
            local: Some("127.0.0.1:8080".parse().expect("addr")),
            https: false,
            body_len: 0,
        }
    }

    #[test]
    fn haproxys_parameters_for_a_get() {
        let headers: [(&[u8], &[u8]); 3] =
            [(b"Host", b"example.com"), (b"User-Agent", b"curl/8"), (b"TE", b"gzip, trailers")];
        let mut out = Vec::new();
        params(&req(b"/app/%7Euser/?a=1&b=2", &headers), &APP, &[], &mut out).expect("params");
        let p = decode(&out);
        let want = [
            ("HTTP_HOST", "example.com"),
            ("HTTP_USER_AGENT", "curl/8"),
            ("HTTP_TE", "trailers"),
            ("GATEWAY_INTERFACE", "CGI/1.1"),
            ("DOCUMENT_ROOT", "/var/www"),
            ("SCRIPT_NAME", "/app/~user/index.php"),
            ("REQUEST_URI", "/app/%7Euser/?a=1&b=2"),
            ("REQUEST_METHOD", "GET"),
            ("QUERY_STRING", "a=1&b=2"),
            ("SERVER_NAME", "example.com"),
            ("SERVER_PORT", "8080"),
            ("SERVER_PROTOCOL", "HTTP/1.1"),
            ("REMOTE_ADDR", "10.0.0.7"),
            ("REMOTE_PORT", "40000"),
            ("SCRIPT_FILENAME", "/var/www/app/~user/index.php"),
            ("CONTENT_LENGTH", "0"),
            ("SERVER_SOFTWARE", "Fulcrum"),
        ];
        let got: Vec<(&str, &str)> = p.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn path_info_set_param_and_headers_that_become_params() {
        let re = |p: &[u8]| {
            let at = p.windows(4).position(|w| w == b".php")? + 4;
            Some((0..at, (at < p.len()).then_some(at..p.len())))
        };
        let app = App { path_info: Some(&re), ..APP };
        let headers: [(&[u8], &[u8]); 3] =
            [(b"content-length", b"5"), (b"Content-Type", b"text/plain"), (b"TE", b"gzip")];
        let mut out = Vec::new();
        let r = Request {
            method: b"POST",
            https: true,
            local: None,
            ..req(b"http://h:81/x.php/extra/p", &headers)
        };
        params(&r, &app, &[("server_name", b"forced"), ("php_value", b"x=1")], &mut out)
            .expect("params");
        let p = decode(&out);
        assert_eq!(get(&p, "CONTENT_LENGTH"), Some("5"));
        assert_eq!(p.iter().filter(|(n, _)| n == "CONTENT_LENGTH").count(), 1);
        assert_eq!(get(&p, "CONTENT_TYPE"), Some("text/plain"));
        assert_eq!(get(&p, "HTTP_TE"), None, "TE without trailers is left out");
        assert_eq!(get(&p, "SCRIPT_NAME"), Some("/x.php"));
        assert_eq!(get(&p, "PATH_INFO"), Some("/extra/p"));
        assert_eq!(get(&p, "PATH_TRANSLATED"), Some("/var/www/extra/p"));
        assert_eq!(get(&p, "REQUEST_URI"), Some("/x.php/extra/p"));
        assert_eq!(get(&p, "SERVER_NAME"), Some("forced"));
        assert_eq!(p.iter().filter(|(n, _)| n == "SERVER_NAME").count(), 1);
        assert_eq!(get(&p, "PHP_VALUE"), Some("x=1"));
        assert_eq!(get(&p, "HTTPS"), Some("on"));
        assert_eq!(get(&p, "SERVER_PORT"), Some("0"));
        assert_eq!(get(&p, "QUERY_STRING"), None, "an empty value is left out");
    }

    #[test]
    fn requests_without_a_usable_path_are_refused() {
        let mut out = Vec::new();
        assert_eq!(params(&req(b"*", &[]), &APP, &[], &mut out), Err(ParamError::NoPath));
        assert_eq!(params(&req(b"/a%zz", &[]), &APP, &[], &mut out), Err(ParamError::BadEscape));
        let re = |_: &[u8]| None;
        let app = App { path_info: Some(&re), ..APP };
        assert_eq!(
            params(&req(b"/a%0a", &[]), &app, &[], &mut out),
            Err(ParamError::ControlInPath)
        );
        // A set SCRIPT_NAME needs no path.
        assert!(params(&req(b"*", &[]), &APP, &[("SCRIPT_NAME", b"/s.php")], &mut out).is_ok());
    }
}
