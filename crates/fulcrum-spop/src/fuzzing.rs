//! The invariants the fuzz targets check (`fuzz/fuzz_targets/spop_*.rs`), also run by the test
//! suite over the committed corpus (`fuzz/corpus/spop_*`). Each takes any bytes and panics only
//! when an invariant breaks.

use crate::{actions, agent_hello, messages, put_action, Frame, Value, MAX_FRAME_SIZE};

/// Frames read one after another: each lies within what was read, is not whole one byte
/// earlier, and an agent's HELLO, DISCONNECT or ACK in it is read without a panic; an ACK's
/// actions are the same once written back.
pub fn check_frames(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some((f, n))) = Frame::parse(rest, MAX_FRAME_SIZE) {
        assert!(n >= 11 && n <= rest.len());
        assert_eq!(Frame::parse(&rest[..n - 1], MAX_FRAME_SIZE), Ok(None));
        if let Ok(h) = agent_hello(&f, MAX_FRAME_SIZE) {
            assert!(h.max_frame_size >= 256 && h.max_frame_size <= MAX_FRAME_SIZE);
        }
        let _ = crate::agent_disconnect(&f);
        check_actions(f.payload);
        rest = &rest[n..];
    }
}

/// Actions that read are read the same once written back.
pub fn check_actions(data: &[u8]) {
    let acts = actions(data);
    let mut again = Vec::new();
    for a in &acts {
        put_action(&mut again, a);
    }
    assert_eq!(actions(&again), acts);
}

/// Typed data and NOTIFY messages that read are read the same once written back.
pub fn check_values(data: &[u8]) {
    let mut p = data;
    while let Ok(v) = Value::get(&mut p) {
        let mut again = Vec::new();
        v.put(&mut again);
        let back = Value::get(&mut &again[..]).expect("written back");
        // (An unknown type reads as Null, which writes as its own byte.)
        assert_eq!(back, v);
        if p.is_empty() {
            break;
        }
    }
    if let Ok(m) = messages(data) {
        let mut again = Vec::new();
        for (name, args) in &m {
            crate::put_str(&mut again, name);
            again.push(args.len() as u8);
            for (k, v) in args {
                crate::put_str(&mut again, k);
                v.put(&mut again);
            }
        }
        assert_eq!(messages(&again).expect("written back"), m);
    }
}
