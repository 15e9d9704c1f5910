//! Standalone `testserver` for benchmarks: `cargo run --release -p fulcrum-testserver --example ts -- <args>`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(fulcrum_testserver::main(&args));
}
