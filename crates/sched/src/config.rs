//! The seed's command line as a library: `schedlab sched`'s argv (client options, then `--` and
//! the scheduler's single-dash long options) parsed into an [`Argv`], the traffic program loaded
//! into the harness's [`Config`] ([`load`] -> [`Args`]), and the files a run writes (timestamps,
//! `--messages`, `--trace-out`). `schedlab sched` (its `cli` module), `schedlab predict` and the
//! fuzz targets all take the seed's options through here.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use schedlab_policy::{Dialect, FlowWeight, PolicySpec};

use schedlab_prims::chan::Mechanism;
use schedlab_prims::locks::LockKind;

use crate::harness::{alg_error, ClientResult, Config, RunResult};
use crate::traffic::{self, Traffic};
use crate::units::{parse_bps, parse_duration, Bps, Nanos};

/// The parsed command line with its traffic program loaded (`schedlab sched` and `schedlab predict`).
#[derive(Debug)]
pub struct Args {
    pub cfg: Config,
    pub traffic_source: String,
    pub prefix: String,
    pub json: Option<PathBuf>,
    pub bench: bool,
    /// `--messages FILE`: one line per message.
    pub messages: Option<PathBuf>,
    /// `--trace-out FILE`: the arrivals in `sim --trace` format.
    pub trace_out: Option<PathBuf>,
    /// `--repeat N`: the configuration run N times with the same seed (at least 1).
    pub repeat: usize,
    /// `--disturbance-csv FILE`: one row per measuring thread per run.
    pub disturbance_csv: Option<PathBuf>,
}

fn value<'a>(it: &mut impl Iterator<Item = &'a String>, opt: &str, inline: Option<&'a str>) -> Result<&'a str> {
    match inline {
        Some(v) => Ok(v),
        // `--` ends the client options, so it is never a value: `--json -- -alg rr` forgot the file.
        None => match it.next().map(|s| s.as_str()) {
            Some("--") => bail!("option {opt} needs a value before '--' (see --help)"),
            Some(v) => Ok(v),
            None => bail!("option {opt} needs a value (see --help)"),
        },
    }
}

fn parse_count(v: &str, opt: &str, what: &str, max: usize) -> Result<usize> {
    let n: i64 = v.trim().parse().with_context(|| format!("{opt} '{v}': {what} must be a whole number"))?;
    if n < 1 {
        bail!("{opt} {v}: {what} must be at least 1");
    }
    if n as u64 > max as u64 {
        bail!("{opt} {v}: {what} must be at most {max}");
    }
    Ok(n as usize)
}

/// Limits that keep memory bounded (a ring slot is 64 bytes, a timestamp record 48).
const MAX_THREADS: usize = 4096;
const MAX_QUEUE: usize = 1 << 20;
const MAX_BATCH: usize = 1 << 20;
const MAX_TS_LIMIT: usize = 10_000_000;
const MAX_QLIMIT: u64 = 1 << 32;
const MAX_REPEAT: usize = 10_000;

/// `W:L:N,...` -> one `FlowWeight` per flow.
pub fn parse_flowsets(s: &str) -> Result<Vec<FlowWeight>> {
    let mut flows = Vec::new();
    for (k, set) in s.split(',').enumerate() {
        let parts: Vec<&str> = set.split(':').collect();
        let ctx = || format!("-flowsets entry {} '{set}'", k + 1);
        if parts.len() != 3 {
            bail!("{}: expected WEIGHT:MAXLEN:FLOWS, e.g. 1:1500:16", ctx());
        }
        let num = |i: usize, name: &str, max: u64| -> Result<u32> {
            let v: u64 = parts[i].parse().with_context(|| format!("{}: {name} '{}' is not a whole number", ctx(), parts[i]))?;
            if v == 0 || v > max {
                bail!("{}: {name} must be in 1..={max}", ctx());
            }
            Ok(v as u32)
        };
        let weight = num(0, "WEIGHT", 1 << 16)?;
        let max_len = num(1, "MAXLEN", u64::from(traffic::MAX_PKT_LEN))?;
        let n = num(2, "FLOWS", 1 << 16)?;
        flows.extend((0..n).map(|_| FlowWeight::new(weight, max_len)));
    }
    Ok(flows)
}

/// The command line, parsed without touching any file: every error here is a usage error
/// (exit 2). Fuzzable: any `&[String]` gives `Ok` or `Err`, never a panic.
#[derive(Debug, Clone)]
pub struct Argv {
    pub threads: usize,
    pub file: Option<PathBuf>,
    pub queue: usize,
    pub bandwidth: Option<Bps>,
    pub sched_poll: Nanos,
    pub client_poll: Nanos,
    pub prefix: String,
    pub sched_cpu: Option<usize>,
    pub client_cpus: Option<Vec<usize>>,
    pub batch: usize,
    pub distributed: bool,
    pub lock: LockKind,
    pub notify: Mechanism,
    pub active: Option<usize>,
    pub duration_cap: Option<Nanos>,
    pub json: Option<PathBuf>,
    pub ts_limit: usize,
    pub bench: bool,
    pub flows: Vec<FlowWeight>,
    pub alg_name: String,
    pub alg: PolicySpec,
    pub qmax: Option<u64>,
    pub qmin: Option<u64>,
    pub seed: u64,
    pub messages: Option<PathBuf>,
    pub trace_out: Option<PathBuf>,
    /// `--repeat N` (1: one run; `schedlab predict` takes its own `--repeat` before this parser).
    pub repeat: usize,
    pub disturbance_csv: Option<PathBuf>,
}

/// `0,2-3,5` -> `[0, 2, 3, 5]` (order kept, duplicates refused).
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let num = |v: &str| -> Result<usize> {
            let n: usize = v.trim().parse().with_context(|| format!("--client-cpus '{s}': '{v}' is not a CPU number"))?;
            if n >= libc::CPU_SETSIZE as usize {
                bail!("--client-cpus '{s}': CPU {n} is beyond the largest CPU number {}", libc::CPU_SETSIZE - 1);
            }
            Ok(n)
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(part)?;
                (n, n)
            }
        };
        if hi < lo {
            bail!("--client-cpus '{s}': range {part} ends below its start");
        }
        for c in lo..=hi {
            if cpus.contains(&c) {
                bail!("--client-cpus '{s}': CPU {c} is listed twice");
            }
            cpus.push(c);
        }
    }
    Ok(cpus)
}

fn parse_queue_limit(v: &str, opt: &str) -> Result<u64> {
    let n: u64 = v.trim().parse().with_context(|| format!("{opt} '{v}': give a number of packets"))?;
    if n == 0 || n > MAX_QLIMIT {
        bail!("{opt} {v}: the scheduler queue limit must be in 1..={MAX_QLIMIT} packets");
    }
    Ok(n)
}

/// Parses the seed's command line (`args` without the command name). `Ok(None)`: help asked.
pub fn parse_argv(argv: &[String]) -> Result<Option<Argv>> {
    let mut threads = 1usize;
    let mut file: Option<PathBuf> = None;
    let mut queue = 100usize;
    let mut bandwidth: Option<Bps> = None;
    let mut sched_poll = Nanos(5_000);
    let mut client_poll = Nanos(5_000);
    let mut prefix = String::new();
    let mut sched_cpu = None;
    let mut client_cpus = None;
    let mut batch = 500usize;
    let mut distributed = false;
    let mut lock = LockKind::Sem;
    let mut notify = Mechanism::Eventfd;
    let mut lock_given = None;
    let mut active = None;
    let mut duration_cap = None;
    let mut json = None;
    let mut ts_limit = 100_000usize;
    let mut bench = false;
    let mut seed = 1u64;
    let mut messages = None;
    let mut trace_out = None;
    let mut repeat = 1usize;
    let mut disturbance_csv = None;
    let mut flowsets: Option<Vec<FlowWeight>> = None;
    let mut alg_name = "fifo".to_string();
    let mut alpha = None;
    let mut qmax = None;
    let mut qmin = None;
    let mut in_sched = false;
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            in_sched = true;
            continue;
        }
        // `--opt=value` and `-xVALUE` forms.
        // (`-xVALUE` only when the option letter is one ASCII character: `-é` is an unknown option.)
        let (opt, inline) = match arg.split_once('=') {
            Some((o, v)) if o.starts_with("--") || (in_sched && o.starts_with('-')) => (o, Some(v)),
            _ if !in_sched
                && arg.len() > 2
                && arg.starts_with('-')
                && !arg.starts_with("--")
                && arg.as_bytes()[1].is_ascii_alphabetic()
                && arg.is_char_boundary(2) =>
            {
                (&arg[..2], Some(&arg[2..]))
            }
            _ => (arg.as_str(), None),
        };
        if in_sched {
            match opt.strip_prefix('-').unwrap_or("") {
                "flowsets" => flowsets = Some(parse_flowsets(value(&mut it, opt, inline)?)?),
                "flows" => {
                    let v = value(&mut it, opt, inline)?;
                    let n = parse_count(v, "-flows", "the number of flows", 1 << 16)?;
                    flowsets = Some(vec![FlowWeight::new(1, traffic::DEFAULT_PKT_LEN); n]);
                }
                "alg" => alg_name = value(&mut it, opt, inline)?.to_string(),
                "alpha" => {
                    let v = value(&mut it, opt, inline)?;
                    alpha = Some(v.parse::<f64>().with_context(|| format!("-alpha '{v}' is not a number"))?);
                }
                "qmax" => qmax = Some(parse_queue_limit(value(&mut it, opt, inline)?, "-qmax")?),
                "qmin" => qmin = Some(parse_queue_limit(value(&mut it, opt, inline)?, "-qmin")?),
                "h" | "-help" | "help" => return Ok(None),
                "len" | "n" | "d" | "shmem" | "burst" => bail!(
                    "scheduler option '{arg}' belongs to the original's stand-alone scheduler test and has no \
                     meaning in schedlab sched (see the README's compatibility table)"
                ),
                _ => bail!("unknown scheduler option '{arg}' (after --): use -flowsets, -flows, -alg, -alpha, -qmax, -qmin"),
            }
            continue;
        }
        match opt {
            "-h" | "--help" => return Ok(None),
            "-t" => threads = parse_count(value(&mut it, opt, inline)?, "-t", "the number of client threads", MAX_THREADS)?,
            "-k" => {
                let v = value(&mut it, opt, inline)?;
                active = Some(v.trim().parse::<usize>().with_context(|| format!("-k '{v}': give a number of active clients"))?);
            }
            "-f" => file = Some(PathBuf::from(value(&mut it, opt, inline)?)),
            "-q" => queue = parse_count(value(&mut it, opt, inline)?, "-q", "the queue size", MAX_QUEUE)?,
            "-b" => {
                let v = value(&mut it, opt, inline)?;
                bandwidth = match v {
                    "unlimited" | "inf" => None,
                    _ => {
                        let b = parse_bps(v).with_context(|| format!("-b {v}"))?;
                        if b.0 == 0 {
                            bail!("-b 0: the link rate must be positive (write -b unlimited for no limit)");
                        }
                        Some(b)
                    }
                }
            }
            "-i" => sched_poll = parse_duration(value(&mut it, opt, inline)?, 1000).context("-i")?,
            "-c" => client_poll = parse_duration(value(&mut it, opt, inline)?, 1000).context("-c")?,
            "-p" => prefix = value(&mut it, opt, inline)?.to_string(),
            "-a" => {
                let v = value(&mut it, opt, inline)?;
                sched_cpu = Some(v.trim().parse::<usize>().with_context(|| format!("-a '{v}': give a CPU number"))?);
            }
            "--client-cpus" => client_cpus = Some(parse_cpu_list(value(&mut it, opt, inline)?)?),
            "-B" => batch = parse_count(value(&mut it, opt, inline)?, "-B", "the dequeue batch limit", MAX_BATCH)?,
            "-D" => {
                if inline.is_some_and(|v| !v.is_empty()) {
                    bail!("-D takes no value");
                }
                distributed = true
            }
            "--lock" => {
                let v = value(&mut it, opt, inline)?;
                lock = v.parse().map_err(|e| anyhow::anyhow!("--lock: {e}"))?;
                lock_given = Some("--lock");
            }
            "--notify" => {
                let v = value(&mut it, opt, inline)?;
                notify = v.parse().map_err(|e| anyhow::anyhow!("--notify: {e}"))?;
                lock_given = Some("--notify");
            }
            "-d" | "--duration" => {
                let v = value(&mut it, opt, inline)?;
                let d = parse_duration(v, 1_000_000_000).with_context(|| format!("{opt} {v}"))?;
                if d.0 == 0 {
                    bail!("{opt} {v}: the duration must be positive");
                }
                duration_cap = Some(d);
            }
            "--json" => json = Some(PathBuf::from(value(&mut it, opt, inline)?)),
            "--seed" => {
                let v = value(&mut it, opt, inline)?;
                seed = v.parse().with_context(|| format!("--seed '{v}': give a whole number in 0..=2^64-1"))?;
            }
            "--messages" => messages = Some(PathBuf::from(value(&mut it, opt, inline)?)),
            "--trace-out" => trace_out = Some(PathBuf::from(value(&mut it, opt, inline)?)),
            "--disturbance-csv" => disturbance_csv = Some(PathBuf::from(value(&mut it, opt, inline)?)),
            "--repeat" => repeat = parse_count(value(&mut it, opt, inline)?, opt, "the number of runs", MAX_REPEAT)?,
            "--ts-limit" => {
                let v = value(&mut it, opt, inline)?;
                ts_limit = v.parse().with_context(|| format!("--ts-limit '{v}': give a number of records"))?;
                if ts_limit > MAX_TS_LIMIT {
                    bail!("--ts-limit {v}: at most {MAX_TS_LIMIT} records per client");
                }
            }
            "--no-timestamps" => ts_limit = 0,
            "--bench" => bench = true,
            _ => bail!("unknown option '{arg}' (scheduler options go after --; see --help)"),
        }
    }
    if let (Some(o), false) = (lock_given, distributed) {
        bail!("{o} chooses a primitive of the distributed mode: add -D");
    }
    if alpha.is_some() && !alg_name.trim().eq_ignore_ascii_case("alpha") {
        bail!("-alpha is only used with -alg alpha");
    }
    let alg = PolicySpec::parse_with_alpha(&alg_name, alpha, Dialect::Sched).map_err(alg_error)?;
    let flows = match (alg.flow_level(), flowsets) {
        (true, Some(f)) => f,
        (true, None) if bench => Vec::new(),
        (true, None) => {
            bail!("-alg {alg_name} needs -flowsets WEIGHT:MAXLEN:FLOWS (e.g. -- -flowsets 1:1500:{threads} -alg {alg_name})")
        }
        (false, f) => f.unwrap_or_default(),
    };
    if let (Some(hi), Some(lo)) = (qmax, qmin) {
        if lo >= hi {
            bail!("-qmin {lo} must be below -qmax {hi} (the scheduler refuses packets from -qmax until it is down to -qmin)");
        }
    }
    if let Some(k) = active {
        if k > threads {
            bail!("-k {k}: only {threads} client thread(s) (-t)");
        }
    }
    Ok(Some(Argv {
        threads,
        file,
        queue,
        bandwidth,
        sched_poll,
        client_poll,
        prefix,
        sched_cpu,
        client_cpus,
        batch,
        distributed,
        lock,
        notify,
        active,
        duration_cap,
        json,
        ts_limit,
        bench,
        flows,
        alg_name,
        alg,
        qmax,
        qmin,
        seed,
        messages,
        trace_out,
        repeat,
        disturbance_csv,
    }))
}

/// The scheduler queue limits: `-qmax` (default 20 per flow, as the original), the flows being the
/// configured ones or one per client when there are none; `-qmin` (default `qmax - 1`, plain tail
/// drop; lower values add the original's hysteresis: once full, refuse until down to `-qmin`).
pub fn queue_limits(qmax: Option<u64>, qmin: Option<u64>, flows: usize, threads: usize) -> (u64, u64) {
    let per = flows.max(threads).max(1) as u64;
    let hi = qmax.unwrap_or(20 * per);
    let lo = qmin.unwrap_or(hi - 1).min(hi - 1);
    (hi, lo)
}

/// Parses the command line and loads the traffic file (used by `schedlab predict` too).
pub fn parse_args(argv: &[String]) -> Result<Option<Args>> {
    match parse_argv(argv)? {
        None => Ok(None),
        Some(a) => load(a).map(Some),
    }
}

/// Loads the traffic program and completes the configuration (used by `schedlab predict` too).
pub fn load(a: Argv) -> Result<Args> {
    let threads = a.threads;
    let (traffic, traffic_source) = if a.bench {
        (Traffic { programs: vec![Vec::new(); threads], warnings: vec![] }, "--bench".to_string())
    } else {
        match &a.file {
            Some(path) => (traffic::load(path, threads)?, path.display().to_string()),
            None if Path::new("sched.txt").exists() => (traffic::load(Path::new("sched.txt"), threads)?, "sched.txt".to_string()),
            None => (
                traffic::parse(traffic::DEFAULT_PROGRAM, "<embedded default>", threads)?,
                "<embedded default program: every client 1s at 100 Mb/s, 1500-byte packets, bursts of 1>".to_string(),
            ),
        }
    };
    let mut traffic = traffic;
    if a.alg != PolicySpec::Prio && traffic.programs.iter().flatten().any(|s| s.alpha.is_some()) {
        traffic
            .warnings
            .push(format!("the traffic file's alpha:X columns are only used by -alg prio; -alg {} ignores them", a.alg));
    }
    let flows = a.flows;
    if matches!(a.alg, PolicySpec::Qfq | PolicySpec::QfqPlus(_)) {
        for (i, p) in traffic.programs.iter().enumerate() {
            if let (Some(s), Some(f)) =
                (p.iter().find(|s| s.pkt_len > flows.get(i).map_or(u32::MAX, |f| f.max_len)), flows.get(i))
            {
                bail!(
                    "thread {i} sends {}-byte packets but its flow's MAXLEN is {}: QFQ needs MAXLEN >= every packet (raise it in -flowsets)",
                    s.pkt_len,
                    f.max_len
                );
            }
        }
    }
    let (qmax, qmin) = queue_limits(a.qmax, a.qmin, flows.len(), threads);
    let cfg = Config {
        threads,
        traffic,
        queue: a.queue,
        bandwidth: a.bandwidth,
        sched_poll: a.sched_poll,
        client_poll: a.client_poll,
        sched_cpu: a.sched_cpu,
        client_cpus: a.client_cpus,
        active: a.active.unwrap_or(threads),
        batch: a.batch,
        distributed: a.distributed,
        lock: a.lock,
        notify: a.notify,
        duration_cap: a.duration_cap,
        alg: a.alg,
        flows,
        qmax,
        qmin,
        ts_limit: a.ts_limit,
        trace: false,
        seed: a.seed,
        messages: a.messages.is_some() || a.trace_out.is_some(),
    };
    Ok(Args {
        cfg,
        traffic_source,
        prefix: a.prefix,
        json: a.json,
        bench: a.bench,
        messages: a.messages,
        trace_out: a.trace_out,
        repeat: a.repeat,
        disturbance_csv: a.disturbance_csv,
    })
}

/// `--messages` and `--trace-out`.
pub fn write_message_files(args: &Args, r: &RunResult) -> Result<()> {
    if args.messages.is_none() && args.trace_out.is_none() {
        return Ok(());
    }
    let per: Vec<&[crate::messages::MsgRecord]> = r.clients.iter().map(|c| c.messages.as_slice()).collect();
    let all = crate::messages::merged(&per);
    let write = |path: &Path, f: &dyn Fn(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>| -> Result<()> {
        let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let mut w = std::io::BufWriter::new(file);
        f(&mut w).and_then(|_| w.flush()).with_context(|| format!("writing {}", path.display()))
    };
    if let Some(p) = &args.messages {
        write(p, &|w| {
            writeln!(w, "# schedlab sched messages, seed {}", args.cfg.seed)?;
            crate::messages::write_messages(w, &all)
        })?;
    }
    if let Some(p) = &args.trace_out {
        write(p, &|w| crate::messages::write_trace(w, &all, args.cfg.bandwidth.map(|b| b.0), args.cfg.seed))?;
    }
    Ok(())
}

/// Writes `PREFIXqueue-i.txt` for every client; returns the file names.
pub fn write_timestamps(prefix: &str, clients: &[ClientResult]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let name = format!("{prefix}queue-{i}.txt");
        let f = std::fs::File::create(&name).with_context(|| format!("cannot create timestamp file {name}"))?;
        let mut w = std::io::BufWriter::new(f);
        for t in &c.timestamps {
            writeln!(
                w,
                "{}\t{}\t{}\t{}\t{}\t{}",
                t.cli_enq,
                t.sch_enq,
                t.sch_deq,
                t.cli_deq,
                t.len,
                if t.dropped { "D" } else { "" }
            )
            .with_context(|| format!("writing {name}"))?;
        }
        w.flush().with_context(|| format!("writing {name}"))?;
        names.push(name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::message_level;

    fn args(s: &str) -> Result<Option<Args>> {
        parse_args(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn seed_command_lines_parse() {
        let dir = std::env::temp_dir().join(format!("schedlab-sched-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("sched.txt");
        std::fs::write(&f, "1s 100M 64 1\n").unwrap();
        let a = args(&format!("-t 4 -f {} -b 20M -q 100 -i 20 -c 5 -- -flowsets 100:1500:1,1:1500:16 -alg rr", f.display()))
            .unwrap()
            .unwrap();
        assert_eq!(a.cfg.threads, 4);
        assert_eq!(a.cfg.bandwidth, Some(Bps(20_000_000)));
        assert_eq!(a.cfg.sched_poll, Nanos(20_000));
        assert_eq!(a.cfg.client_poll, Nanos(5_000));
        assert_eq!(a.cfg.flows.len(), 17);
        assert_eq!(a.cfg.flows[0], FlowWeight::new(100, 1500));
        assert_eq!(a.cfg.alg, PolicySpec::Drr);
        let b = args(&format!("-a 1 -t 1 -f {} -b 10T -q 20 -- -flowsets 1:1500:32 -alg rr", f.display())).unwrap().unwrap();
        assert_eq!(b.cfg.bandwidth, Some(Bps(10_000_000_000_000)));
        assert_eq!(b.cfg.sched_cpu, Some(1));
        assert_eq!(b.cfg.flows.len(), 32);
        let c = args(&format!("-f {} -i 100ns -c 0 -D -d 0.5 -- -alg alpha -alpha 2.5", f.display())).unwrap().unwrap();
        assert_eq!(c.cfg.sched_poll, Nanos(100));
        assert!(c.cfg.distributed);
        assert_eq!(c.cfg.duration_cap, Some(Nanos(500_000_000)));
        assert_eq!(c.cfg.alg, PolicySpec::Alpha(2.5));
        assert!(message_level(&c.cfg.alg));
        for (alg, want) in [
            ("mrr", PolicySpec::RoundRobin),
            ("rr'", PolicySpec::RoundRobinHead),
            ("track:1:100", PolicySpec::Track { low: 1.0, high: 100.0, gain: 1.0 }),
            ("prio", PolicySpec::Prio),
            ("alpha:7", PolicySpec::Alpha(7.0)),
            ("alpha", PolicySpec::Alpha(schedlab_policy::DEFAULT_ALPHA)),
        ] {
            let a = args(&format!("-f {} -- -alg {alg}", f.display())).unwrap().unwrap();
            assert_eq!(a.cfg.alg, want, "{alg}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_input_is_refused_clearly() {
        let err = |s: &str| format!("{:#}", args(s).unwrap_err());
        assert!(err("-q 0").contains("-q"));
        assert!(err("-q 99999999999").contains("at most"));
        assert!(err("--ts-limit 1000000000000").contains("at most"));
        assert!(err("-t 0").contains("at least 1"));
        assert!(err("-b -5M").contains("negative"));
        assert!(err("-b 0").contains("unlimited"));
        assert!(err("-- -alg bogus").contains("unknown -alg 'bogus'"));
        assert!(err("-- -alg rr").contains("-flowsets"));
        assert!(err("-- -alg alpha -alpha -1").contains("-alpha"));
        assert!(err("-- -alg sf -alpha 3").contains("only used with -alg alpha"));
        assert!(err("-- -alg track:100:1").contains("below LOW"));
        assert!(err("-- -alg -1").contains("mrr"));
        assert!(err("-é").contains("unknown option '-é'"));
        assert!(err("-- -é").contains("unknown scheduler option"));
        assert!(err("-- -flowsets 1:1500").contains("WEIGHT:MAXLEN:FLOWS"));
        assert!(err("-- -flowsets 0:1500:1 -alg rr").contains("WEIGHT"));
        assert!(err("-x").contains("unknown option"));
        assert!(err("-t").contains("needs a value"));
        assert!(err("--json -- -flowsets 1:1500:1 -alg rr").contains("--json needs a value before '--'"));
        assert!(err("-f /nonexistent/sched.txt").contains("/nonexistent/sched.txt"));
    }
}
