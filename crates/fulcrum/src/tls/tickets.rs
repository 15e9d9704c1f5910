//! `tls-ticket-keys <file>`: session tickets sealed with keys an operator shares between
//! processes and machines (so a client resumes wherever it lands), read as HAProxy reads the
//! file: one base64 key per line, 48 bytes (AES-128) or 80 (AES-256), at least three; the last
//! three decrypt, the penultimate encrypts, so appending a key and reloading rotates them.
//!
//! Each key is OpenSSL's layout (16-byte name, HMAC key, AES key); tickets are sealed with
//! AES-GCM under the AES key, the name in front (the HMAC key is not needed with an AEAD).
//! The tickets' content is rustls', so they resume on Fulcrum only (as HAProxy's resume on
//! OpenSSL builds only).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM, NONCE_LEN};

/// HAProxy's TLS_TICKETS_NO.
const KEYS_USED: usize = 3;

struct Key {
    name: [u8; 16],
    aead: LessSafeKey,
}

pub struct FileTicketer {
    /// The keys that decrypt (the last three of the file); `enc` indexes the encrypting one.
    keys: Vec<Key>,
    enc: usize,
    lifetime: u32,
}

impl std::fmt::Debug for FileTicketer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileTicketer").field("keys", &self.keys.len()).finish()
    }
}

/// Standard base64 (with padding), as `openssl base64` writes it.
fn base64(text: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let t = text.trim().trim_end_matches('=');
    let mut out = Vec::with_capacity(t.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in t.bytes() {
        acc = acc << 6 | val(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

impl FileTicketer {
    /// Reads `text` (the file `name`, for messages).
    pub fn parse(text: &str, name: &str, lifetime: u32) -> Result<FileTicketer, String> {
        let mut raw = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let key = base64(line).filter(|k| k.len() == 48 || k.len() == 80).ok_or_else(|| {
                format!("'{name}' line {}: a key must be 48 or 80 bytes in base64.", n + 1)
            })?;
            if raw.first().is_some_and(|f: &Vec<u8>| f.len() != key.len()) {
                return Err(format!("'{name}' line {}: keys of different lengths.", n + 1));
            }
            raw.push(key);
        }
        if raw.len() < KEYS_USED {
            return Err(format!(
                "'{name}': not enough TLS ticket keys ({} found, {KEYS_USED} needed).",
                raw.len()
            ));
        }
        let used = &raw[raw.len() - KEYS_USED..];
        let keys = used
            .iter()
            .map(|k| {
                let half = (k.len() - 16) / 2;
                let alg = if half == 16 { &AES_128_GCM } else { &AES_256_GCM };
                let mut name = [0u8; 16];
                name.copy_from_slice(&k[..16]);
                let aes = &k[16 + half..];
                let key = UnboundKey::new(alg, aes).map_err(|_| {
                    let hex: String = name.iter().map(|b| format!("{b:02x}")).collect();
                    format!("the key named {hex} is not a valid AES key")
                })?;
                Ok(Key { name, aead: LessSafeKey::new(key) })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(FileTicketer { keys, enc: KEYS_USED - 2, lifetime })
    }
}

impl rustls::server::ProducesTickets for FileTicketer {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        self.lifetime
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let key = &self.keys[self.enc];
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(16 + NONCE_LEN + plain.len() + 16);
        out.extend_from_slice(&key.name);
        out.extend_from_slice(&nonce);
        let mut body = plain.to_vec();
        key.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&key.name),
                &mut body,
            )
            .ok()?;
        out.extend_from_slice(&body);
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        if cipher.len() < 16 + NONCE_LEN + 16 {
            return None;
        }
        let (name, rest) = cipher.split_at(16);
        let key = self.keys.iter().find(|k| k.name == name)?;
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = body.to_vec();
        let plain = key.aead.open_in_place(nonce, Aad::from(&key.name), &mut body).ok()?;
        Some(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::server::ProducesTickets;

    fn file(keys: &[[u8; 48]]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        keys.iter()
            .map(|k| {
                let mut s = String::new();
                for c in k.chunks(3) {
                    let n = u32::from(c[0]) << 16 | u32::from(c[1]) << 8 | u32::from(c[2]);
                    for i in (0..4).rev() {
                        s.push(A[(n >> (6 * i) & 63) as usize] as char);
                    }
                }
                s + "\n"
            })
            .collect()
    }

    #[test]
    fn tickets_round_trip_and_rotate_as_haproxy_says() {
        let keys: Vec<[u8; 48]> = (1..=4u8).map(|i| [i; 48]).collect();
        let t = FileTicketer::parse(&file(&keys[..3]), "k", 300).expect("three keys");
        let sealed = t.encrypt(b"session state").expect("seal");
        assert_eq!(&sealed[..16], &[2u8; 16], "the penultimate key encrypts");
        assert_eq!(t.decrypt(&sealed).as_deref(), Some(&b"session state"[..]));
        // A key appended (rotation): tickets of the previous encrypting key still open.
        let t2 = FileTicketer::parse(&file(&keys), "k", 300).expect("four keys");
        assert_eq!(t2.decrypt(&sealed).as_deref(), Some(&b"session state"[..]));
        assert_eq!(&t2.encrypt(b"x").expect("seal")[..16], &[3u8; 16]);
        // Two rotations later the oldest key no longer decrypts.
        let more: Vec<[u8; 48]> = (1..=6u8).map(|i| [i; 48]).collect();
        let t3 = FileTicketer::parse(&file(&more), "k", 300).expect("six keys");
        assert_eq!(t3.decrypt(&sealed), None);
        // Tampering is refused.
        let mut bad = sealed.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(t.decrypt(&bad), None);
        assert!(FileTicketer::parse(&file(&keys[..2]), "k", 300).is_err(), "three keys needed");
        assert!(FileTicketer::parse("not base64!\n", "k", 300).is_err());
    }
}
