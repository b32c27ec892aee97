//! Every command's argument parsing, seed-verbatim forms included: the first line of the input
//! names the command (sim, bench, sched, predict, trylock, notify, semtest, echo, echo-MODE,
//! burst, test-burst, hist, echo-bench, rdma, sweep; anything else picks one by its length), each
//! further line is one argument. Each goes through the command's `parse_args`/`parse_argv`, which
//! returns a Result and never runs, prints or exits. Any panic is a bug (clap's own consistency
//! checks included: this build has debug assertions), and so is a help or error text that
//! cannot be rendered.
#![no_main]
use std::ffi::OsString;

use libfuzzer_sys::fuzz_target;
use schedlab_fuzz::{os_args, str_args};

const COMMANDS: &[&str] = &[
    "sim",
    "bench",
    "sched",
    "predict",
    "trylock",
    "notify",
    "semtest",
    "echo",
    "echo-naive",
    "echo-io_uring",
    "burst",
    "test-burst",
    "hist",
    "echo-bench",
    "rdma",
    "sweep",
];

/// Renders an error as the command would print it (clap builds help and usage lazily).
fn render(e: anyhow::Error) {
    let _ = format!("{e:#}");
}

fuzz_target!(|data: &[u8]| {
    let mut args = os_args(data);
    if args.is_empty() {
        return;
    }
    let first = args[0].to_string_lossy().into_owned();
    let cmd = if COMMANDS.contains(&first.as_str()) { first } else { COMMANDS[first.len() % COMMANDS.len()].to_string() };
    args[0] = OsString::from(&cmd);
    match cmd.as_str() {
        "sim" | "bench" => {
            // --dist and --trace name files; their texts are fuzzed from memory by sim_parsers.
            args.retain(|a| !(a.to_string_lossy().starts_with("--dist") || a.to_string_lossy().starts_with("--trace")));
            if let Err(e) = schedlab_sim::cli::parse_args(args) {
                render(e);
            }
        }
        "sched" => {
            let argv = str_args(data);
            if let Ok(Some(a)) = schedlab_sched::config::parse_argv(&argv[1..]) {
                assert!(a.threads >= 1 && a.queue >= 1 && a.batch >= 1, "{a:?}");
            }
        }
        "predict" => {
            let argv = str_args(data);
            if let Ok(Some(p)) = schedlab_predict::cli::parse_argv(&argv[1..]) {
                assert!(!p.algs.is_empty() && p.sched.bandwidth.is_some());
            }
        }
        "trylock" | "notify" | "semtest" => {
            if let Err(e) = schedlab_prims::cli::parse_args(args) {
                render(e);
            }
        }
        "rdma" => {
            if let Err(e) = schedlab_rdma::cli::parse_args(args) {
                render(e);
            }
        }
        "sweep" => {
            if let Err(e) = schedlab_sweep::cli::parse_args(args) {
                render(e);
            }
        }
        _ => {
            if let Err(e) = schedlab_echo::cli::parse_args(args) {
                render(e);
            }
        }
    }
});
