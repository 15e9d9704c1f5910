//! HTTP/1.1 message codec (skeleton; see issue 3).
