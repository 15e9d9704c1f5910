//! `userlist` sections at run time: users, their groups and passwords (clear, or crypt(3)
//! hashes checked with the system's library through `sys::crypt`), and the request's Basic
//! credentials (`Authorization`, base64 decoded here), for `http_auth()`, `http_auth_group()`,
//! `http_auth_user`...
//!
//! Must not touch: sessions, rules.

use std::collections::HashMap;
use std::sync::Arc;

use fulcrum_config as cfg;

/// A user: its password and the groups it belongs to (its own `groups` and the groups whose
/// `users` name it).
#[derive(Debug)]
pub struct User {
    pass: cfg::Password,
    pub groups: Vec<String>,
}

#[derive(Debug)]
pub struct Userlist {
    users: HashMap<String, User>,
}

/// The plan's userlists by name.
pub type Userlists = HashMap<String, Arc<Userlist>>;

impl Userlist {
    /// Builds a userlist; a hash crypt(3) does not know is HAProxy's error.
    pub fn build(u: &cfg::Userlist) -> Result<Userlist, String> {
        let mut users = HashMap::new();
        for x in &u.users {
            if let cfg::Password::Crypt(h) = &x.password {
                if crate::sys::crypt("", h).is_none() {
                    return Err(format!(
                        "parsing [{}]: the encrypted password used for user '{}' is not supported by crypt(3).",
                        u.span, x.name
                    ));
                }
            }
            let mut groups = x.groups.clone();
            for (g, members) in &u.groups {
                if members.contains(&x.name) && !groups.contains(g) {
                    groups.push(g.clone());
                }
            }
            users.insert(x.name.clone(), User { pass: x.password.clone(), groups });
        }
        Ok(Userlist { users })
    }

    /// The user these credentials authenticate, if any.
    pub fn check(&self, user: &[u8], pass: &[u8]) -> Option<&User> {
        let u = self.users.get(std::str::from_utf8(user).ok()?)?;
        let ok = match &u.pass {
            cfg::Password::None => false,
            cfg::Password::Clear(p) => p.as_bytes() == pass,
            cfg::Password::Crypt(h) => std::str::from_utf8(pass)
                .ok()
                .and_then(|p| crate::sys::crypt(p, h))
                .is_some_and(|c| c == *h),
        };
        ok.then_some(u)
    }
}

/// The Basic credentials of an `Authorization` header value: (user, password).
pub fn basic(authorization: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let h = authorization.trim_ascii();
    let cred = h.get(6..).filter(|_| h[..6].eq_ignore_ascii_case(b"basic "))?;
    let plain = base64(cred.trim_ascii())?;
    let colon = plain.iter().position(|&c| c == b':')?;
    Some((plain[..colon].to_vec(), plain[colon + 1..].to_vec()))
}

/// Decodes standard base64 (for `Authorization: Basic`); `None` if it is not.
pub fn base64(text: &[u8]) -> Option<Vec<u8>> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let text: Vec<u8> = text.iter().copied().take_while(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text {
        acc = (acc << 6) | u32::from(val(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(users: &[(&str, cfg::Password, &[&str])], groups: &[(&str, &[&str])]) -> Userlist {
        let span = cfg::Span { file: "t.cfg".into(), line: 1 };
        let u = cfg::Userlist {
            name: "L".into(),
            span,
            groups: groups
                .iter()
                .map(|(g, m)| (g.to_string(), m.iter().map(|s| s.to_string()).collect()))
                .collect(),
            users: users
                .iter()
                .map(|(n, p, g)| cfg::User {
                    name: n.to_string(),
                    password: p.clone(),
                    groups: g.iter().map(|s| s.to_string()).collect(),
                })
                .collect(),
        };
        Userlist::build(&u).expect("builds")
    }

    #[test]
    fn clear_and_crypt_passwords_and_groups_from_both_sides() {
        // `openssl passwd -6 -salt abcdefgh secret`
        let h = "$6$abcdefgh$ltjgWl6579NluT/Vi1nwEvcil.G5Nbc4NiXZaNGStk8PSwGfQv72N2CKPPrVACtLtip/cZ/1GM/O6IND4WQhG.";
        let l = list(
            &[
                ("tiger", cfg::Password::Crypt(h.into()), &["G2"]),
                ("scott", cfg::Password::Clear("elgato".into()), &[]),
                ("nopass", cfg::Password::None, &[]),
            ],
            &[("G1", &["tiger", "scott"])],
        );
        assert!(l.check(b"scott", b"elgato").is_some());
        assert!(l.check(b"scott", b"elgat").is_none());
        assert!(l.check(b"nopass", b"").is_none());
        if crate::sys::crypt("x", "$6$abcdefgh$").is_some() {
            let t = l.check(b"tiger", b"secret").expect("crypt matches");
            assert_eq!(t.groups, ["G2", "G1"]);
            assert!(l.check(b"tiger", b"Secret").is_none());
        }
        assert_eq!(basic(b"Basic c2NvdHQ6ZWxnYXRv"), Some((b"scott".to_vec(), b"elgato".to_vec())));
        assert_eq!(basic(b"Bearer xyz"), None);
    }
}
