//! `schedlab`: one binary, one subcommand per layer. This crate only dispatches, to each command
//! crate's `app::main` (`schedlab-sim`, `-sched`, `-predict`, `-prims`, `-echo`, `-rdma`, `-sweep`,
//! `-kernel`, `-report`): its `cli.rs` turns argv into the command's configuration (the seeds' own
//! command lines, single-dash long options and positional forms, are parsed there) and its
//! `app.rs` runs it and writes the results.

use std::ffi::OsString;
use std::process::ExitCode;

use schedlab_report::frontend::{exit, guard_closed_pipes};

const USAGE: &str = "\
schedlab — when many senders share one outlet, how should their messages be ordered,
and what does each layer under the scheduler cost?

Usage: schedlab <COMMAND> [ARGS...]        (schedlab <COMMAND> --help for each)

Commands:
  sim         discrete-event simulator of message scheduling (alpha scheduling report)
  workloads   the named message-size workloads (W1-W5, pFabric) with sources and means
  bench       simulator throughput benchmark (arrival packets per second, one core)
  sched       real multi-threaded scheduler harness (client rings, one scheduler, emulated link)
  predict     one workload through the harness and the simulator: measured vs predicted latency
  trylock     cost of trylock/unlock on a shared lock (busy and token-passing tests)
  notify      cost of thread notifications (eventfd, pipe, futex, ...)
  semtest     semaphore wake-up latency between thread pairs
  echo        TCP echo servers: --mode naive|iosubmit|splice|sockmap|io_uring
              (also echo-naive, echo-iosubmit, echo-splice, echo-sockmap, echo-io_uring ADDR:PORT [busypoll])
  burst       TCP echo burst client (alias: test-burst)
  hist        percentile summary and log2 histogram of numbers, one per line
  echo-bench  the whole echo latency matrix, CSV and candlestick chart
  rdma        perftest-style RDMA flow benchmark; `rdma share A.txt B.txt` analyses two flows
  sweep       grids of simulations from a TOML spec into one table (resumable, --shard I/N, merge)
  report      one self-contained web page (figures and tables) from any schedlab results
  vm          run one command in a Linux guest (Debian 6.12 kernel under QEMU, host root read-only)
  qdisc       a sched traffic file through a Linux qdisc in the guest, beside the model and harness
";

fn dispatch(cmd: &str, args: Vec<OsString>) -> anyhow::Result<i32> {
    match cmd {
        "sim" | "bench" | "workloads" => schedlab_sim::app::main(args),
        "sched" => schedlab_sched::app::main(args),
        "predict" => schedlab_predict::app::main(args),
        "trylock" | "notify" | "semtest" => schedlab_prims::app::main(args),
        "echo" | "burst" | "test-burst" | "hist" | "echo-bench" => schedlab_echo::app::main(args),
        c if c.starts_with("echo-") => schedlab_echo::app::main(args),
        "rdma" => schedlab_rdma::app::main(args),
        "sweep" => schedlab_sweep::app::main(args),
        "report" => schedlab_report::page::app::main(args),
        "vm" => schedlab_kernel::app::vm_main(args),
        "qdisc" => schedlab_kernel::app::qdisc_main(args),
        other => {
            eprintln!("schedlab: unknown command '{other}'\n\n{USAGE}");
            Ok(exit::USAGE)
        }
    }
}

fn main() -> ExitCode {
    guard_closed_pipes();
    let mut argv: Vec<OsString> = std::env::args_os().collect();
    if argv.len() < 2 {
        eprint!("{USAGE}");
        return ExitCode::from(exit::USAGE as u8);
    }
    let cmd = argv[1].to_string_lossy().into_owned();
    match cmd.as_str() {
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        "-V" | "--version" => {
            println!("schedlab {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    // The command's own argv: argv[0] is "schedlab <cmd>" so help texts read naturally.
    argv.remove(0);
    match dispatch(&cmd, argv) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("schedlab {cmd}: error: {e:#}");
            ExitCode::from(exit::ERROR as u8)
        }
    }
}
