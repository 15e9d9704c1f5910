//! Request-target forms (RFC 9112 section 3.2) as HAProxy 2.6 accepts them, the `path` and
//! `query` parts HAProxy's fetches return, and the Host-versus-authority comparison. Pure
//! functions over slices; must not touch the head's store.

use crate::head::Method;

/// The form of a request-target whose bytes are already known to be valid target bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `*`.
    Asterisk,
    /// Starts with `/`.
    Origin,
    /// `scheme://authority[/path][?query]`; `auth_start..auth_end` is the authority (maybe
    /// empty, as HAProxy accepts `http:///x`).
    Absolute { auth_start: usize, auth_end: usize },
    /// `host:port`, port 1 to 5 digits.
    Authority,
    /// None of the above (`abc`, `?x`, `http:/x`, `http://a?x`).
    Invalid,
}

pub(crate) fn form(t: &[u8]) -> Form {
    match t.first() {
        None => return Form::Invalid,
        Some(b'/') => return Form::Origin,
        Some(b'*') if t.len() == 1 => return Form::Asterisk,
        Some(b) if b.is_ascii_alphabetic() => {
            let scheme_len = t
                .iter()
                .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                .count();
            if t[scheme_len..].starts_with(b"://") {
                let auth_start = scheme_len + 3;
                let auth_end = t[auth_start..]
                    .iter()
                    .position(|&b| b == b'/')
                    .map_or(t.len(), |p| auth_start + p);
                // HAProxy rejects `http://a?x`: after the authority comes `/` or nothing.
                if t[auth_start..auth_end].contains(&b'?') {
                    return Form::Invalid;
                }
                return Form::Absolute { auth_start, auth_end };
            }
        }
        Some(_) => {}
    }
    if let Some(colon) = t.iter().rposition(|&b| b == b':') {
        let (host, port) = (&t[..colon], &t[colon + 1..]);
        if !host.is_empty()
            && !host.iter().any(|&b| matches!(b, b'/' | b'?' | b'@'))
            && (1..=5).contains(&port.len())
            && port.iter().all(u8::is_ascii_digit)
        {
            return Form::Authority;
        }
    }
    Form::Invalid
}

/// True if the target's form suits the method: CONNECT takes only authority-form, other
/// methods anything but authority-form.
pub(crate) fn form_fits(method: Method, f: Form) -> bool {
    match f {
        Form::Invalid => false,
        Form::Authority => method == Method::Connect,
        _ => method != Method::Connect,
    }
}

/// Where the path starts and the query begins (index of `?` or the end) in a target whose
/// form is known.
pub(crate) fn path_bounds_in(t: &[u8], form: Form) -> Option<(usize, usize)> {
    let start = match form {
        Form::Origin => 0,
        Form::Absolute { auth_end, .. } => auth_end,
        _ => return None,
    };
    let q = t[start..].iter().position(|&b| b == b'?').map_or(t.len(), |p| start + p);
    Some((start, q))
}

/// HAProxy's `path` fetch: from the first `/` after the authority to before the `?`. Empty for
/// `*`, authority-form and `http://host` (HAProxy's fetch then finds nothing).
#[cfg(test)]
pub(crate) fn path(t: &[u8]) -> &[u8] {
    path_in(t, form(t))
}

/// [`path`] for a target whose form is known.
pub(crate) fn path_in(t: &[u8], form: Form) -> &[u8] {
    match path_bounds_in(t, form) {
        Some((s, e)) => &t[s..e],
        None => b"",
    }
}

/// HAProxy's `query` fetch: everything after the first `?`.
pub(crate) fn query(t: &[u8]) -> Option<&[u8]> {
    t.iter().position(|&b| b == b'?').map(|p| &t[p + 1..])
}

/// The authority of an absolute-form target without userinfo, or the whole authority-form
/// target; `None` for other forms or an empty authority.
pub(crate) fn authority(t: &[u8]) -> Option<&[u8]> {
    authority_of(t, form(t))
}

/// [`authority`] for a target whose form is known.
pub(crate) fn authority_of(t: &[u8], form: Form) -> Option<&[u8]> {
    match form {
        Form::Absolute { auth_start, auth_end } => {
            let a = &t[auth_start..auth_end];
            let a = match a.iter().rposition(|&b| b == b'@') {
                Some(at) => &a[at + 1..],
                None => a,
            };
            (!a.is_empty()).then_some(a)
        }
        Form::Authority => Some(t),
        _ => None,
    }
}

/// Drops an empty port and the scheme's default port (`:80` for http, `:443` for https), as
/// HAProxy 2.6's URI normalisation does before it compares Host and authority.
fn without_default_port<'a>(scheme: &[u8], hp: &'a [u8]) -> &'a [u8] {
    if let Some(h) = hp.strip_suffix(b":") {
        return h;
    }
    let default: &[u8] = if scheme.eq_ignore_ascii_case(b"http") {
        b":80"
    } else if scheme.eq_ignore_ascii_case(b"https") {
        b":443"
    } else {
        return hp;
    };
    match hp.len().checked_sub(default.len()) {
        Some(cut) if hp[cut..] == *default && !hp[..cut].ends_with(b":") => &hp[..cut],
        _ => hp,
    }
}

/// A Host value with nothing in it that could make servers read another target: no blank,
/// control byte, or delimiter of the URI's other parts (`/ ? # @ \`, quotes, `<>{}|^` and
/// the backtick). `a b`, `a/b`, `a@b` are refused; odd but harmless values such as
/// `:8443example.org` pass on to the rules, as HAProxy's own tests expect.
pub(crate) fn valid_host(v: &[u8]) -> bool {
    // A `match` (a bit test), not a search of the list per byte: every request's Host is
    // checked (a search cost 80 instructions per byte).
    !v.iter().any(|&b| {
        matches!(
            b,
            0..=b' '
                | 0x7f
                | b'/'
                | b'?'
                | b'#'
                | b'@'
                | b'\\'
                | b'"'
                | b'<'
                | b'>'
                | b'{'
                | b'}'
                | b'|'
                | b'^'
                | b'`'
        )
    })
}

/// True unless the target carries an authority that differs from `host` (case-insensitive;
/// default ports ignored for absolute-form; exact for CONNECT's authority-form, as HAProxy).
#[cfg(test)]
pub(crate) fn host_matches(t: &[u8], host: &[u8]) -> bool {
    host_matches_in(t, form(t), host)
}

/// [`host_matches`] for a target whose form is known.
pub(crate) fn host_matches_in(t: &[u8], f: Form, host: &[u8]) -> bool {
    match f {
        Form::Authority => host.eq_ignore_ascii_case(t),
        Form::Absolute { auth_start, .. } => match authority_of(t, f) {
            // The same bytes stay the same once normalised (an HTTP/2 request's Host is
            // written from its authority).
            Some(a) if a == host => true,
            Some(a) => {
                let scheme = &t[..auth_start - 3];
                without_default_port(scheme, a)
                    .eq_ignore_ascii_case(without_default_port(scheme, host))
            }
            None => true,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_of_a_host_is_judged_as_the_list_says() {
        for b in 0..=255u8 {
            let refused = b <= b' ' || b == 0x7f || br#"/?#@\"<>{}|^`"#.contains(&b);
            assert_eq!(valid_host(&[b'a', b, b'z']), !refused, "{b:#x}");
        }
    }

    #[test]
    fn host_values_are_checked_for_their_syntax() {
        let good: [&[u8]; 9] =
            [b"a", b"", b"a.b-c_d~e", b"a:80", b"a:", b"[::1]", b"[::1]:443", b"x%41", b":8443x"];
        for v in good {
            assert!(valid_host(v), "{}", String::from_utf8_lossy(v));
        }
        let bad: [&[u8]; 8] = [b"a b", b"a/b", b"a@b", b"a\tb", b"a\\b", b"a?", b"a#", b"a\"b"];
        for v in bad {
            assert!(!valid_host(v), "{}", String::from_utf8_lossy(v));
        }
    }

    #[test]
    fn forms_are_recognised_as_haproxy_does() {
        assert_eq!(form(b"*"), Form::Asterisk);
        assert_eq!(form(b"/a?b"), Form::Origin);
        assert_eq!(form(b"//a/b"), Form::Origin);
        assert_eq!(form(b"http://a/x"), Form::Absolute { auth_start: 7, auth_end: 8 });
        assert_eq!(form(b"a+b://a/"), Form::Absolute { auth_start: 6, auth_end: 7 });
        assert_eq!(form(b"http:///x"), Form::Absolute { auth_start: 7, auth_end: 7 });
        assert_eq!(form(b"a:443"), Form::Authority);
        assert_eq!(form(b"[::1]:443"), Form::Authority);
        for bad in
            [&b"abc"[..], b"?x", b"http:/x", b"http://a?x", b"1abc://a/", b"a:", b"a:b", b"**"]
        {
            assert_eq!(form(bad), Form::Invalid, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn path_and_query_follow_haproxy_fetches() {
        assert_eq!(path(b"/a/b?c=d"), b"/a/b");
        assert_eq!(query(b"/a/b?c=d?e"), Some(&b"c=d?e"[..]));
        assert_eq!(path(b"http://h:80/x?y"), b"/x");
        assert_eq!(path(b"http://h"), b"");
        assert_eq!(path(b"*"), b"");
        assert_eq!(path(b"h:443"), b"");
        assert_eq!(query(b"/a"), None);
        assert_eq!(query(b"/a?"), Some(&b""[..]));
    }

    #[test]
    fn host_is_compared_with_the_authority_without_default_ports() {
        assert!(host_matches(b"http://a:80/x", b"a"));
        assert!(host_matches(b"http://A/x", b"a:80"));
        assert!(host_matches(b"https://u@a:443/", b"a"));
        assert!(!host_matches(b"http://b/x", b"a"));
        assert!(!host_matches(b"http://a:8080/", b"a"));
        assert!(host_matches(b"http:///x", b"anything"));
        assert!(host_matches(b"a:8443", b"A:8443"));
        assert!(!host_matches(b"a:8443", b"b:8443"));
        assert!(host_matches(b"/x", b"whatever"));
    }
}
