//! The echo family's command lines into plain data: `echo`, `echo-MODE`, `burst`/`test-burst`,
//! `hist`, `echo-bench` each parse into an [`EchoCommand`] (the seed's positional forms kept),
//! with their help texts; nothing is run, printed, resolved or opened. [`crate::app`] runs them.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Parser;

use crate::client;
pub use crate::client::parse_rounds;
use crate::server::{Mode, UringData};
use crate::{stats, Size};

/// One echo-family command line, parsed: nothing is run, printed, resolved or opened.
#[derive(Debug)]
pub enum EchoCommand {
    /// `echo` or `echo-MODE` (the mode the command name implies).
    Echo(EchoArgs, Option<Mode>),
    Burst(BurstArgs),
    Hist(HistArgs),
    Bench(crate::bench::BenchArgs),
}

/// Parses an echo-family command line (`args[0]` is the command name). Help, version and usage
/// errors are `Err` holding the `clap::Error`; an unknown command is another `Err`.
pub fn parse_args(args: Vec<OsString>) -> Result<EchoCommand> {
    let cmd = args.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(match cmd.as_str() {
        "echo" => EchoCommand::Echo(EchoArgs::try_parse_from(args)?, None),
        "burst" | "test-burst" => EchoCommand::Burst(BurstArgs::try_parse_from(args)?),
        "hist" => EchoCommand::Hist(HistArgs::try_parse_from(args)?),
        "echo-bench" => EchoCommand::Bench(crate::bench::BenchArgs::try_parse_from(args)?),
        c => match c.strip_prefix("echo-").map(str::parse::<Mode>) {
            Some(Ok(m)) => EchoCommand::Echo(EchoArgs::try_parse_from(args)?, Some(m)),
            Some(Err(e)) => {
                bail!("{e} (commands: echo-naive, echo-iosubmit, echo-splice, echo-sockmap, echo-io_uring, echo-bench)")
            }
            None => bail!("'{c}' is not an echo command"),
        },
    })
}

#[derive(Parser, Debug)]
#[command(
    name = "schedlab echo",
    bin_name = "schedlab echo",
    about = "TCP echo server: naive, iosubmit, splice, sockmap or io_uring",
    after_help = "The seed's form works too: `schedlab echo-naive 0.0.0.0:1234 $BUSYPOLL` (any second argument turns busy poll on).\nStops on Ctrl-C / SIGTERM: closes every connection, detaches and closes BPF objects, prints what it echoed."
)]
pub struct EchoArgs {
    /// Echo mechanism (implied by echo-MODE).
    #[arg(long, short)]
    pub mode: Option<Mode>,
    /// Address to listen on, IP:PORT (port 0 picks a free port).
    pub addr: String,
    /// Seed form: any value here turns busy poll on (SO_BUSY_POLL=50us).
    pub busypoll: Option<String>,
    /// Set SO_BUSY_POLL on every connection (microseconds, default 50); needs root.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "50", value_name = "US")]
    pub busy_poll: Option<u32>,
    /// Pin the serving threads to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// TCP congestion control of every connection; `system` keeps the system default. The originals set cubic.
    #[arg(long, default_value = client::DEFAULT_CONGESTION, value_name = "NAME")]
    pub congestion: String,
    /// io_uring data path: `splice` (io_uring polls, splice(2) moves the pages socket -> pipe ->
    /// socket, no copy), `copy` (IORING_OP_RECV/SEND through a 128 KiB buffer, one io_uring_enter
    /// per round) or `auto` (copy until a receive brings 32 KiB or more, then splice).
    #[arg(long, default_value_t = UringData::default(), value_name = "PATH")]
    pub uring_data: UringData,
    /// Stop by itself after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Write the server report (connections, bytes, BPF check) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<Size, String> {
    s.parse::<Size>().map_err(|e| e.to_string())
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..1e6).contains(&x) => Ok(Duration::from_secs_f64(x)),
        _ => Err(format!("'{s}' is not a number of seconds")),
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "schedlab burst",
    bin_name = "schedlab burst",
    about = "TCP echo burst client: one round-trip time per line, in microseconds",
    after_help = "SIZE: a bare number is KiB like the seed's test-burst (64 = 64 KiB); with a unit: 1B = 1 byte, 4K, 1M.\nRTTs go to stdout, one integer per line; the summary goes to stderr.\nWith --target: several servers in one run, rounds interleaved (each round visits every target, in an order\nrotated every round and reversed every other cycle); stdout lines are `TARGET RTT` (ADDR is target 1, the\n--target addresses 2, 3, ...); per target the summary and client cost, and its p50/p99 over target 1's."
)]
pub struct BurstArgs {
    /// Echo server, IP:PORT (target 1).
    pub addr: String,
    /// Another echo server measured in the same run, rounds interleaved with the others' (repeatable).
    #[arg(long = "target", value_name = "IP:PORT")]
    pub targets: Vec<String>,
    /// Burst size: 64 (KiB), 1B, 4K, 1M.
    #[arg(value_parser = parse_size)]
    pub size: Size,
    /// Measured rounds.
    #[arg(value_parser = parse_rounds)]
    pub rounds: u64,
    /// Rounds run first and not recorded.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// burst: send while reading back (seed); rr: send all, then read all.
    #[arg(long, default_value = "burst", value_parser = ["burst", "rr"])]
    pub mode: String,
    /// Set SO_BUSY_POLL on the client socket (microseconds, default 50); needs root.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "50", value_name = "US")]
    pub busy_poll: Option<u32>,
    /// Never sleep: once the burst is sent, receive non-blocking and spin until the echo is back,
    /// instead of blocking in MSG_WAITALL as test-burst does (the RTT then leaves out the client's
    /// own wake-ups; it burns the client's CPU).
    #[arg(long)]
    pub spin: bool,
    /// Pause after connecting, seconds (the seed waited 1 s).
    #[arg(long, default_value = "1", value_parser = parse_secs, value_name = "SECS")]
    pub settle: Duration,
    /// Longest a round may take before it is an error, seconds.
    #[arg(long, default_value = "10", value_parser = parse_secs, value_name = "SECS")]
    pub timeout: Duration,
    /// Pin the client to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// TCP congestion control of the socket; `system` keeps the system default. The originals set cubic.
    #[arg(long, default_value = client::DEFAULT_CONGESTION, value_name = "NAME")]
    pub congestion: String,
    /// Do not print one RTT per line, only the summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write configuration, machine, summary and every RTT as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the client thread's disturbance (switches, migrations, longest loop gap) as one CSV
    /// row (one thread visits every target).
    #[arg(long, value_name = "FILE")]
    pub disturbance_csv: Option<PathBuf>,
}

#[derive(Parser, Debug)]
#[command(
    name = "schedlab hist",
    bin_name = "schedlab hist",
    about = "Summary and log2 histogram of numbers, one per line (the seed's mmhistogram)",
    after_help = "The summary line `min:.. avg:.. med=.. max:.. dev:.. count:..` (population std dev) works with the seed's\n`grep max | tr := \"  \" | awk '{print $6\", \"$10\", \"$2\", \"$8}'` pipeline; --csv prints that row directly."
)]
pub struct HistArgs {
    /// File with one number per line; stdin when absent or `-`.
    pub file: Option<PathBuf>,
    /// Drop the slowest PCT of the values first (e.g. 1%).
    #[arg(long, value_parser = stats::parse_percent, value_name = "PCT")]
    pub trim_slowest: Option<f64>,
    /// Print only the seed's CSV row `name, med, dev, min, max`.
    #[arg(long)]
    pub csv: bool,
    /// Name in the CSV row (default: the file name without extension, or `stdin`).
    #[arg(long)]
    pub name: Option<String>,
    /// Title printed above the summary (the seed's mmhistogram -t).
    #[arg(short = 't', long)]
    pub title: Option<String>,
    /// Width of the longest histogram bar.
    #[arg(long, default_value_t = 60)]
    pub width: usize,
    /// Write the summary as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}
