//! What a plan checks of its bind lines against the process (HAProxy 2.6's post-parsing
//! checks): a `thread` set must name a thread the process runs.
//!
//! Must not touch: sockets (the listeners are `cli`'s to open).

use fulcrum_config as cfg;

/// The threads the process runs: `nbthread`, else one per CPU it may use (up to 64).
pub fn nbthread(g: &cfg::Global) -> usize {
    g.nbthread.map(|n| n as usize).unwrap_or_else(|| {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(64)
    })
}

/// HAProxy 2.6's alert for each bind line whose `thread` set names no thread of the process.
pub(super) fn thread_errors(config: &cfg::Config) -> Vec<String> {
    let n = nbthread(&config.global) as u32;
    let mut errors = Vec::new();
    for p in config.proxies.iter() {
        for b in &p.binds {
            if !b.threads.is_empty() && b.threads.iter().all(|&t| t > n) {
                errors.push(format!(
                    "Proxy '{}': 'thread' directive contains threads that belong to no group in 'bind {}' at [{}].",
                    p.name, b.written, b.span
                ));
            }
        }
    }
    errors
}
