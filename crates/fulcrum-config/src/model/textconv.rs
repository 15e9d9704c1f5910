//! Converters with text or address arguments beyond the pure ones (`PureConv`, which must stay
//! `Copy`): address masks, dates, conditional strings, trimming, JSON and URL encoding,
//! big-endian renderings; and those that read or change variables (`VarConv`). Parsed by
//! `crate::sample::conv_text`; evaluated by `fulcrum::rules::convert_text`.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::VarScope;

/// A converter computed from its input and its literal arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextConv {
    /// `ipmask(<mask4>[,<mask6>])`: an IPv6 address without a `mask6` gives no sample.
    Ipmask { v4: Ipv4Addr, v6: Option<Ipv6Addr> },
    /// `ltime(<format>[,<offset>])` (`utc`: `utime`): the date in seconds through `strftime`.
    Time { utc: bool, format: String, offset: i64 },
    /// `iif(<true>,<false>)`.
    Iif { yes: String, no: String },
    /// `ltrim(<chars>)` (`left`), `rtrim(<chars>)`.
    Trim { left: bool, chars: String },
    /// `cut_crlf`: the text up to the first CR or LF.
    CutCrlf,
    /// `htonl`: the integer's low 32 bits in network order.
    Htonl,
    /// `json([<input-code>])`: escaped for a JSON string.
    Json(JsonInput),
    /// `url_enc([query])`: RFC 3986's unreserved bytes kept, the others `%XX`.
    UrlEnc,
    /// `be2dec(<separator>,<chunk_size>[,<truncate>])`.
    Be2Dec { sep: String, chunk: u8, truncate: bool },
    /// `be2hex([<separator>[,<chunk_size>[,<truncate>]]])`.
    Be2Hex { sep: String, chunk: i64, truncate: bool },
    /// `json_query(<path>[,int])`: a string, number or boolean of the JSON input.
    JsonQuery { path: String, int: bool },
    /// `digest(<algorithm>)`: the input's digest.
    Digest(DigestAlg),
    /// `jwt_header_query([<path>[,int]])` (`payload`: `jwt_payload_query`): the token's JOSE
    /// header or claims decoded, or a value of them as `json_query` finds it.
    JwtQuery { payload: bool, path: Option<String>, int: bool },
}

/// How `json` reads its input (HAProxy's `input_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonInput {
    Ascii,
    /// Invalid UTF-8 or a code point over U+FFFF gives no sample.
    Utf8,
    /// ... is skipped.
    Utf8S,
    /// Invalid ranges and bad sequences give no sample; over U+FFFF too.
    Utf8P,
    /// ... are skipped.
    Utf8PS,
}

/// A converter that reads or changes a variable, or reads the run-time state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarConv {
    /// `strcmp(<var>)`: -1, 0 or 1 as `strncmp` then the lengths say.
    Strcmp { scope: VarScope, name: String },
    /// `secure_memcmp(<var>)`: whether both byte strings are equal (in constant time).
    SecureMemcmp { scope: VarScope, name: String },
    /// `add_item(<delim>,[<var>][,<suffix>])`.
    AddItem { delim: String, var: Option<(VarScope, String)>, suffix: String },
    /// `unset-var(<var>)`: the sample passes on unchanged.
    UnsetVar { scope: VarScope, name: String },
    /// `capture-req(<id>)` / `capture-res(<id>)`: the sample goes into the frontend's capture
    /// slot `id` (cut to its length) and passes on; no sample when there is no such slot.
    Capture { response: bool, id: i64 },
    /// `jwt_verify(<alg>,<key>)`: HAProxy's verdict on the token's signature (1 valid, 0 not,
    /// negative: why it could not say).
    JwtVerify { alg: LitOrVar, key: LitOrVar },
    /// `hmac(<algorithm>,<key>)`: the key in base64, given or in a variable.
    Hmac { alg: DigestAlg, key: LitOrVar },
    /// `nbsrv`: the usable servers of the backend the input names.
    Nbsrv,
    /// `srv_queue`: the queue of the server the input names (`<backend>/<server>`).
    SrvQueue,
}

/// The message digests `digest` and `hmac` know (OpenSSL's names, any case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestAlg {
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Sha512_256,
    Sha3_256,
    Sha3_384,
    Sha3_512,
}

impl DigestAlg {
    /// The algorithm OpenSSL knows by `name` (among these).
    pub fn by_name(name: &str) -> Option<DigestAlg> {
        use DigestAlg::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "md5" => Md5,
            "sha1" => Sha1,
            "sha224" | "sha2-224" => Sha224,
            "sha256" | "sha2-256" => Sha256,
            "sha384" | "sha2-384" => Sha384,
            "sha512" | "sha2-512" => Sha512,
            "sha512-256" | "sha2-512/256" => Sha512_256,
            "sha3-256" => Sha3_256,
            "sha3-384" => Sha3_384,
            "sha3-512" => Sha3_512,
            _ => return None,
        })
    }
}

/// An argument given as a string or as a variable's name (HAProxy's `vars_check_arg()`: a
/// scoped variable name is read as a variable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LitOrVar {
    Lit(String),
    Var(VarScope, String),
}
