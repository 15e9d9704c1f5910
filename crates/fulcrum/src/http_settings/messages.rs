//! The answers Fulcrum generates itself (400, 403, 408, 502, 503, 504, ...): HAProxy's built-in
//! messages byte for byte, unless the proxy replaced them (`errorfile`, `errorfiles`,
//! `http-error`), in which case the replacement is sent as loaded at start-up.
//!
//! Must not touch: sockets. Sessions look answers up here and write them.

use std::collections::HashMap;
use std::sync::Arc;

/// HAProxy 2.6's built-in messages. 400 and 408 close the connection; the others do not.
const BUILTIN: &[(u16, &str)] = &[
    (200, "HTTP/1.1 200 OK\r\nContent-length: 58\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n"),
    (400, "HTTP/1.1 400 Bad request\r\nContent-length: 90\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n"),
    (401, "HTTP/1.1 401 Unauthorized\r\nContent-length: 112\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n"),
    (403, "HTTP/1.1 403 Forbidden\r\nContent-length: 93\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n</body></html>\n"),
    (404, "HTTP/1.1 404 Not Found\r\nContent-length: 83\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>404 Not Found</h1>\nThe resource could not be found.\n</body></html>\n"),
    (405, "HTTP/1.1 405 Method Not Allowed\r\nContent-length: 146\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>405 Method Not Allowed</h1>\nA request was made of a resource using a request method not supported by that resource\n</body></html>\n"),
    (407, "HTTP/1.1 407 Unauthorized\r\nContent-length: 112\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>407 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n"),
    (408, "HTTP/1.1 408 Request Time-out\r\nContent-length: 110\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n"),
    (410, "HTTP/1.1 410 Gone\r\nContent-length: 114\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>410 Gone</h1>\nThe resource is no longer available and will not be available again.\n</body></html>\n"),
    (413, "HTTP/1.1 413 Payload Too Large\r\nContent-length: 106\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>413 Payload Too Large</h1>\nThe request entity exceeds the maximum allowed.\n</body></html>\n"),
    (421, "HTTP/1.1 421 Misdirected Request\r\nContent-length: 104\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>421 Misdirected Request</h1>\nRequest sent to a non-authoritative server.\n</body></html>\n"),
    (422, "HTTP/1.1 422 Unprocessable Content\r\nContent-length: 116\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>422 Unprocessable Content</h1>\nThe server cannot process the contained instructions.\n</body></html>\n"),
    (425, "HTTP/1.1 425 Too Early\r\nContent-length: 80\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>425 Too Early</h1>\nYour browser sent early data.\n</body></html>\n"),
    (429, "HTTP/1.1 429 Too Many Requests\r\nContent-length: 117\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>429 Too Many Requests</h1>\nYou have sent too many requests in a given amount of time.\n</body></html>\n"),
    (500, "HTTP/1.1 500 Internal Server Error\r\nContent-length: 97\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>500 Internal Server Error</h1>\nAn internal server error occurred.\n</body></html>\n"),
    // The stray '.' is HAProxy's own (its Content-length counts it).
    (501, "HTTP/1.1 501 Not Implemented\r\nContent-length: 136\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>501 Not Implemented</h1>\n.The server does not support the functionality required to fulfill the request.\n</body></html>\n"),
    (502, "HTTP/1.1 502 Bad Gateway\r\nContent-length: 107\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>502 Bad Gateway</h1>\nThe server returned an invalid or incomplete response.\n</body></html>\n"),
    (503, "HTTP/1.1 503 Service Unavailable\r\nContent-length: 107\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n"),
    (504, "HTTP/1.1 504 Gateway Time-out\r\nContent-length: 92\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>504 Gateway Time-out</h1>\nThe server didn't respond in time.\n</body></html>\n"),
];

/// HAProxy's built-in message for `status`, if it has one.
pub fn builtin(status: u16) -> Option<&'static [u8]> {
    BUILTIN.iter().find(|(s, _)| *s == status).map(|(_, m)| m.as_bytes())
}

/// The closest built-in message: the exact one, else 500 for 5xx and 400 for anything else.
pub fn builtin_or_generic(status: u16) -> &'static [u8] {
    builtin(status)
        .or_else(|| builtin(if status >= 500 { 500 } else { 400 }))
        .unwrap_or(b"HTTP/1.1 500 Internal Server Error\r\nContent-length: 0\r\n\r\n")
}

/// A proxy's error answers: replacements loaded at start-up, HAProxy's built-ins otherwise.
/// Each replacement is a complete raw HTTP response, sent as is.
#[derive(Debug, Default, Clone)]
pub struct Messages {
    replaced: HashMap<u16, Arc<[u8]>>,
}

impl Messages {
    pub fn new(replaced: HashMap<u16, Arc<[u8]>>) -> Self {
        Messages { replaced }
    }

    pub fn is_empty(&self) -> bool {
        self.replaced.is_empty()
    }

    /// The raw answer for `status`.
    pub fn get(&self, status: u16) -> &[u8] {
        match self.replaced.get(&status) {
            Some(m) => m,
            None => builtin_or_generic(status),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_message_has_a_content_length_matching_its_body() {
        for (status, msg) in BUILTIN {
            let (head, body) = msg.split_once("\r\n\r\n").expect("head and body");
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-length: "))
                .expect("content-length")
                .parse()
                .expect("number");
            assert_eq!(len, body.len(), "status {status}");
            assert!(head.starts_with(&format!("HTTP/1.1 {status} ")));
        }
    }

    #[test]
    fn replacements_win_over_builtins_and_unknown_codes_fall_back() {
        let mut r = HashMap::new();
        r.insert(503u16, Arc::from(&b"HTTP/1.0 503 x\r\n\r\nsorry"[..]));
        let m = Messages::new(r);
        assert_eq!(m.get(503), b"HTTP/1.0 503 x\r\n\r\nsorry");
        assert!(m.get(502).starts_with(b"HTTP/1.1 502 Bad Gateway"));
        assert!(m.get(599).starts_with(b"HTTP/1.1 500 "));
        assert!(m.get(499).starts_with(b"HTTP/1.1 400 "));
    }
}
