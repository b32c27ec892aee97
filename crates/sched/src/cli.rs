//! `schedlab sched`: argv -> the harness's configuration (through [`crate::config`]); the run
//! ([`crate::harness::run`]), the judge of `--repeat` ([`crate::repeat`]) and the writers
//! ([`crate::output`]) are the library's.

use std::ffi::OsString;
use std::io::Write;

use anyhow::{Context, Result};
use schedlab_report::MachineInfo;

use crate::config::{load, parse_argv, write_message_files, write_timestamps, Args};
use crate::harness::run;
use crate::output::{bench_policy_pairs, config_line, report, text, write_disturbance_csv, write_json, Report};

const HELP: &str = "\
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

/// `println!` that returns an error instead of panicking when stdout is closed (`| head`).
macro_rules! outln {
    ($($t:tt)*) => {
        writeln!(std::io::stdout(), $($t)*).context("writing to stdout")?
    };
}

/// Runs the command; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    let argv: Result<Vec<String>> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string).with_context(|| format!("argument {a:?} is not valid UTF-8")))
        .collect();
    let parsed = match argv.and_then(|a| parse_argv(&a)) {
        Ok(Some(p)) => p,
        Ok(None) => {
            write!(std::io::stdout(), "{HELP}").context("writing to stdout")?;
            return Ok(0);
        }
        Err(e) => {
            eprintln!("schedlab sched: usage error: {e:#}\nUsage: schedlab sched [client options] [-- [scheduler options]] (see --help)");
            return Ok(2);
        }
    };
    let args = load(parsed)?;
    if args.bench {
        return bench_main(&args);
    }
    for w in &args.cfg.traffic.warnings {
        eprintln!("schedlab sched: warning: {w}");
    }
    // SIGINT/SIGTERM: stop the run and print what was measured so far (the front-end kit's one
    // handler per process).
    let interrupt = schedlab_report::frontend::interrupt();
    let cfg = &args.cfg;
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    outln!("{}", config_line(&args));
    // The named workloads the traffic draws from, with their reading and provenance.
    for w in cfg.traffic.workloads() {
        outln!("{}", crate::workload::workload_line(&w));
    }
    let command: Vec<String> = std::env::args().collect();
    let n = args.repeat;
    let (mut reports, mut reasons) = (Vec::new(), Vec::new());
    let mut last = None;
    for k in 1..=n {
        let r = run(cfg, interrupt.flag())?;
        let rep = report(&args, &r, machine.clone(), command.clone());
        if n > 1 {
            let why = crate::repeat::judge(cfg, &rep);
            write!(std::io::stdout(), "{}", crate::repeat::run_line(k, n, &rep, &why)).context("writing to stdout")?;
            reasons.push(why);
        }
        reports.push(rep);
        let stop = r.interrupted;
        last = Some(r);
        if stop {
            break;
        }
    }
    let r = last.expect("--repeat is at least 1");
    let rep = reports.last().expect("one report per run");
    // Files first, so that a closed stdout (`| head`) cannot lose them.
    let files = if cfg.ts_limit > 0 { write_timestamps(&args.prefix, &r.clients)? } else { Vec::new() };
    let summary = (n > 1).then(|| crate::repeat::summarise(&reports, &reasons));
    if let Some(path) = &args.json {
        match &summary {
            Some(s) => write_json(
                path,
                &crate::repeat::Repeat {
                    schema: Default::default(),
                    runs: reports.clone(),
                    reasons: reasons.clone(),
                    summary: s.clone(),
                },
            )?,
            None => write_json(path, rep)?,
        }
    }
    if let Some(path) = &args.disturbance_csv {
        write_disturbance_csv(path, &reports.iter().collect::<Vec<&Report>>())?;
    }
    write_message_files(&args, &r)?;
    if r.interrupted {
        outln!("interrupted (Ctrl-C): partial results after {:.3} s", r.elapsed.secs());
    }
    match &summary {
        Some(s) => write!(std::io::stdout(), "{}", crate::repeat::text(s)).context("writing to stdout")?,
        None => write!(std::io::stdout(), "{}", text(rep)).context("writing to stdout")?,
    }
    if cfg.ts_limit > 0 {
        let truncated: u64 = r.clients.iter().map(|c| c.timestamps_truncated).sum();
        outln!(
            "timestamps{}: {} ({} records{})",
            if n > 1 { " (the last run)" } else { "" },
            files.join(", "),
            r.clients.iter().map(|c| c.timestamps.len()).sum::<usize>(),
            if truncated > 0 { format!("; {truncated} later packets not logged, raise --ts-limit") } else { String::new() }
        );
    }
    Ok(if r.interrupted { schedlab_report::frontend::exit::INTERRUPTED } else { 0 })
}

fn bench_main(args: &Args) -> Result<i32> {
    let machine = MachineInfo::collect();
    outln!("{}", machine.line());
    let rows = bench_policy_pairs(|l| writeln!(std::io::stdout(), "{l}")).context("writing to stdout")?;
    if let Some(path) = &args.json {
        let v = serde_json::json!({ "machine": machine, "policy_pairs": rows });
        write_json(path, &v)?;
    }
    Ok(0)
}
