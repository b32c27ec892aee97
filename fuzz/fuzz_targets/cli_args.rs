//! Every command's argument parsing, seed-verbatim forms included: the first line of the input
//! names the command (sim, bench, sched, predict, trylock, notify, semtest, echo, echo-MODE,
//! burst, test-burst, hist, echo-bench, rdma, sweep; workloads, report, vm and qdisc by name only;
//! anything else picks one of the first list by its length), each
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
/// Reached by their exact names only (added later: picking by length over `COMMANDS` alone keeps
/// the committed corpus and regressions on the commands they were found with).
const BY_NAME_ONLY: &[&str] = &["workloads", "report", "vm", "qdisc"];

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
    let named = COMMANDS.contains(&first.as_str()) || BY_NAME_ONLY.contains(&first.as_str());
    let cmd = if named { first } else { COMMANDS[first.len() % COMMANDS.len()].to_string() };
    args[0] = OsString::from(&cmd);
    match cmd.as_str() {
        "workloads" => {
            if let Err(e) = schedlab_sim::cli::parse_command(args) {
                let _ = format!("{e:#}");
            }
        }
        "report" => {
            let _ = schedlab_report::page::cli::parse(&args);
        }
        "vm" => {
            if let Err(e) = schedlab_kernel::cli::parse_vm_args(&args) {
                render(e);
            }
        }
        "qdisc" => {
            if let Err(e) = schedlab_kernel::cli::parse_qdisc_args(&args) {
                render(e);
            }
        }
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
