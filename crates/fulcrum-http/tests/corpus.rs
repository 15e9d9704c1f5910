//! Replays the committed fuzz corpus (`fuzz/corpus/{head,chunked}/*`) through the same checks
//! the fuzz targets run, so every seed and every past crash stays a regression test.

use std::fs;
use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_head_seed_passes_the_head_checks() {
    let files = corpus("head");
    assert!(files.len() >= 30, "only {} head seeds", files.len());
    for (path, bytes) in files {
        let r = std::panic::catch_unwind(|| fulcrum_http::fuzzing::check_head(&bytes));
        assert!(r.is_ok(), "{} fails the head checks", path.display());
    }
}

#[test]
fn every_chunked_seed_passes_the_chunked_checks() {
    let files = corpus("chunked");
    assert!(files.len() >= 30, "only {} chunked seeds", files.len());
    for (path, bytes) in files {
        let r = std::panic::catch_unwind(|| fulcrum_http::fuzzing::check_chunked(&bytes));
        assert!(r.is_ok(), "{} fails the chunked checks", path.display());
    }
}
