//! Golden tests: every `tests/cases/<case>.cfg` is loaded (with `<case>.partN.cfg` files, if
//! any, loaded after it as one configuration). `<case>.diag` holds the expected diagnostics,
//! one `SEVERITY parsing [file:line] : message` per entry (no file means: no diagnostics);
//! `<case>.model` holds the `{:#?}` of the loaded `Config`. `BLESS=1` rewrites expectations.

use std::fs;
use std::path::{Path, PathBuf};

use fulcrum_config::{load, Diagnostic, Severity, Source};

fn env(name: &str) -> Option<String> {
    match name {
        "FRONT_PORT" => Some("8080".into()),
        "BACKEND_HOST" => Some("10.0.0.5".into()),
        "EMPTY" => Some(String::new()),
        "NBTHREAD" => Some("4".into()),
        _ => None,
    }
}

fn severity(d: &Diagnostic) -> &'static str {
    match d.severity {
        Severity::Diag => "DIAG",
        Severity::Notice => "NOTICE",
        Severity::Warning => "WARNING",
        Severity::Alert => "ALERT",
        Severity::AlertContinue => "ALERT (accepted)",
    }
}

fn source(path: &Path) -> Source {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    Source { name, text }
}

/// Compares `actual` with the file at `path` (absent file = `None`), or rewrites it when blessing.
fn check(path: &Path, actual: Option<&str>, bless: bool, failures: &mut Vec<String>) {
    let expected = fs::read_to_string(path).ok();
    if bless {
        match actual {
            Some(a) => {
                fs::write(path, a).unwrap_or_else(|e| panic!("write {}: {e}", path.display()))
            }
            None if expected.is_some() => {
                fs::remove_file(path).unwrap_or_else(|e| panic!("rm {}: {e}", path.display()))
            }
            None => {}
        }
        return;
    }
    if expected.as_deref() != actual {
        failures.push(format!(
            "{}:\n--- expected\n{}\n--- actual\n{}\n",
            path.display(),
            expected.as_deref().unwrap_or("<no file>"),
            actual.unwrap_or("<nothing>")
        ));
    }
}

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut cases: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("tests/cases exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cfg"))
        .filter(|p| !p.to_string_lossy().contains(".part"))
        .collect();
    cases.sort();
    cases
}

fn parts(case: &Path) -> Vec<PathBuf> {
    let stem = case.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let dir = case.parent().expect("has dir");
    let mut parts: Vec<PathBuf> =
        (2..10).map(|n| dir.join(format!("{stem}.part{n}.cfg"))).filter(|p| p.exists()).collect();
    parts.insert(0, case.to_path_buf());
    parts
}

#[test]
fn golden_cases() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut failures = Vec::new();
    let all = cases();
    assert!(all.len() >= 40, "expected at least 40 cases, found {}", all.len());
    for case in &all {
        let sources: Vec<Source> = parts(case).iter().map(|p| source(p)).collect();
        let (config, diags) = match load(&sources, &env) {
            Ok(l) => (Some(l.config), l.diagnostics),
            Err(d) => (None, d),
        };
        let diag_text: String = diags.iter().map(|d| format!("{} {d}\n", severity(d))).collect();
        let diag_text = (!diag_text.is_empty()).then_some(diag_text);
        check(&case.with_extension("diag"), diag_text.as_deref(), bless, &mut failures);
        let model = config.map(|c| format!("{c:#?}\n"));
        check(&case.with_extension("model"), model.as_deref(), bless, &mut failures);
    }
    assert!(failures.is_empty(), "{} golden mismatches:\n{}", failures.len(), failures.join("\n"));
}
