//! `schedlab sched`'s command line: argv -> [`Argv`] (the seed's options, parsed by
//! [`crate::config::parse_argv`]), and the help text. Nothing here reads a file, runs or prints:
//! the command's flow is [`crate::app`]'s.

use std::ffi::OsString;

use anyhow::{Context, Result};

use crate::config::{parse_argv, Argv};

/// What a `schedlab sched` command line asks for.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// `-h`, `--help` (before or after `--`): print [`HELP`].
    Help,
    /// A run (or `--bench`) with these options.
    Run(Box<Argv>),
}

/// Parses a command line (`args[0]` is the command name). `Err`: a usage error (exit 2), which
/// names the option.
pub fn parse(args: &[OsString]) -> Result<Parsed> {
    let argv: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string).with_context(|| format!("argument {a:?} is not valid UTF-8")))
        .collect::<Result<_>>()?;
    Ok(match parse_argv(&argv)? {
        Some(a) => Parsed::Run(Box::new(a)),
        None => Parsed::Help,
    })
}

/// The one-line usage said after a usage error.
pub const USAGE: &str = "Usage: schedlab sched [client options] [-- [scheduler options]] (see --help)";

/// `schedlab sched --help`.
pub const HELP: &str = "\
schedlab sched — the real multi-threaded scheduler harness

Client threads generate traffic from a program; each feeds its own bounded lock-free ring; one
scheduler thread polls the rings, enqueues the packets into the policy and releases them at the
emulated link rate; each client polls for the marks and counts its packets as transmitted.

Usage: schedlab sched [client options] [-- [scheduler options]]
       schedlab sched --bench          (policy costs; throughput: scripts/sched-crosscheck.sh)

Client options:
  -t N        number of client threads (default 1)
  -f PATH     traffic program (default ./sched.txt; without it an embedded default program runs)
  -q SIZE     ring size between each client and the scheduler, packets (default 100)
  -b BW       emulated link rate, bits/s with k/M/G/T suffixes, e.g. 20M, 10T (default unlimited;
              'unlimited' also accepted)
  -i TIME     scheduler polling interval (bare number: us; ns/us/ms/s suffixes; default 5)
  -c TIME     client polling interval for the marks (same units; default 5)
  -p PREFIX   timestamp files are PREFIXqueue-i.txt (default: no prefix, current directory)
  -a CPU      pin the scheduler thread to this CPU
  --client-cpus LIST    pin client i to LIST[i % len] (e.g. 0,2-3); default with -a: the allowed
              CPUs other than the scheduler's, round robin (never the scheduler's CPU while
              another is allowed); without -a clients are not pinned. Each client reports the
              CPU it asked for and the CPU and mask it got.
  -k N        only clients 0..N-1 run their programs (the others exist, idle; default all)
  -B N        at most N packets released per scheduler pass (default 500)
  -D          distributed mode: an idle scheduler thread releases the scheduler lock and sleeps
              on a notifier; clients try-lock the scheduler and run it themselves, and wake the
              scheduler thread when they spend too long scheduling
  --lock KIND     -D's lock: sem (POSIX semaphore, default as the original), mutex, spinlock,
                  futex, tas, ttas, ticket (crates/prims, the locks `schedlab trylock` measures)
  --notify KIND   -D's wake-up: eventfd (default as the original), pipe, futex, sem, condvar,
                  unix (the mechanisms `schedlab notify` measures)
  -d, --duration TIME   stop after TIME at the latest (bare number: seconds)
  --json FILE           write the results as JSON ('-' for stdout)
  --ts-limit N          timestamp records kept per client (default 100000; 0 writes no files)
  --no-timestamps       same as --ts-limit 0
  --seed N              seed of the clients' generators (message lengths, Poisson gaps; default 1)
  --messages FILE       one line per message (burst): client, packets, packet bytes, cli_enq of
                        its first packet, sch_enq of its first, sch_deq and cli_deq of its last
                        (ns), dropped (1 if some packet was refused or it was not delivered)
  --trace-out FILE      the arrivals in 'schedlab sim --trace' format (TIME_ns LENGTH CLIENT)
  --repeat N            run the configuration N times (same seed): one line per run, then per
                        client and in total the median, min, max and largest deviation from the
                        median of Mb/s, Mpps and delay p50/p99 over the runs kept; a run is set
                        aside as disturbed when the scheduler thread stalled longer than a ring
                        fills at its offered rate, or a client longer than its ring's packets
                        take to pass (docs/guide/disturbance.md); --json then writes every run
                        and the summary (schedlab.sched-repeat/1); files of the last run
  --disturbance-csv FILE   one row per measuring thread per run (run, thread, switches,
                        migrations, longest loop gap, ...)

Scheduler options (after --):
  -flowsets W:L:N,...   N flows of weight W and maximum packet length L bytes, numbered
                        consecutively; client i is flow i
  -flows N              N flows of weight 1 (as -flowsets 1:1500:N)
  -qmax N               scheduler queue limit, packets inside the policy (default 20 x flows,
                        flows = max(configured flows, clients)); beyond it taken packets are
                        dropped, counted, and marked D in the timestamp files
  -qmin N               with -qmax: once full, refuse until the policy is down to N packets
                        (hysteresis; default -qmax - 1, plain tail drop)
  -alg NAME             any policy of the vocabulary (docs/guide/policies.md); default fifo:
                        fifo | rr (= drr: deficit round robin, quantum W x L) | wf2qp | qfq |
                        mrr (the report's message round robin) | rr' (RR', new messages first) |
                        alpha (with -alpha X) or alpha:X | sf (shortest first) |
                        track:LOW:HIGH[:GAIN] (alpha tracking the queue) | track-insert:LOW:HIGH |
                        prio (per-message alpha: the traffic file's alpha:X column);
                        for every policy but fifo and the flow ones, a client's burst is one message
  -alpha X              alpha for -alg alpha (default 10, the report's recommendation)

Traffic file: lines 'DURATION RATE [PKTLEN [BURST]] [poisson] [alpha:X]' (e.g. '1s 100M 64 1'),
'thread N' or 'thread all' to choose the thread the next lines program, '#' comments. BURST may be
a message length distribution 'dist:LOW-HIGH:WEIGHT,LEN:WEIGHT,...' ('dist:report' =
1-5:90,20:10); a last word 'poisson' spaces bursts by exponential gaps at the entry's mean rate,
e.g. '2s 300M 1500 dist:1-5:90,20:10 poisson'; 'alpha:X' gives the entry's messages alpha X
under -alg prio.

Timestamp files (one line per packet through the ring, TAB separated, times from CLOCK_MONOTONIC
in ns): cli_enq (absolute), sch_enq - cli_enq, sch_deq - sch_enq, cli_deq - sch_deq, pkt_len,
flags ('D' = dropped by the scheduler).

Example: schedlab sched -t 4 -f sched.txt -b 20M -q 100 -i 20 -c 5 -- -flowsets 100:1500:1,1:1500:16 -alg rr
";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Parsed> {
        parse(&std::iter::once("sched").chain(s.split_whitespace()).map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn argv_becomes_options_or_help() {
        let Parsed::Run(a) = parse_str("-t 3 --repeat 4 --disturbance-csv d.csv -- -alg sf").unwrap() else {
            panic!("a run was asked for")
        };
        assert_eq!((a.threads, a.repeat), (3, 4));
        assert_eq!(a.disturbance_csv.as_deref(), Some(std::path::Path::new("d.csv")));
        assert!(matches!(parse_str("--help").unwrap(), Parsed::Help));
        assert!(matches!(parse_str("-t 2 -- -h").unwrap(), Parsed::Help));
        assert!(format!("{:#}", parse_str("--repeat 0").unwrap_err()).contains("at least 1"));
        use std::os::unix::ffi::OsStringExt;
        let bad = vec![OsString::from("sched"), OsString::from_vec(vec![0xff])];
        assert!(format!("{:#}", parse(&bad).unwrap_err()).contains("not valid UTF-8"));
    }
}
