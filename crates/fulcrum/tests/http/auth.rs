//! `userlist` sections, `http-request auth`, `http_auth()`, `http_auth_group()` and the
//! `http_auth_*` fetches, compared with HAProxy 2.6 (whose crypt(3) is the system's, as
//! Fulcrum's). A user without password never authenticates (HAProxy 2.6.12 crashes on one:
//! not compared).

use crate::px::*;

/// `Authorization: Basic` for `user:pass`.
fn basic(user: &str, pass: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let raw = format!("{user}:{pass}").into_bytes();
    let mut out = String::new();
    for c in raw.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Authorization: Basic {out}")
}

#[test]
fn http_request_auth_asks_for_credentials_until_a_user_of_the_list_gives_them() {
    let srv = server("s1");
    // `openssl passwd -6 -salt abcdefgh secret`
    let hash = "$6$abcdefgh$ltjgWl6579NluT/Vi1nwEvcil.G5Nbc4NiXZaNGStk8PSwGfQv72N2CKPPrVACtLtip/cZ/1GM/O6IND4WQhG.";
    let cfg = format!(
        "userlist L\n group admins users tiger\n group ops\n\
         user tiger password {hash}\n user scott insecure-password elgato groups ops\n\
         {DEFAULTS}frontend fe\n bind {{fe0}}\n\
         acl ok http_auth(L)\n acl admin http_auth_group(L) admins\n\
         http-request auth realm Private if {{ path_beg /private }} !ok\n\
         http-request auth if {{ path_beg /admin }} !admin\n\
         http-request set-header x-who \"%[http_auth_user] %[http_auth_type]\" if ok\n\
         default_backend be\nbackend be\n server s1 {}\n",
        srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let cases = [
            ("/private", None),
            ("/private", Some(basic("scott", "wrong"))),
            ("/private", Some(basic("scott", "elgato"))),
            ("/private", Some(basic("tiger", "secret"))),
            ("/admin", Some(basic("scott", "elgato"))),
            ("/admin", Some(basic("tiger", "secret"))),
            ("/echo", Some(basic("scott", "elgato"))),
        ];
        cases
            .iter()
            .map(|(path, h)| {
                let hs: Vec<&str> = h.iter().map(String::as_str).collect();
                let r = px.get_with(path, &hs);
                let who = (*path == "/echo").then(|| r.echoed().header("x-who").map(String::from));
                (r.status, r.header("www-authenticate").map(String::from), r.text().len(), who)
            })
            .collect::<Vec<_>>()
    });
}
