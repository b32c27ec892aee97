//! `schedlab rdma`'s command lines into plain data: the benchmark (`schedlab rdma [SERVER]
//! [options]`, the seed's `write_bw` options) into a [`BenchArgs`] and its [`BenchConfig`], the
//! two-flow analysis (`schedlab rdma share A.txt B.txt`) into a [`ShareArgs`], with their help
//! texts. [`crate::app`] runs them.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};

use crate::backend::BackendKind;
use crate::bench::BenchConfig;
use crate::record;
use crate::types::{MsgSize, Op, PollMode};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BackendArg {
    /// libibverbs (needs an RDMA device and a build with the rdma-verbs feature)
    Verbs,
    /// the same work-request/completion semantics over TCP (any machine; output labelled EMULATED)
    Emulated,
}

const BENCH_EXAMPLES: &str = "\
Examples (the seed's two elephant flows; run the servers first):
  receiver:  schedlab rdma -F -e -s 1000000000 -n 1000 -O 0
             schedlab rdma -F -e -s 1000000 -n 1000000 -O 0 -p 8888
  sender:    schedlab rdma RECEIVER_IP -F -s 1000000000 -n 1000 -e -O 0 -o out_A.txt > result_A.txt
             schedlab rdma RECEIVER_IP -F -s 1000000 -n 1000000 -e -O 0 -p 8888 -o out_B.txt > result_B.txt
  analysis:  schedlab rdma share out_A.txt out_B.txt --window 40ms --svg share.svg
Without an RDMA device add --backend emulated to every benchmark command.";

/// perftest-style RDMA flow benchmark with per-message timestamps.
#[derive(Debug, Parser)]
#[command(name = "schedlab rdma", after_help = BENCH_EXAMPLES)]
pub struct BenchArgs {
    /// Server address to connect to; without it this end is the server and waits for one client
    pub server: Option<String>,
    /// Accepted for the seed's command lines: timestamps come from the monotonic clock, so no
    /// CPU-frequency check is needed
    #[arg(short = 'F')]
    pub ignore_cpu_freq: bool,
    /// Operation: 0 = WRITE, 1 = READ, 2 = WRITE_IMM, 3 = SEND
    #[arg(short = 'O', default_value = "0", value_parser = parse_op)]
    pub op: Op,
    /// Event-triggered completion polling (default: busy polling)
    #[arg(short = 'e')]
    pub events: bool,
    /// Bytes per message (suffixes K, M, G allowed)
    #[arg(short = 's', default_value = "65536", value_parser = parse_size)]
    pub size: MsgSize,
    /// Number of messages
    #[arg(short = 'n', default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,
    /// TCP port of the connection setup
    #[arg(short = 'p', default_value_t = 18515)]
    pub port: u16,
    /// Per-message file in the original's format from its first byte: Task_cnt, completion time
    /// (us since start), latency (us). The run's metadata (backend, op, size, count, polling) goes
    /// to a sidecar FILE.json next to it, which `rdma share` reads
    #[arg(short = 'o')]
    pub out: Option<PathBuf>,
    /// Put the metadata on a first `# schedlab-rdma ...` line of the -o file instead of the
    /// sidecar (schedlab's older form; breaks scripts that skip exactly one header line)
    #[arg(long, requires = "out")]
    pub meta_line: bool,
    /// Receives kept posted at the receiver for SEND and WRITE_IMM
    #[arg(short = 't', default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub depth: u32,
    /// RDMA device name (default: the first one)
    #[arg(short = 'd')]
    pub device: Option<String>,
    /// Device port
    #[arg(short = 'i', default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..))]
    pub ib_port: u8,
    /// GID index (RoCE)
    #[arg(short = 'x', default_value_t = 0)]
    pub gid_index: u32,
    /// Which backend runs the queue pair
    #[arg(long, value_enum, default_value = "verbs")]
    pub backend: BackendArg,
    /// Address the server listens on
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: IpAddr,
    /// Longest wait in seconds for connection setup or any one completion
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Also write the result (with machine and thread facts) as JSON
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the measuring thread's disturbance (switches, migrations, longest loop gap) as one
    /// CSV row
    #[arg(long, value_name = "FILE")]
    pub disturbance_csv: Option<PathBuf>,
}

/// How two concurrent flows shared the link (the seed's method, and more).
#[derive(Debug, Parser)]
#[command(name = "schedlab rdma share")]
pub struct ShareArgs {
    /// First flow's -o file
    pub a: PathBuf,
    /// Second flow's -o file
    pub b: PathBuf,
    /// Bytes per message of flow A (default: from the file's sidecar A.json or schedlab header line)
    #[arg(long, value_parser = parse_size)]
    pub size_a: Option<MsgSize>,
    /// Bytes per message of flow B
    #[arg(long, value_parser = parse_size)]
    pub size_b: Option<MsgSize>,
    /// Messages flow A was asked for (default: from the header; only reported)
    #[arg(long)]
    pub count_a: Option<u64>,
    /// Messages flow B was asked for
    #[arg(long)]
    pub count_b: Option<u64>,
    /// Window of the throughput-over-time series (us, ms or s; a bare number is ms)
    #[arg(long, default_value = "40ms", value_parser = parse_window_us)]
    pub window: f64,
    /// Write the analysis as JSON
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the windowed throughput as CSV
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write an SVG plot of both flows' throughput over time
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

fn parse_op(s: &str) -> Result<Op, String> {
    s.parse().map_err(|e: crate::types::ParseError| e.to_string())
}

fn parse_size(s: &str) -> Result<MsgSize, String> {
    s.parse().map_err(|e: crate::types::ParseError| e.to_string())
}

/// A window length in microseconds: `40ms`, `500us`, `1s`, or a bare number of milliseconds.
pub fn parse_window_us(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e6)
    } else {
        (t, 1e3)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && (v * mult).is_finite() => Ok(v * mult),
        _ => Err(format!("'{s}' is not a positive duration (examples: 40ms, 500us, 1s)")),
    }
}

/// One `rdma` or `rdma share` command line, parsed: nothing is run, printed or opened.
#[derive(Debug)]
pub enum RdmaCommand {
    Bench(BenchArgs),
    Share(ShareArgs),
}

/// Parses a command line (`args[0]` is the command name). Help, version and usage errors are
/// `Err` holding the `clap::Error`.
pub fn parse_args(args: Vec<OsString>) -> Result<RdmaCommand> {
    if args.get(1).is_some_and(|a| a == "share") {
        let rest: Vec<OsString> =
            std::iter::once(OsString::from("schedlab rdma share")).chain(args.into_iter().skip(2)).collect();
        return Ok(RdmaCommand::Share(ShareArgs::try_parse_from(rest)?));
    }
    Ok(RdmaCommand::Bench(BenchArgs::try_parse_from(args)?))
}

/// The benchmark's configuration from its parsed command line; refuses bad values and, before
/// anything is measured, output files that could not be written afterwards.
pub fn bench_config(a: &BenchArgs) -> Result<BenchConfig> {
    if !(a.timeout > 0.0 && a.timeout.is_finite()) {
        bail!("--timeout must be a positive number of seconds (got {})", a.timeout);
    }
    if a.server.is_none() && a.out.is_some() {
        bail!("-o records the sender's completions: give it on the client (the command with the server address)");
    }
    check_outputs(a)?;
    Ok(BenchConfig {
        server: a.server.clone(),
        bind: a.bind,
        port: a.port,
        op: a.op,
        size: a.size,
        count: a.count,
        depth: a.depth,
        poll: if a.events { PollMode::Event } else { PollMode::Busy },
        backend: match a.backend {
            BackendArg::Verbs => BackendKind::Verbs,
            BackendArg::Emulated => BackendKind::Emulated,
        },
        device: a.device.clone(),
        ib_port: a.ib_port,
        gid_index: a.gid_index,
        timeout: Duration::from_secs_f64(a.timeout),
    })
}

/// Refuses, before anything is measured, output files that could not be written afterwards.
fn check_outputs(a: &BenchArgs) -> Result<()> {
    let side = a.out.as_deref().filter(|_| !a.meta_line).map(record::sidecar_path);
    if let (Some(j), Some(s)) = (&a.json, &side) {
        if j == s {
            bail!("--json {} is the sidecar of -o (it gets the flow's metadata): choose another --json name", j.display());
        }
    }
    let files = [
        ("-o", a.out.as_deref()),
        ("the -o sidecar", side.as_deref()),
        ("--json", a.json.as_deref()),
        ("--disturbance-csv", a.disturbance_csv.as_deref()),
    ];
    for (what, path) in files {
        if let Some(p) = path.filter(|p| p.as_os_str() != "-") {
            record::check_writable(p).with_context(|| format!("{what} file {} cannot be written", p.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn windows_parse_with_units() {
        assert_eq!(parse_window_us("40ms"), Ok(40_000.0));
        assert_eq!(parse_window_us("500us"), Ok(500.0));
        assert_eq!(parse_window_us("2s"), Ok(2e6));
        assert_eq!(parse_window_us("40"), Ok(40_000.0));
        assert!(parse_window_us("0ms").is_err());
        assert!(parse_window_us("fast").is_err());
        // Fuzz regression (fuzz/regressions/units/window_overflow): a finite number whose unit
        // scaling overflows gave an infinite window.
        assert!(parse_window_us("3e305").is_err());
        assert!(parse_window_us("1e303s").is_err());
        assert_eq!(parse_window_us("1e300"), Ok(1e303));
    }

    #[test]
    fn seed_command_lines_parse() {
        let srv = BenchArgs::try_parse_from(["rdma", "-F", "-e", "-s", "1000000000", "-n", "1000", "-O", "0"]).unwrap();
        assert!(srv.server.is_none() && srv.events && srv.ignore_cpu_freq);
        assert_eq!((srv.size.bytes(), srv.count, srv.op, srv.port), (1_000_000_000, 1000, Op::Write, 18515));
        let cli = BenchArgs::try_parse_from([
            "rdma",
            "10.0.0.2",
            "-F",
            "-s",
            "1000000",
            "-n",
            "1000000",
            "-e",
            "-O",
            "0",
            "-p",
            "8888",
            "-o",
            "out_B.txt",
        ])
        .unwrap();
        assert_eq!(cli.server.as_deref(), Some("10.0.0.2"));
        assert_eq!((cli.port, cli.out.as_deref()), (8888, Some(Path::new("out_B.txt"))));
        let perftest = BenchArgs::try_parse_from(["rdma", "-d", "mlx5_0", "-i", "2", "-x", "3", "-t", "64", "-O", "3"]).unwrap();
        assert_eq!(
            (perftest.device.as_deref(), perftest.ib_port, perftest.gid_index, perftest.depth),
            (Some("mlx5_0"), 2, 3, 64)
        );
        assert_eq!(perftest.op, Op::Send);
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in [["rdma", "-O", "4"], ["rdma", "-s", "0"], ["rdma", "-n", "0"], ["rdma", "-t", "0"]] {
            assert!(BenchArgs::try_parse_from(bad).is_err(), "{bad:?}");
        }
        let e = BenchArgs::try_parse_from(["rdma", "-O", "7"]).unwrap_err().to_string();
        assert!(e.contains("unknown RDMA operation '7'"), "{e}");
        let a = BenchArgs::try_parse_from(["rdma", "-o", "x.txt"]).unwrap();
        assert!(bench_config(&a).unwrap_err().to_string().contains("-o records the sender"));
        let a = BenchArgs::try_parse_from(["rdma", "h", "-o", "/nonexistent-dir/x.txt"]).unwrap();
        let e = format!("{:#}", bench_config(&a).unwrap_err());
        assert!(e.contains("-o file /nonexistent-dir/x.txt cannot be written"), "{e}");
        let a = BenchArgs::try_parse_from(["rdma", "h", "-o", "x.txt", "--json", "x.txt.json"]).unwrap();
        assert!(bench_config(&a).unwrap_err().to_string().contains("sidecar"));
        assert!(BenchArgs::try_parse_from(["rdma", "h", "--meta-line"]).is_err(), "--meta-line needs -o");
    }
}
