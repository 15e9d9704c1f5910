//! `compression algo|type|offload` and `filter compression`, read as HAProxy 2.6 reads them
//! (`flt_http_comp.c`, `parse_compression_options`), with its messages.

use crate::args::Diags;
use crate::lexer::Line;
use crate::model::Proxy;

/// A compression algorithm of `compression algo` (HAProxy 2.6's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompAlgo {
    /// No transformation: `Accept-Encoding: identity` is honoured without a header change.
    Identity,
    /// zlib-wrapped deflate (RFC 1950), announced as `deflate`.
    Deflate,
    /// Raw deflate (RFC 1951), announced as `deflate` (for clients that expect it).
    RawDeflate,
    /// gzip (RFC 1952).
    Gzip,
    /// Zstandard (RFC 8878), `zstd`: a Fulcrum extension (HAProxy 2.6 does not have it).
    Zstd,
    /// Brotli (RFC 7932), `br`: a Fulcrum extension.
    Brotli,
}

impl CompAlgo {
    /// The configuration's name (`res.comp_algo` answers it).
    pub fn cfg_name(self) -> &'static str {
        match self {
            CompAlgo::Identity => "identity",
            CompAlgo::Deflate => "deflate",
            CompAlgo::RawDeflate => "raw-deflate",
            CompAlgo::Gzip => "gzip",
            CompAlgo::Zstd => "zstd",
            CompAlgo::Brotli => "br",
        }
    }

    /// Not HAProxy 2.6's: Fulcrum's own.
    pub fn is_extension(self) -> bool {
        matches!(self, CompAlgo::Zstd | CompAlgo::Brotli)
    }

    /// The name clients use in `Accept-Encoding` and `Content-Encoding`.
    pub fn ua_name(self) -> &'static str {
        match self {
            CompAlgo::Identity => "identity",
            CompAlgo::Deflate | CompAlgo::RawDeflate => "deflate",
            CompAlgo::Gzip => "gzip",
            CompAlgo::Zstd => "zstd",
            CompAlgo::Brotli => "br",
        }
    }

    fn from_cfg(name: &str) -> Option<CompAlgo> {
        use CompAlgo::*;
        [Identity, Deflate, RawDeflate, Gzip, Zstd, Brotli]
            .into_iter()
            .find(|a| a.cfg_name() == name)
    }
}

/// A proxy's `compression` lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compression {
    /// In HAProxy's list order: the last declared first (it prepends each), which decides
    /// which algorithm answers `Accept-Encoding: *`.
    pub algos: Vec<CompAlgo>,
    /// `compression type`: content-type prefixes (compared without case); empty: any type.
    pub types: Vec<String>,
    /// `compression offload`: `Accept-Encoding` is removed from requests that get compression.
    pub offload: bool,
}

/// `compression algo <a>...`, `compression type <t>...`, `compression offload`.
pub fn compression(p: &mut Proxy, in_defaults: bool, line: &Line, diags: &mut Diags) {
    let comp = p.compression.get_or_insert_with(Default::default);
    match line.arg(1) {
        "algo" => {
            if line.arg(2).is_empty() {
                // (HAProxy writes the place twice.)
                let place = format!("parsing [{}:{}]", line.span.file, line.span.line);
                return diags.alert(line, format!("{place} : 'compression' expects <algorithm>."));
            }
            for w in &line.words[2..] {
                match CompAlgo::from_cfg(w) {
                    Some(a) => {
                        if a.is_extension() {
                            let msg = format!("'compression' : '{w}' is a Fulcrum extension: HAProxy 2.6 does not know it (see docs/compat.md).");
                            diags.notice(line, msg);
                        }
                        comp.algos.insert(0, a)
                    }
                    None => {
                        let msg = format!("'compression' : '{w}' is not a supported algorithm.");
                        return diags.alert(line, msg);
                    }
                }
            }
        }
        "offload" => {
            if in_defaults {
                diags.warning(line, "'compression' : 'offload' ignored in 'defaults' section.");
            }
            comp.offload = true;
        }
        "type" => {
            if line.arg(2).is_empty() {
                return diags.alert(line, "'compression' expects <type>.");
            }
            comp.types.splice(0..0, line.words[2..].iter().rev().cloned());
        }
        _ => diags.alert(line, "'compression' expects 'algo', 'type' or 'offload'"),
    }
}

/// `filter <name> ...`: `compression` (once per proxy) and `cache <name>` (see
/// [`crate::cache`]), kept in order in `p.filters`; the other filters are not supported yet.
pub fn filter(p: &mut Proxy, line: &Line, diags: &mut Diags) {
    match line.arg(1) {
        "compression" => {
            if p.compression_filter {
                let msg =
                    format!("'filter' : '{}: Proxy supports only one compression filter'", p.name);
                return diags.alert(line, msg);
            }
            if !line.arg(2).is_empty() {
                let msg = format!("'filter compression' : unknown keyword '{}'.", line.arg(2));
                return diags.alert(line, msg);
            }
            p.compression_filter = true;
            p.filters.push(crate::cache::Filter::Compression(line.span.clone()));
        }
        "cache" => crate::cache::filter(p, line, diags),
        "bwlim-in" | "bwlim-out" => crate::filters::bwlim(p, line, diags),
        "trace" => crate::filters::trace(p, line, diags),
        "spoe" => crate::spoe::filter(p, line, diags),
        "" => diags.alert(line, "'filter' expects a filter name."),
        other => diags.alert(line, format!("'filter {other}' is not supported yet")),
    }
}

/// What a proxy copies from its `defaults`: the algorithms and types, not `offload` (as
/// HAProxy's copy of a defaults section's compression).
pub fn inherited(c: &Option<Compression>) -> Option<Compression> {
    c.as_ref().map(|c| Compression { offload: false, ..c.clone() })
}
