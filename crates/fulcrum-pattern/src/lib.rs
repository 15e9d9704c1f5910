//! Pattern sets, maps and converters for ACLs (skeleton; see issue 3).
