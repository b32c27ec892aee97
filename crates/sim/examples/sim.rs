//! Runs `schedlab sim` (or `bench` when the first argument is `bench`) from this crate alone:
//! `cargo run --release -p schedlab-sim --example sim -- -t 50`.
fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    args[0] = "sim".into();
    if args.get(1).is_some_and(|a| a == "bench") {
        args.remove(0);
    }
    match schedlab_sim::app::main(args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1)
        }
    }
}
