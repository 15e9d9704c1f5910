//! Converters HAProxy 2.6 has that real configurations use, beside HAProxy on the same
//! request: `ipmask`, `ltime`/`utime`, `iif`, `ltrim`/`rtrim`, `cut_crlf`, `json`, `url_enc`,
//! `htonl`, `be2dec`/`be2hex`, and the variable converters `strcmp`, `secure_memcmp`,
//! `add_item` and `unset-var`. Each value lands in a header of the echoed request.

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
    ("x-unset", "str(z),unset-var(txn.u)", "z"),
    ("x-after", "var(txn.u)", ""),
];

#[test]
fn converters_give_what_haproxy_gives() {
    each(|t| {
        let srv = server("s1");
        let mut lines = String::from(
            " http-request set-var(txn.k) str(abd)\n http-request set-var(txn.u) str(x)\n",
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
