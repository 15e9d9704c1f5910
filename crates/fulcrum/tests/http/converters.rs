//! Converters HAProxy 2.6 has that real configurations use, beside HAProxy on the same
//! request: `ipmask`, `ltime`/`utime`, `iif`, `ltrim`/`rtrim`, `cut_crlf`, `json`, `url_enc`,
//! `htonl`, `be2dec`/`be2hex`, `digest`, `hmac`, `nbsrv`, `srv_queue`, and the variable converters `strcmp`, `secure_memcmp`,
//! `add_item` and `unset-var`; `capture-req` and `capture-res`. Each value lands in a header of
//! the echoed request.

use crate::px::*;

/// (header, expression, value measured on HAProxy 2.6.12).
const CONVERTERS: &[(&str, &str, &str)] = &[
    ("x-m1", "req.hdr(x-ip),ipmask(24)", "10.1.2.0"),
    ("x-m2", "src,ipmask(255.255.0.0)", "127.0.0.0"),
    ("x-m3", "req.hdr(x-ip6),ipmask(24,32)", "2001:db8::"),
    ("x-m4", "req.hdr(x-ip6),ipmask(24)", ""),
    ("x-ut", "int(86400),utime(%Y-%m-%dT%H:%M:%S,3600)", "1970-01-02T01:00:00"),
    ("x-lt", "int(86400),ltime(%Y)", "1970"),
    ("x-iif", "req.hdr_cnt(x-ip),iif(yes,no)", "yes"),
    ("x-iif0", "req.hdr_cnt(x-none),iif(yes,no)", "no"),
    ("x-ltrim", "req.hdr(x-t),ltrim(x-)", "abc-x"),
    ("x-rtrim", "req.hdr(x-t),rtrim(x-)", "x-x-abc"),
    ("x-cut", "urlp(cr),url_dec,cut_crlf", "ab"),
    ("x-json", "urlp(js),url_dec,json", "a\\\"\\/\\\\\\u00c3\\u00a9\\u0001"),
    ("x-jsonu", "urlp(js),url_dec,json(utf8)", "a\\\"\\/\\\\\\u00e9\\u0001"),
    ("x-enc", "urlp(ue),url_dec,url_enc", "a%20b%2F%C3%A9~"),
    ("x-htonl", "int(16909060),htonl,hex", "01020304"),
    ("x-be2dec", "str(abcde),be2dec(:,2)", "24930:25444:101"),
    ("x-be2dect", "str(abcde),be2dec(:,2,1)", "24930:25444"),
    ("x-be2hex", "str(abcde),be2hex(:,2,1)", "6162:6364"),
    ("x-be2hex0", "str(abc),be2hex", "616263"),
    ("x-cmp", "str(abc),strcmp(txn.k)", "-1"),
    ("x-cmp0", "str(abd),strcmp(txn.k)", "0"),
    ("x-smc", "str(abd),secure_memcmp(txn.k)", "1"),
    ("x-smc0", "str(ab),secure_memcmp(txn.k)", "0"),
    ("x-add", "str(a),add_item(;,txn.k,end)", "a;abdend"),
    ("x-add0", "str(),add_item(;,txn.k)", "abd"),
    ("x-md5", "str(abc),digest(md5),hex", "900150983CD24FB0D6963F7D28E17F72"),
    (
        "x-sha256",
        "str(abc),digest(SHA256),hex",
        "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
    ),
    (
        "x-sha3",
        "str(abc),digest(sha3-256),hex",
        "3A985DA74FE225B2045C172D6BD390BD855F086E3E9D525B46BFE24511431532",
    ),
    (
        "x-hmac",
        "str(abc),hmac(sha256,a2V5),hex",
        "9C196E32DC0175F86F4B1CB89289D6619DE6BEE699E4C378E68309ED97A1A6AB",
    ),
    ("x-hmacv", "str(abc),hmac(md5,txn.b64),hex", "D2FE98063F876B03193AFB49B4979591"),
    ("x-nbsrv", "str(px),nbsrv", "1"),
    ("x-nbsrv0", "str(nope),nbsrv", ""),
    ("x-srvq", "str(px/s1),srv_queue", "0"),
    ("x-srvq1", "str(s1),srv_queue", "0"),
    ("x-srvq0", "str(px/none),srv_queue", ""),
    ("x-unset", "str(z),unset-var(txn.u)", "z"),
    ("x-after", "var(txn.u)", ""),
];

#[test]
fn converters_give_what_haproxy_gives() {
    each(|t| {
        let srv = server("s1");
        let mut lines = String::from(
            " http-request set-var(txn.k) str(abd)\n http-request set-var(txn.u) str(x)\n\
             http-request set-var(txn.b64) str(a2V5)\n",
        );
        for (h, e, _) in CONVERTERS {
            lines.push_str(&format!(" http-request set-header {h} %[{e}]\n"));
        }
        let px = t.start(&listen(&format!("{lines} server s1 {}\n", srv.addr())));
        let raw = "GET /echo?cr=ab%0D%0Acd&js=a%22%2F%5C%C3%A9%01&ue=a%20b%2F%C3%A9~ HTTP/1.1\r\n\
                   Host: t\r\nX-Ip: 10.1.2.3\r\nX-Ip6: 2001:db8::1\r\nX-T: x-x-abc-x\r\n\
                   Connection: close\r\n\r\n";
        let r = px.send(raw.as_bytes());
        assert_eq!(r.status, 200);
        let h = r.echoed();
        let mut got = Vec::new();
        for (name, _, want) in CONVERTERS {
            let v = h.header(name).unwrap_or("(none)").to_string();
            assert_eq!(v, *want, "{name}");
            got.push(v);
        }
        got
    });
}

/// A JWS compact token of `header` and `claims` signed by `sign` (the signing input's bytes).
fn token(header: &str, claims: &str, sign: impl Fn(&[u8]) -> Vec<u8>) -> String {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let input = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
    let sig = sign(input.as_bytes());
    format!("{input}.{}", b64(&sig))
}

/// A DER public key as PEM (`-----BEGIN PUBLIC KEY-----`).
fn pem(der: &[u8]) -> String {
    use base64::Engine as _;
    let b = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> =
        b.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap_or("")).collect();
    format!("-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n", lines.join("\n"))
}

/// `jwt_header_query`, `jwt_payload_query` (`json_query` on the claims, `int` too) and
/// `jwt_verify` with HS256, RS256 and ES256 tokens (keys made here, public ones in PEM files
/// the configuration names), a tampered token, an unknown key file and the algorithm read
/// from a variable, beside HAProxy.
#[test]
fn json_web_tokens_are_read_and_verified_as_haproxy_does() {
    use aws_lc_rs::encoding::AsDer;
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{self as sig, KeyPair};
    let rng = SystemRandom::new();
    let rsa = sig::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("rsa");
    let ec = sig::EcdsaKeyPair::generate(&sig::ECDSA_P256_SHA256_FIXED_SIGNING).expect("ec");
    let rsa_pem = pem(rsa.public_key().as_der().expect("der").as_ref());
    let ec_pem = pem(ec.public_key().as_der().expect("der").as_ref());
    let claims =
        r#"{"iss":"joe","exp":1300819380,"n":1.5,"admin":true,"name":"J\u0041y","euro":"\u20ac"}"#;
    let hs = token(r#"{"alg":"HS256","typ":"JWT"}"#, claims, |m| {
        let k = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, b"s3cret");
        aws_lc_rs::hmac::sign(&k, m).as_ref().to_vec()
    });
    let rs = token(r#"{"alg":"RS256"}"#, claims, |m| {
        let mut out = vec![0; rsa.public_modulus_len()];
        rsa.sign(&sig::RSA_PKCS1_SHA256, &rng, m, &mut out).expect("sign");
        out
    });
    let es =
        token(r#"{"alg":"ES256"}"#, claims, |m| ec.sign(&rng, m).expect("sign").as_ref().to_vec());
    let tampered = format!("{}x", &hs[..hs.len() - 1]);
    let headers = [
        ("x-alg", "jwt_header_query('$.alg')"),
        ("x-iss", "jwt_payload_query('$.iss')"),
        ("x-exp", "jwt_payload_query('$.exp',int)"),
        ("x-n", "jwt_payload_query('$.n')"),
        ("x-admin", "jwt_payload_query('$.admin')"),
        ("x-name", "jwt_payload_query('$.name')"),
        ("x-euro", "jwt_payload_query('$.euro')"),
        ("x-hs", "jwt_verify(HS256,s3cret)"),
        ("x-rs", "jwt_verify(RS256,{dir}/rsa.pem)"),
        ("x-es", "jwt_verify(ES256,{dir}/ec.pem)"),
        ("x-var", "jwt_verify(txn.alg,{dir}/rsa.pem)"),
        ("x-nokey", "jwt_verify(RS256,{dir}/none.pem)"),
    ];
    let mut lines = String::from(
        " http-request set-var(txn.bearer) http_auth_bearer\n\
          http-request set-var(txn.alg) var(txn.bearer),jwt_header_query('$.alg')\n",
    );
    for (h, e) in headers {
        lines.push_str(&format!(" http-request set-header {h} %[var(txn.bearer),{e}]\n"));
    }
    each(|t| {
        let srv = server("s1");
        let cfg = listen(&format!("{lines} server s1 {}\n", srv.addr()));
        let px = t.start_with(&cfg, &[("rsa.pem", &rsa_pem), ("ec.pem", &ec_pem)]);
        let mut got = Vec::new();
        for tok in [&hs, &rs, &es, &tampered] {
            let raw = format!(
                "GET /echo HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {tok}\r\nConnection: close\r\n\r\n"
            );
            let h = px.send(raw.as_bytes()).echoed();
            let row: Vec<String> =
                headers.iter().map(|(n, _)| h.header(n).unwrap_or("(none)").to_string()).collect();
            got.push(row);
        }
        let col = |name: &str| headers.iter().position(|(n, _)| *n == name).expect("header");
        let (hs_row, rs_row, es_row, bad) = (&got[0], &got[1], &got[2], &got[3]);
        assert_eq!(hs_row[col("x-alg")], "HS256");
        assert_eq!(hs_row[col("x-iss")], "joe");
        assert_eq!(hs_row[col("x-exp")], "1300819380");
        assert_eq!(hs_row[col("x-n")], "1.5");
        assert_eq!(hs_row[col("x-admin")], "1");
        assert_eq!(hs_row[col("x-name")], "JAy");
        assert_eq!(hs_row[col("x-euro")], "", "mjson reads \\u00XX escapes only");
        assert_eq!((hs_row[col("x-hs")].as_str(), bad[col("x-hs")].as_str()), ("1", "0"));
        assert_eq!(rs_row[col("x-rs")], "1");
        assert_eq!(rs_row[col("x-var")], "1", "the algorithm from a variable");
        assert_eq!(hs_row[col("x-rs")], "0", "an HS256 token checked as RS256");
        assert_eq!(rs_row[col("x-nokey")], "-5", "no such key file");
        assert_eq!(es_row[col("x-es")], "1", "ES256: the raw r||s signature of RFC 7518");
        got
    });
}

/// `capture-req(<id>)` and `capture-res(<id>)`: the sample goes into the frontend's capture
/// slot, cut to its length, and passes on whole; a slot that does not exist gives no sample.
#[test]
fn capture_converters_fill_the_frontends_slots_as_haproxy_does() {
    each(|t| {
        let srv = server("s1");
        let lines = " declare capture request len 4\n declare capture response len 6\n\
             http-request set-var(txn.pass) req.hdr(x-in),capture-req(0)\n\
             http-request set-var(txn.none) req.hdr(x-in),capture-req(1)\n\
             http-request set-header X-Cap %[capture.req.hdr(0)]\n\
             http-request set-header X-Pass %[var(txn.pass)]\n\
             http-request set-header X-None %[var(txn.none)]\n\
             http-response set-var(txn.r) res.hdr(x-out),capture-res(0)\n\
             http-response set-header X-Cap-Res %[capture.res.hdr(0)]\n\
             http-response set-header X-Res-Pass %[var(txn.r)]\n";
        let px = t.start(&listen(&format!("{lines} server s1 {}\n", srv.addr())));
        let r = px.send(
            b"GET /echo?hdr=X-Out:abcdefgh HTTP/1.1\r\nHost: t\r\nX-In: 123456\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(r.status, 200);
        let h = r.echoed();
        let got: Vec<String> = [
            h.header("x-cap"),
            h.header("x-pass"),
            h.header("x-none"),
            r.header("x-cap-res"),
            r.header("x-res-pass"),
        ]
        .iter()
        .map(|v| v.unwrap_or("(none)").to_string())
        .collect();
        assert_eq!(got, ["1234", "123456", "", "abcdef", "abcdefgh"]);
        got
    });
}
