//! A jailed worker's line to its master (master-worker mode under `chroot`, see `cli::master`):
//! one socket pair, made before the fork. The worker's service-manager notifications go through
//! it (systemd hears only the process it started, the master), and a reload asks the master
//! for the configuration's files, which only the master can read ([`files_for_reload`]).
//!
//! Frames both ways: a kind byte, a length (u32, little-endian), that many bytes. Worker to
//! master: `N` a notification, `R` a reload's request. Master to worker: `B` a `files::Bundle`,
//! `E` the error lines of a configuration that does not load.
//!
//! Owns: the worker's end and the framing. Must not touch: what a reload does with the files.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::files::Bundle;

pub const NOTIFY: u8 = b'N';
pub const RELOAD: u8 = b'R';
pub const BUNDLE: u8 = b'B';
pub const ERRORS: u8 = b'E';

/// The longest frame accepted (a bundle holds every file a configuration draws on).
pub const MAX_FRAME: usize = 1 << 30;

/// How long a worker waits for its master to read the files.
const REPLY_WAIT: Duration = Duration::from_secs(120);

static WORKER_END: OnceLock<Mutex<UnixStream>> = OnceLock::new();

/// This process is a worker whose master holds the other end of `end`.
pub fn set(end: UnixStream) {
    let _ = WORKER_END.set(Mutex::new(end));
}

/// Whether this process has a master.
pub fn has_master() -> bool {
    WORKER_END.get().is_some()
}

/// The frame for `kind` and `payload`.
pub fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(5 + payload.len());
    f.push(kind);
    f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

/// The length a frame's 5-byte header announces, `None` beyond [`MAX_FRAME`].
pub fn frame_len(header: &[u8; 5]) -> Option<usize> {
    let n = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
    (n <= MAX_FRAME).then_some(n)
}

fn read_frame(s: &mut UnixStream) -> io::Result<(u8, Vec<u8>)> {
    let mut header = [0u8; 5];
    s.read_exact(&mut header)?;
    let n = frame_len(&header)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "frame too long"))?;
    let mut payload = vec![0u8; n];
    s.read_exact(&mut payload)?;
    Ok((header[0], payload))
}

/// Tells the service manager `state` (systemd's `sd_notify`), through the master if this
/// process has one.
pub fn notify(state: &str) {
    match WORKER_END.get() {
        Some(end) => {
            let mut end = end.lock().unwrap_or_else(|e| e.into_inner());
            let _ = end.write_all(&frame(NOTIFY, state.as_bytes()));
        }
        None => crate::sys::notify_service(state),
    }
}

/// The files of the configuration as the master read them for a reload: `None` without a
/// master; `Err` with the lines to report when the master found the configuration invalid or
/// cannot be reached.
pub fn files_for_reload() -> Option<Result<Bundle, Vec<String>>> {
    let end = WORKER_END.get()?;
    let mut end = end.lock().unwrap_or_else(|e| e.into_inner());
    let asked = end
        .set_read_timeout(Some(REPLY_WAIT))
        .and_then(|_| end.write_all(&frame(RELOAD, b"")))
        .and_then(|_| read_frame(&mut end));
    Some(match asked {
        Ok((BUNDLE, payload)) => Bundle::decode(&payload)
            .ok_or_else(|| vec!["the master's answer could not be read.".to_string()]),
        Ok((ERRORS, payload)) => {
            Err(String::from_utf8_lossy(&payload).lines().map(str::to_string).collect())
        }
        Ok(_) => Err(vec!["the master's answer could not be read.".to_string()]),
        Err(e) => Err(vec![format!(
            "the master process could not be reached: {}.",
            crate::sys::os_words(&e)
        )]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_their_kind_and_length() {
        let f = frame(BUNDLE, b"abc");
        assert_eq!(f, b"B\x03\x00\x00\x00abc");
        let header: [u8; 5] = f[..5].try_into().expect("header");
        assert_eq!(frame_len(&header), Some(3));
        assert_eq!(frame_len(b"B\xff\xff\xff\xff"), None);
        let (mut a, mut b) = UnixStream::pair().expect("pair");
        a.write_all(&f).expect("write");
        assert_eq!(read_frame(&mut b).expect("read"), (BUNDLE, b"abc".to_vec()));
    }
}
