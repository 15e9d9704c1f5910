//! `tune.ssl.keylog on`: the secrets of a client connection's handshake, as the
//! `ssl_fc_*_secret`, `ssl_fc_client_random` and `ssl_fc_session_key` fetches give them (what an
//! NSS key log file needs to decipher the traffic). rustls hands each secret to the
//! configuration's [`Collector`] while it processes the handshake, on the worker's thread;
//! `connection::tls` takes them for its connection right after each step ([`take_into`]).
//!
//! Must not touch: the handshake itself, the connection's I/O.

/// What a connection's handshake logged.
#[derive(Debug, Default)]
pub struct Keys {
    pub client_random: Option<[u8; 32]>,
    /// TLS 1.2's master secret (the `CLIENT_RANDOM` line's).
    pub master: Option<Vec<u8>>,
    /// TLS 1.3's secrets by label, in lower-case hexadecimal as OpenSSL writes them.
    secrets: Vec<(&'static str, String)>,
}

impl Keys {
    /// The secret logged under `label` (`CLIENT_TRAFFIC_SECRET_0`...).
    pub fn secret(&self, label: &str) -> Option<&str> {
        self.secrets.iter().find(|(l, _)| *l == label).map(|(_, s)| s.as_str())
    }
}

/// The NSS key log labels HAProxy 2.6 keeps.
const LABELS: &[&str] = &[
    "CLIENT_EARLY_TRAFFIC_SECRET",
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
    "EXPORTER_SECRET",
    "EARLY_EXPORTER_SECRET",
];

/// One logged secret: its label, the client random, the secret.
pub type Entry = (&'static str, Vec<u8>, Vec<u8>);

/// Runs `f` on the secrets the handshake step running on this worker logged (kept beside the
/// certificate it chose: `connection::tls::CHOSEN`).
fn pending_with<R>(f: impl FnOnce(&mut Vec<Entry>) -> R) -> R {
    super::tls::CHOSEN.with(|c| f(&mut c.borrow_mut().keys))
}

/// The key log of the bind configurations under `tune.ssl.keylog on`.
#[derive(Debug)]
pub struct Collector;

impl rustls::KeyLog for Collector {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let label = match label {
            "CLIENT_RANDOM" => "CLIENT_RANDOM",
            l => match LABELS.iter().find(|k| **k == l) {
                Some(k) => k,
                None => return,
            },
        };
        pending_with(|p| p.push((label, client_random.to_vec(), secret.to_vec())));
    }
}

/// Moves what the last handshake step logged into `keys` (a connection's own; secrets of
/// another client random are dropped).
pub fn take_into(keys: &mut Option<Box<Keys>>) {
    let entries = pending_with(std::mem::take);
    for (label, random, secret) in entries {
        let k = keys.get_or_insert_with(Box::default);
        let Ok(random) = <[u8; 32]>::try_from(&random[..]) else { continue };
        if *k.client_random.get_or_insert(random) != random {
            continue;
        }
        if label == "CLIENT_RANDOM" {
            k.master = Some(secret);
        } else {
            let mut hex = String::with_capacity(secret.len() * 2);
            for b in &secret {
                use std::fmt::Write;
                let _ = write!(hex, "{b:02x}");
            }
            k.secrets.retain(|(l, _)| *l != label);
            k.secrets.push((label, hex));
        }
    }
}

/// Something was logged since the last [`take_into`] (one read of the worker's slot).
pub fn pending() -> bool {
    pending_with(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::KeyLog;

    #[test]
    fn a_steps_secrets_go_to_their_connection() {
        let c = Collector;
        c.log("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &[7; 32], &[0xab, 0x01]);
        c.log("CLIENT_RANDOM", &[7; 32], &[9; 48]);
        c.log("SOMETHING_ELSE", &[7; 32], &[1]);
        c.log("EXPORTER_SECRET", &[8; 32], &[2]);
        assert!(pending());
        let mut keys = None;
        take_into(&mut keys);
        assert!(!pending());
        let k = keys.expect("keys");
        assert_eq!(k.client_random, Some([7; 32]));
        assert_eq!(k.secret("CLIENT_HANDSHAKE_TRAFFIC_SECRET"), Some("ab01"));
        assert_eq!(k.master.as_deref(), Some(&[9u8; 48][..]));
        assert_eq!(k.secret("EXPORTER_SECRET"), None, "another connection's");
    }
}
