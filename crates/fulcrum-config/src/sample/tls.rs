//! The TLS fetches (`ssl_fc*`, `ssl_c_*`, `ssl_f_*`, `ssl_s_*`, `ssl_bc*`) and the server
//! connection's (`bc_*`): the model's fetch from a checked argument list.

use super::{opt_str, Arg};
use crate::model::{AddrPart, BcFetch, Fetch, HelloPart, KeyPart, TlsFetch};

/// `ssl_*` fetches.
pub(super) fn build(name: &str, args: &[Arg]) -> Fetch {
    use TlsFetch as T;
    for (prefix, wrap) in [("ssl_f_", false), ("ssl_s_", true)] {
        if let Some(field) = name.strip_prefix(prefix) {
            return match build(&format!("ssl_c_{field}"), args) {
                Fetch::Tls(inner) if wrap => Fetch::Tls(T::ServerCert(Box::new(inner))),
                Fetch::Tls(inner) => Fetch::Tls(T::Local(Box::new(inner))),
                other => other,
            };
        }
    }
    let back = name.starts_with("ssl_bc");
    let grease = args.first().is_some_and(|a| a.int() != 0);
    let hello = |part| T::Hello { part, grease };
    let secret = |label| T::Keylog(KeyPart::Secret(label));
    Fetch::Tls(match name {
        "ssl_fc" | "ssl_bc" => T::Used { back },
        "ssl_fc_has_sni" => T::HasSni,
        "ssl_fc_sni" => T::Sni,
        "ssl_fc_protocol" | "ssl_bc_protocol" => T::Protocol { back },
        "ssl_fc_cipher" | "ssl_bc_cipher" => T::Cipher { back },
        "ssl_fc_alpn" | "ssl_bc_alpn" => T::Alpn { back },
        "ssl_fc_is_resumed" | "ssl_bc_is_resumed" => T::IsResumed { back },
        "ssl_fc_use_keysize" | "ssl_fc_alg_keysize" | "ssl_bc_use_keysize"
        | "ssl_bc_alg_keysize" => T::Keysize { back },
        "ssl_fc_session_id" | "ssl_bc_session_id" => T::SessionId { back },
        "ssl_fc_err" | "ssl_c_err" | "ssl_c_ca_err" | "ssl_c_verify" | "ssl_c_ca_err_depth"
        | "ssl_bc_err" => T::Err { back, text: false },
        "ssl_fc_err_str" | "ssl_bc_err_str" => T::Err { back, text: true },
        "ssl_fc_has_early" => T::HasEarly,
        "ssl_fc_cipherlist_bin" => hello(HelloPart::Ciphers),
        "ssl_fc_cipherlist_hex" => hello(HelloPart::CiphersHex),
        "ssl_fc_cipherlist_str" => hello(HelloPart::CiphersStr),
        "ssl_fc_cipherlist_xxh" => hello(HelloPart::CiphersXxh),
        "ssl_fc_extlist_bin" => hello(HelloPart::Exts),
        "ssl_fc_eclist_bin" => hello(HelloPart::Groups),
        "ssl_fc_ecformats_bin" => hello(HelloPart::EcFormats),
        "ssl_fc_protocol_hello_id" => hello(HelloPart::Version),
        "ssl_fc_client_random" => T::Keylog(KeyPart::ClientRandom),
        "ssl_fc_server_random" => T::Keylog(KeyPart::ServerRandom),
        "ssl_fc_session_key" => T::Keylog(KeyPart::SessionKey),
        "ssl_fc_client_early_traffic_secret" => secret("CLIENT_EARLY_TRAFFIC_SECRET"),
        "ssl_fc_client_handshake_traffic_secret" => secret("CLIENT_HANDSHAKE_TRAFFIC_SECRET"),
        "ssl_fc_server_handshake_traffic_secret" => secret("SERVER_HANDSHAKE_TRAFFIC_SECRET"),
        "ssl_fc_client_traffic_secret_0" => secret("CLIENT_TRAFFIC_SECRET_0"),
        "ssl_fc_server_traffic_secret_0" => secret("SERVER_TRAFFIC_SECRET_0"),
        "ssl_fc_exporter_secret" => secret("EXPORTER_SECRET"),
        "ssl_fc_early_exporter_secret" => secret("EARLY_EXPORTER_SECRET"),
        "ssl_fc_has_crt" | "ssl_c_used" => T::HasCrt,
        "ssl_c_s_dn" | "ssl_c_i_dn" => T::Dn {
            issuer: name == "ssl_c_i_dn",
            field: opt_str(args, 0),
            occ: args.get(1).map_or(1, |a| a.int().clamp(-100, 100) as i32),
        },
        "ssl_c_serial" => T::Serial,
        "ssl_c_sha1" => T::Sha1,
        "ssl_c_der" => T::Der,
        "ssl_c_notafter" => T::NotAfter,
        "ssl_c_notbefore" => T::NotBefore,
        "ssl_c_version" => T::Version,
        "ssl_c_sig_alg" => T::SigAlg,
        "ssl_c_key_alg" => T::KeyAlg,
        _ => return Fetch::TlsOnly,
    })
}

/// `bc_*` fetches.
pub(super) fn backend(name: &str) -> Fetch {
    Fetch::Bc(match name {
        "bc_src" => BcFetch::Addr(AddrPart::Src),
        "bc_src_port" => BcFetch::Addr(AddrPart::SrcPort),
        "bc_dst" => BcFetch::Addr(AddrPart::Dst),
        "bc_dst_port" => BcFetch::Addr(AddrPart::DstPort),
        "bc_http_major" => BcFetch::HttpMajor,
        _ => BcFetch::Err { text: name == "bc_err_str" },
    })
}
