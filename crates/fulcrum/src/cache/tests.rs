use super::*;

fn section(mb: u64, max_object: u32) -> cfg::cache::CacheSection {
    let span = cfg::Span { file: "t.cfg".into(), line: 1 };
    let mut c = cfg::cache::CacheSection::new("c", span);
    c.total_max_size = mb << 20;
    c.max_object_size = max_object;
    c.process_vary = true;
    c
}

fn head(text: &str, request: bool) -> Head {
    let mut h = Head::new();
    let limits = fulcrum_http::Limits { max_head: 8192, max_headers: 100 };
    // Lines joined by `|`, empty ones dropped, then the blank line.
    let lines: Vec<&str> = text.split('|').filter(|l| !l.is_empty()).collect();
    let text = format!("{}\r\n\r\n", lines.join("\r\n"));
    let r = match request {
        true => h.parse_request(text.as_bytes(), &limits),
        false => h.parse_response(text.as_bytes(), &limits),
    };
    r.expect("valid").expect("valid");
    h
}

/// Stores `body` for `target` with the response fields `fields` through the path the
/// transaction takes; whether it was stored.
fn store(c: &Arc<Cache>, target: &str, req_fields: &str, fields: &str, body: &[u8]) -> bool {
    let req = head(&format!("GET {target} HTTP/1.1|Host: h|{req_fields}|"), true);
    let mut t = Txn::default();
    use_cache(c, &req, &mut t, true);
    let text = format!("HTTP/1.1 200 OK|Content-Length: {}|{fields}|", body.len());
    let mut resp = head(&text, false);
    let mut slot = Some(Box::new(t));
    store_response(c, Some(&req), &mut resp, &mut slot);
    let mut t = *slot.expect("kept");
    let Some(mut w) = t.store.take() else { return false };
    for piece in body.chunks(1000) {
        w.push(piece);
    }
    w.finish()
}

fn hit(c: &Arc<Cache>, target: &str, req_fields: &str) -> Option<Hit> {
    let req = head(&format!("GET {target} HTTP/1.1|Host: h|{req_fields}|"), true);
    let mut t = Txn::default();
    use_cache(c, &req, &mut t, false);
    assert_eq!(t.lookups, [0, 1]);
    t.hit
}

#[test]
fn a_stored_response_is_found_by_host_and_target_with_its_age() {
    let c = Arc::new(Cache::new(&section(1, 0)));
    assert!(store(&c, "/a?x=1", "", "Cache-Control: max-age=60|Age: 5", b"hello"));
    let h = hit(&c, "/a?x=1", "").expect("a hit");
    assert_eq!(&*h.entry.body, b"hello");
    assert_eq!(h.entry.head.header(b"age"), None);
    assert!(h.entry.age(now()) >= 5);
    assert!(hit(&c, "/a?x=2", "").is_none());
    assert!(!store(&c, "/b", "", "Content-Type: text/plain", b"no validator"));
    assert!(!store(&c, "/c", "", "Cache-Control: max-age=60|Vary: User-Agent", b"x"));
}

#[test]
fn the_cache_never_holds_more_blocks_than_its_size_and_evicts_unused_entries_first() {
    // 1 MiB: 1024 blocks; objects of 10,000 bytes take 10 blocks each (with their head).
    let c = Arc::new(Cache::new(&section(1, 64 * 1024)));
    let body = vec![b'x'; 10_000];
    assert!(store(&c, "/keep", "", "Cache-Control: max-age=60", &body));
    for i in 0..500 {
        assert!(store(&c, &format!("/o{i}"), "", "Cache-Control: max-age=60", &body));
        // The first object is used all along: the eviction passes over it.
        assert!(hit(&c, "/keep", "").is_some(), "after {i}");
        let (blocks, _) = c.usage();
        assert!(blocks <= c.max_blocks, "{blocks} blocks in use");
    }
    assert!(hit(&c, "/o0", "").is_none(), "the oldest unused object was evicted");
    assert!(hit(&c, "/o499", "").is_some());
    let (_, entries) = c.usage();
    assert!((95..=102).contains(&entries), "{entries} entries");
    let mut shown = String::new();
    c.show(now(), &mut shown);
    assert_eq!(shown.lines().count(), entries + 1, "{shown}");
    assert!(shown.lines().nth(1).expect("valid").contains("size:10"), "{shown}");
}

#[test]
fn objects_larger_than_max_object_size_pass_without_being_stored() {
    let c = Arc::new(Cache::new(&section(1, 4096)));
    assert!(!store(&c, "/big", "", "Cache-Control: max-age=60", &[0; 5000]));
    // A body whose length is not known beforehand fails as it grows.
    let req = head("GET /chunked HTTP/1.1|Host: h||", true);
    let mut t = Txn::default();
    use_cache(&c, &req, &mut t, true);
    let mut resp =
        head("HTTP/1.1 200 OK|Transfer-Encoding: chunked|Cache-Control: max-age=9||", false);
    let mut slot = Some(Box::new(t));
    store_response(&c, Some(&req), &mut resp, &mut slot);
    let mut t = *slot.expect("kept");
    let mut w = t.store.take().expect("begun");
    w.push(&[0; 3000]);
    w.push(&[0; 3000]);
    assert!(!w.finish());
    assert_eq!(c.usage(), (0, 0));
}

#[test]
fn vary_on_accept_encoding_keeps_one_entry_per_coding() {
    let c = Arc::new(Cache::new(&section(1, 0)));
    let gz = "Cache-Control: max-age=60|Vary: Accept-Encoding|Content-Encoding: gzip";
    let plain = "Cache-Control: max-age=60|Vary: Accept-Encoding";
    assert!(store(&c, "/v", "Accept-Encoding: gzip", gz, b"gz"));
    assert!(store(&c, "/v", "Accept-Encoding: br", plain, b"plain"));
    assert_eq!(&*hit(&c, "/v", "Accept-Encoding: gzip, br").expect("valid").entry.body, b"gz");
    assert_eq!(&*hit(&c, "/v", "Accept-Encoding: br").expect("valid").entry.body, b"plain");
    assert_eq!(&*hit(&c, "/v", "Accept-Encoding: gzip;q=0").expect("valid").entry.body, b"plain");
    // Vary on the referer alone is answered too (HAProxy 2.6 never hits it).
    let r = "Cache-Control: max-age=60|Vary: Referer";
    assert!(store(&c, "/r", "Referer: http://a/", r, b"from a"));
    assert!(store(&c, "/r", "Referer: http://b/", r, b"from b"));
    assert_eq!(&*hit(&c, "/r", "Referer: http://b/").expect("valid").entry.body, b"from b");
    assert!(hit(&c, "/r", "Referer: http://c/").is_none());
}

#[test]
fn an_unsafe_method_that_succeeds_invalidates_the_entry() {
    let c = Arc::new(Cache::new(&section(1, 0)));
    assert!(store(&c, "/p", "", "Cache-Control: max-age=60", b"v1"));
    let req = head("POST /p HTTP/1.1|Host: h|Content-Length: 0||", true);
    let mut t = Txn::default();
    use_cache(&c, &req, &mut t, true);
    assert_eq!(t.lookups, [0, 0], "a POST is not looked up");
    let mut resp = head("HTTP/1.1 201 Created|Content-Length: 0||", false);
    let mut slot = Some(Box::new(t));
    store_response(&c, Some(&req), &mut resp, &mut slot);
    assert!(hit(&c, "/p", "").is_none());
}

#[test]
fn stores_in_progress_count_with_the_entries_and_make_room_as_they_grow() {
    // 1 MiB; eight stores of 200 kB under way at once cannot all hold their bodies: those that
    // find no room left are abandoned, and the size is never exceeded.
    let c = Arc::new(Cache::new(&section(1, 512 * 1024)));
    assert!(store(&c, "/old", "", "Cache-Control: max-age=60", &[1; 100_000]));
    let mut writers = Vec::new();
    for i in 0..8 {
        let req = head(&format!("GET /w{i} HTTP/1.1|Host: h||"), true);
        let mut t = Txn::default();
        use_cache(&c, &req, &mut t, true);
        let mut resp =
            head("HTTP/1.1 200 OK|Content-Length: 200000|Cache-Control: max-age=60||", false);
        let mut slot = Some(Box::new(t));
        store_response(&c, Some(&req), &mut resp, &mut slot);
        let mut t = *slot.expect("kept");
        writers.push(t.store.take().expect("begun"));
    }
    for _ in 0..20 {
        for w in &mut writers {
            w.push(&[0; 10_000]);
        }
        let (blocks, _) = c.usage();
        let pending = c.pending.load(Ordering::Relaxed);
        assert!(
            u64::from(blocks) * 1024 + pending <= 1 << 20,
            "{blocks} blocks, {pending} pending"
        );
    }
    assert!(hit(&c, "/old", "").is_none(), "the old entry made room");
    let stored = writers.into_iter().map(|mut w| w.finish()).filter(|&ok| ok).count();
    assert!((1..=5).contains(&stored), "{stored} stored");
    assert_eq!(c.pending.load(Ordering::Relaxed), 0);
}
