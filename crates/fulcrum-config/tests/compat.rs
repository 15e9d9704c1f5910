//! `docs/compat.md` is generated from the keyword table; this test keeps it from drifting.
//! `UPDATE_COMPAT=1 cargo test -p fulcrum-config --test compat` rewrites it.

use std::path::Path;

#[test]
fn compat_doc_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/compat.md");
    let generated = fulcrum_config::keywords::compat_markdown();
    if std::env::var_os("UPDATE_COMPAT").is_some() {
        std::fs::write(&path, &generated).expect("write docs/compat.md");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == generated,
        "docs/compat.md is out of date: run UPDATE_COMPAT=1 cargo test -p fulcrum-config --test compat"
    );
}

#[test]
fn compat_doc_covers_the_table() {
    let doc = fulcrum_config::keywords::compat_markdown();
    assert!(
        doc.contains("default is `roundrobin`")
            || doc.contains("`balance` is omitted the algorithm is `roundrobin`")
    );
    assert!(doc.contains("| `option redispatch` | X | - | X | X | supported |"));
    assert!(doc.contains("| `nbthread` | supported |"));
    assert!(doc.contains("| `check` | supported |"));
    assert!(doc.contains("| `namespace` | not yet |"));
    assert!(doc.contains("| `minconn` | supported |"));
    assert!(doc.contains("| `peers` | not yet |"));
}
