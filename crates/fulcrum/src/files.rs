//! The files a configuration draws on (the configuration itself, certificates and their
//! directories, error files, maps, ACL files, server-state files), as every reader in the
//! process reaches them: [`read`], [`read_string`], [`is_dir`], [`list`].
//!
//! Usually they are the file system's. Under `chroot` in master-worker mode (`-W`, `-Ws`) the
//! master never enters the jail: it reads the files while [`Recording`], and hands the
//! [`Bundle`] to the jailed worker, whose readers are then answered from it ([`serve`]); what
//! the bundle does not hold is looked for inside the jail. So a worker keeps no descriptor of a
//! directory outside its jail, and a reload reads `/etc/ssl/private` as the master sees it.
//!
//! Owns: the process's view of configuration files. Must not touch: what the files mean.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// One question a reader asked, with the answer the file system gave.
#[derive(Clone, Debug, PartialEq)]
enum Entry {
    Read(PathBuf, Result<Vec<u8>, i32>),
    IsDir(PathBuf, bool),
    List(PathBuf, Result<Vec<PathBuf>, i32>),
    /// A host name and the address the system's resolver gave (its `/etc/hosts` and
    /// `resolv.conf` are files a jail lacks too).
    Resolve(String, Result<std::net::IpAddr, String>),
}

/// The answers the master read for one build, in the order they were asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bundle {
    entries: Vec<Entry>,
}

#[derive(Default)]
struct View {
    /// Questions asked since [`Recording::start`].
    recording: Option<Vec<Entry>>,
    /// Answers that replace the file system's.
    served: Option<Arc<Bundle>>,
}

static VIEW: Mutex<View> = Mutex::new(View { recording: None, served: None });

fn view() -> MutexGuard<'static, View> {
    VIEW.lock().unwrap_or_else(|e| e.into_inner())
}

/// An error as the file system gave it (its errno), again.
fn os_error(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// The served answer to `want`, if the bundle has one.
fn served<T>(pick: impl Fn(&Entry) -> Option<T>) -> Option<T> {
    let served = view().served.clone()?;
    served.entries.iter().rev().find_map(pick)
}

fn note(e: Entry) {
    if let Some(r) = view().recording.as_mut() {
        r.push(e);
    }
}

/// Reads a whole file.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let found = served(|e| match e {
        Entry::Read(p, r) if p == path => Some(r.clone()),
        _ => None,
    });
    if let Some(r) = found {
        return r.map_err(os_error);
    }
    let r = std::fs::read(path);
    note(Entry::Read(path.to_path_buf(), r.as_ref().map(Vec::clone).map_err(errno)));
    r
}

/// Reads a whole text file (see [`read`]).
pub fn read_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Whether `path` is a directory.
pub fn is_dir(path: &Path) -> bool {
    let found = served(|e| match e {
        Entry::IsDir(p, d) if p == path => Some(*d),
        _ => None,
    });
    if let Some(d) = found {
        return d;
    }
    let d = path.is_dir();
    note(Entry::IsDir(path.to_path_buf(), d));
    d
}

/// The regular files of directory `path`.
pub fn list(path: &Path) -> io::Result<Vec<PathBuf>> {
    let found = served(|e| match e {
        Entry::List(p, r) if p == path => Some(r.clone()),
        _ => None,
    });
    if let Some(r) = found {
        return r.map_err(os_error);
    }
    let r = std::fs::read_dir(path)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect::<Vec<_>>());
    note(Entry::List(path.to_path_buf(), r.as_ref().map(Vec::clone).map_err(errno)));
    r
}

/// The address of `host` (a literal address, or a name through the system's resolver).
pub fn resolve(host: &str) -> Result<std::net::IpAddr, String> {
    let found = served(|e| match e {
        Entry::Resolve(h, r) if h == host => Some(r.clone()),
        _ => None,
    });
    if let Some(r) = found {
        return r;
    }
    let r = crate::sys::resolve_host(host);
    note(Entry::Resolve(host.to_string(), r.clone()));
    r
}

/// Records what the readers ask, with the file system's answers, until [`Recording::finish`]
/// (dropped unfinished: forgotten).
pub struct Recording(());

impl Recording {
    pub fn start() -> Self {
        view().recording = Some(Vec::new());
        Recording(())
    }

    pub fn finish(self) -> Bundle {
        Bundle { entries: view().recording.take().unwrap_or_default() }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        view().recording = None;
    }
}

/// From now on the readers are answered from `bundle` first (the master's reads of the
/// configuration in force).
pub fn serve(bundle: Bundle) {
    view().served = Some(Arc::new(bundle));
}

// The encoding between master and worker: entries one after the other, each a kind byte, its
// path, and its answer (lengths as u32, little-endian). Only the master writes it.

impl Bundle {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let bytes = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        };
        let path = |out: &mut Vec<u8>, p: &Path| {
            use std::os::unix::ffi::OsStrExt;
            bytes(out, p.as_os_str().as_bytes())
        };
        let failed = |out: &mut Vec<u8>, code: i32| {
            out.push(0);
            out.extend_from_slice(&code.to_le_bytes());
        };
        for e in &self.entries {
            match e {
                Entry::Read(p, r) => {
                    out.push(b'R');
                    path(&mut out, p);
                    match r {
                        Ok(b) => {
                            out.push(1);
                            bytes(&mut out, b);
                        }
                        Err(c) => failed(&mut out, *c),
                    }
                }
                Entry::IsDir(p, d) => {
                    out.push(b'D');
                    path(&mut out, p);
                    out.push(u8::from(*d));
                }
                Entry::List(p, r) => {
                    out.push(b'L');
                    path(&mut out, p);
                    match r {
                        Ok(list) => {
                            out.push(1);
                            out.extend_from_slice(&(list.len() as u32).to_le_bytes());
                            list.iter().for_each(|f| path(&mut out, f));
                        }
                        Err(c) => failed(&mut out, *c),
                    }
                }
                Entry::Resolve(h, r) => {
                    out.push(b'H');
                    bytes(&mut out, h.as_bytes());
                    let (ok, text) = match r {
                        Ok(ip) => (1, ip.to_string()),
                        Err(e) => (0, e.clone()),
                    };
                    out.push(ok);
                    bytes(&mut out, text.as_bytes());
                }
            }
        }
        out
    }

    /// `None` for bytes no master wrote.
    pub fn decode(mut b: &[u8]) -> Option<Bundle> {
        fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            let (h, t) = (b.get(..n)?, b.get(n..)?);
            *b = t;
            Some(h)
        }
        fn u32_of(b: &mut &[u8]) -> Option<u32> {
            Some(u32::from_le_bytes(take(b, 4)?.try_into().ok()?))
        }
        fn bytes<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
            let n = u32_of(b)? as usize;
            take(b, n)
        }
        fn path(b: &mut &[u8]) -> Option<PathBuf> {
            use std::os::unix::ffi::OsStrExt;
            Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes(b)?)))
        }
        fn answer<T>(
            b: &mut &[u8],
            ok: impl FnOnce(&mut &[u8]) -> Option<T>,
        ) -> Option<Result<T, i32>> {
            match take(b, 1)?[0] {
                1 => Some(Ok(ok(b)?)),
                0 => Some(Err(i32::from_le_bytes(take(b, 4)?.try_into().ok()?))),
                _ => None,
            }
        }
        let mut entries = Vec::new();
        while let Some(&kind) = b.first() {
            b = &b[1..];
            let p = path(&mut b)?;
            entries.push(match kind {
                b'R' => Entry::Read(p, answer(&mut b, |b| bytes(b).map(<[u8]>::to_vec))?),
                b'D' => Entry::IsDir(p, take(&mut b, 1)?[0] == 1),
                b'H' => {
                    let host = p.to_str()?.to_string();
                    let ok = take(&mut b, 1)?[0] == 1;
                    let text = std::str::from_utf8(bytes(&mut b)?).ok()?;
                    let r = if ok { Ok(text.parse().ok()?) } else { Err(text.to_string()) };
                    Entry::Resolve(host, r)
                }
                b'L' => Entry::List(
                    p,
                    answer(&mut b, |b| {
                        let n = u32_of(b)?;
                        (0..n).map(|_| path(b)).collect()
                    })?,
                ),
                _ => return None,
            });
        }
        Some(Bundle { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view is process-wide: the tests that change it take turns.
    static TURN: Mutex<()> = Mutex::new(());

    #[test]
    fn a_recording_replays_what_the_file_system_answered_after_the_files_are_gone() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let dir = std::env::temp_dir().join(format!("fulcrum-files-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("certs")).expect("dir");
        std::fs::write(dir.join("certs/a.pem"), b"A").expect("file");
        std::fs::write(dir.join("errors.http"), b"HTTP/1.0 503\r\n\r\n").expect("file");
        let rec = Recording::start();
        assert!(is_dir(&dir.join("certs")));
        assert_eq!(list(&dir.join("certs")).expect("list"), vec![dir.join("certs/a.pem")]);
        assert_eq!(read(&dir.join("certs/a.pem")).expect("read"), b"A");
        assert_eq!(read_string(&dir.join("errors.http")).expect("read"), "HTTP/1.0 503\r\n\r\n");
        let local = resolve("localhost").expect("localhost resolves");
        let missing = read(&dir.join("missing")).expect_err("missing");
        let bundle = rec.finish();
        // Through the wire format, then served with the files gone.
        let bundle = Bundle::decode(&bundle.encode()).expect("decodes");
        std::fs::remove_dir_all(&dir).expect("clean");
        serve(bundle);
        assert!(is_dir(&dir.join("certs")));
        assert_eq!(list(&dir.join("certs")).expect("list"), vec![dir.join("certs/a.pem")]);
        assert_eq!(read(&dir.join("certs/a.pem")).expect("served"), b"A");
        let again = read(&dir.join("missing")).expect_err("still missing");
        assert_eq!(again.raw_os_error(), missing.raw_os_error());
        assert_eq!(again.kind(), io::ErrorKind::NotFound);
        assert_eq!(resolve("localhost"), Ok(local));
        // Not in the bundle: the file system's answer.
        assert!(read(Path::new("/proc/self/comm")).is_ok());
        view().served = None;
    }

    #[test]
    fn garbage_is_no_bundle() {
        assert_eq!(Bundle::decode(b""), Some(Bundle::default()));
        assert_eq!(Bundle::decode(b"X\x00\x00\x00\x00"), None);
        assert_eq!(Bundle::decode(b"R\x05\x00\x00\x00ab"), None);
        let b = Bundle {
            entries: vec![
                Entry::Read("/a".into(), Err(2)),
                Entry::Resolve("db".into(), Err("could not resolve address 'db'.".into())),
                Entry::Resolve("::1".into(), Ok("::1".parse().expect("ip"))),
            ],
        };
        let mut enc = b.encode();
        assert_eq!(Bundle::decode(&enc), Some(b));
        enc.pop();
        assert_eq!(Bundle::decode(&enc), None);
    }
}
