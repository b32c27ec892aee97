//! Command lines of `schedlab trylock`, `schedlab notify` and `schedlab semtest`: the seeds'
//! options (clap) into a [`PrimsCommand`], each a job of plain data: the measurement's
//! configuration ([`TrylockConfig`], [`NotifyConfig`], [`SemtestConfig`]), the files to write and
//! what the output lines say about the request. Nothing here runs, prints or opens a file: the
//! flow is [`crate::app`]'s, the measurements [`crate::trylock`], [`crate::notify`] and
//! [`crate::semtest`].

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Result;
use clap::{ArgAction, Parser};
use schedlab_report::machine::online_cpus;

use crate::chan::Mechanism;
use crate::locks::LockKind;
use crate::notify::{NotifyConfig, NotifyTest};
use crate::place::{self, RtRequest};
use crate::semtest::{self, Mode, Placement, SemtestConfig};
use crate::trylock::{self, Dispatch, TrylockConfig, TrylockTest};

/// A duration as rt-tests' `-D` takes it: a number with an optional unit `s` (the default), `m`,
/// `h`, `d`, or `ms`; e.g. `10s`, `1.5m`, `90`. Returns nanoseconds.
pub fn parse_duration_ns(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60e9)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600e9)
    } else if let Some(n) = t.strip_suffix('d') {
        (n, 86400e9)
    } else {
        (t, 1e9)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * mult >= 1e6 && v * mult < 3.2e16 => Ok((v * mult) as u64),
        Ok(v) if v.is_finite() && v > 0.0 => Err(format!("'{s}': use between 1ms and one year")),
        _ => Err(format!("'{s}' is not a duration: a positive number with an optional unit ms, s, m, h or d (e.g. 10s, 5m)")),
    }
}

/// One `trylock`, `notify` or `semtest` command line, parsed and checked: nothing is run or printed.
#[derive(Debug, Clone)]
pub enum PrimsCommand {
    Trylock(TrylockJob),
    Notify(NotifyJob),
    Semtest(SemtestJob),
}

/// The files every command may write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outputs {
    /// `--json FILE` (`-`: stdout, the human lines then go to stderr).
    pub json: Option<PathBuf>,
    /// `--disturbance-csv FILE`: one row per measuring thread.
    pub disturbance_csv: Option<PathBuf>,
}

/// `schedlab trylock`: what to measure and what to write.
#[derive(Debug, Clone)]
pub struct TrylockJob {
    pub config: TrylockConfig,
    /// `-o FILE`: test B's busy samples, one per line.
    pub samples: Option<PathBuf>,
    pub outputs: Outputs,
    /// Said on stderr before measuring (threads left unpinned, and why).
    pub note: Option<String>,
}

/// `schedlab notify`: what to measure and what to write.
#[derive(Debug, Clone)]
pub struct NotifyJob {
    pub config: NotifyConfig,
    /// `--gap-us` as given (the output line repeats it).
    pub gap_us: f64,
    /// `--histfile FILE` and its buckets (`--hist-max-us`).
    pub histfile: Option<PathBuf>,
    pub hist_max_us: u64,
    pub outputs: Outputs,
}

/// `schedlab semtest`: what to measure and what to write.
#[derive(Debug, Clone)]
pub struct SemtestJob {
    pub config: SemtestConfig,
    /// `-i` as given (`None`: the default, or unlimited with `-D`).
    pub iterations_given: Option<u64>,
    /// `-p` as given (0: SCHED_OTHER).
    pub priority: i32,
    /// `--histfile FILE` and its buckets (`--hist-max-us`).
    pub histfile: Option<PathBuf>,
    pub hist_max_us: u64,
    pub outputs: Outputs,
    /// Said on stderr before measuring (an option that has no effect as given).
    pub notes: Vec<String>,
}

/// Parses a command line (`args[0]` is the command name) into a job. Help, version and usage
/// errors are `Err` holding the `clap::Error`; a value clap accepts but the measurement cannot
/// (`-n 0`, an unknown lock, a CPU this process may not use) is another `Err`, said in words.
pub fn parse_args(args: Vec<OsString>) -> Result<PrimsCommand> {
    let cmd = args.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(match cmd.as_str() {
        "trylock" => PrimsCommand::Trylock(trylock_job(TrylockArgs::try_parse_from(args)?)?),
        "notify" => PrimsCommand::Notify(notify_job(NotifyArgs::try_parse_from(args)?)?),
        "semtest" => PrimsCommand::Semtest(semtest_job(SemtestArgs::try_parse_from(args)?)?),
        other => anyhow::bail!("schedlab-prims does not provide '{other}' (it has trylock, notify, semtest)"),
    })
}

fn outputs(c: &Common) -> Outputs {
    Outputs { json: c.json.clone(), disturbance_csv: c.disturbance_csv.clone() }
}

// ---------------------------------------------------------------------------------------------
// trylock

/// Measures trylock/unlock cost on a lock shared by threads (seed: TRYLOCK TEST PROGRAM).
#[derive(Parser, Debug)]
#[command(
    name = "schedlab trylock",
    about = "Cost of trylock/unlock on a shared lock: test A (busy lock, ops/s) or test B (-F, token passing, ns per op)",
    after_help = "Examples:\n  schedlab trylock -n 3                  # three threads, busy lock\n  schedlab trylock -n 3 -F -o dump.txt   # three threads, free lock, dump busy samples\n  schedlab trylock -F --pingpong -t 0.2  # strict two-thread ping-pong (cross-check of -F)\n\nOutput: `SECONDS FUNCTION [CPU] ...`; the bracketed number is the CPU the thread ran on.\nThreads are pinned one per CPU when -n is at most the number of CPUs; otherwise they run\nunpinned (said on stderr) unless --pin, which then makes it an error."
)]
struct TrylockArgs {
    /// number of threads to use
    #[arg(short = 'n', long = "threads", default_value_t = 2)]
    threads: usize,
    /// identifier of the core which is used to allocate the lock
    #[arg(short = 'x', long = "alloc-core")]
    alloc_core: Option<usize>,
    /// number of trylock operations that each thread should perform, in millions (fractions allowed)
    #[arg(short = 't', long = "millions", default_value_t = 10.0)]
    millions: f64,
    /// carry out test B (if not set, test A is carried out)
    #[arg(short = 'F', long = "free")]
    free: bool,
    /// only for test B: file where cost samples of trylock found busy are dumped, one per line (ns)
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// lock to measure: sem (sem_trywait/sem_post), mutex, spinlock, futex, tas, ttas, ticket
    #[arg(long = "lock", default_value = "sem")]
    lock: String,
    /// strict two-thread ping-pong of the lock (per-operation samples like -F; needs -n 2)
    #[arg(long)]
    pingpong: bool,
    /// require one CPU per thread (error if -n exceeds the CPUs)
    #[arg(long, conflicts_with = "no_pin")]
    pin: bool,
    /// do not pin threads
    #[arg(long = "no-pin")]
    no_pin: bool,
    /// busy samples kept per thread for -o (the last ones)
    #[arg(long, default_value_t = 1 << 20)]
    ring: usize,
    /// test B: also record which thread released the lock before each free try (adds a write
    /// to a word all threads share at every acquisition, which changes what is measured)
    #[arg(long)]
    handover: bool,
    /// how the loops call the lock: direct (a loop compiled per lock, as C) or trait-object
    /// (one indirect call per operation; only to show what that costs)
    #[arg(long, default_value = "direct", value_parser = ["direct", "trait-object"])]
    dispatch: String,
    #[command(flatten)]
    common: Common,
}

/// Options every command has.
#[derive(clap::Args, Debug)]
struct Common {
    /// write the result (with machine facts) as JSON to FILE ('-' for stdout)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// write one CSV row per measuring thread (run, thread, switches, migrations, longest loop
    /// gap, ...) to FILE
    #[arg(long, value_name = "FILE")]
    disturbance_csv: Option<PathBuf>,
    /// measure even if pinning, a real-time priority or mlockall was refused (the output and the
    /// result then say what each thread really got)
    #[arg(long)]
    allow_degraded: bool,
}

fn ops_from_millions(m: f64, flag: &str) -> Result<u64> {
    anyhow::ensure!(m.is_finite() && m > 0.0, "{flag} {m}: must be a positive number of millions");
    let ops = (m * 1e6).round();
    anyhow::ensure!((1.0..1e15).contains(&ops), "{flag} {m}: gives {ops} operations; use between 0.000001 and 1e9");
    Ok(ops as u64)
}

/// The most threads a benchmark starts (as `sched -t`): beyond it a count is a typo, and taking it
/// at its word would ask for more memory than the machine has before the first thread starts.
const MAX_THREADS: usize = 4096;
/// The most busy samples a trylock thread keeps for `-o` (512 MiB each).
const MAX_RING: usize = 1 << 27;

/// Pins thread i to the i-th CPU when there are enough; otherwise the policy of `pin`/`no_pin`.
fn worker_cpus(n: usize, pin: bool, no_pin: bool) -> Result<(Vec<Option<usize>>, Option<String>)> {
    anyhow::ensure!(n > 0, "-n 0: at least one thread is needed");
    anyhow::ensure!(n <= MAX_THREADS, "-n {n}: at most {MAX_THREADS} threads");
    let cpus = online_cpus();
    if no_pin {
        return Ok((vec![None; n], Some("threads not pinned (--no-pin)".into())));
    }
    if n <= cpus.len() {
        return Ok(((0..n).map(|i| Some(cpus[i])).collect(), None));
    }
    anyhow::ensure!(
        !pin,
        "-n {n} with --pin: one CPU per thread is needed but only {} CPUs are available ({cpus:?}); use -n {} or drop --pin",
        cpus.len(),
        cpus.len()
    );
    Ok((
        vec![None; n],
        Some(format!(
            "{n} threads but only {} CPUs: threads are NOT pinned and share cores (pass --pin to make this an error)",
            cpus.len()
        )),
    ))
}

fn trylock_job(a: TrylockArgs) -> Result<TrylockJob> {
    let lock: LockKind = a.lock.parse()?;
    let test = match (a.free, a.pingpong) {
        (_, true) => TrylockTest::PingPong,
        (true, false) => TrylockTest::Free,
        (false, false) => TrylockTest::Busy,
    };
    anyhow::ensure!(
        a.output.is_none() || test != TrylockTest::Busy,
        "-o only applies to test B: add -F (test A takes no per-operation samples)"
    );
    let ops = ops_from_millions(a.millions, "-t")?;
    let (cpus, note) = worker_cpus(a.threads, a.pin, a.no_pin)?;
    anyhow::ensure!(a.ring <= MAX_RING, "--ring {}: at most {MAX_RING} samples per thread (4 bytes each)", a.ring);
    if let Some(x) = a.alloc_core {
        place::check_cpus([("-x", x)])?;
    }
    let config = TrylockConfig {
        test,
        lock,
        threads: a.threads,
        ops_per_thread: ops,
        alloc_cpu: a.alloc_core,
        worker_cpus: cpus,
        // No thread takes more samples than it makes operations.
        ring: a.ring.min(usize::try_from(ops).unwrap_or(usize::MAX)),
        allow_degraded: a.common.allow_degraded,
        track_handover: a.handover || test == TrylockTest::PingPong,
        dispatch: if a.dispatch == "trait-object" { Dispatch::TraitObject } else { Dispatch::Direct },
    };
    anyhow::ensure!(
        !a.handover || test == TrylockTest::Free,
        "--handover applies to test B (-F); the ping-pong always tracks it"
    );
    trylock::validate(&config)?;
    Ok(TrylockJob { config, samples: a.output, outputs: outputs(&a.common), note })
}

// ---------------------------------------------------------------------------------------------
// notify

/// Measures notification and wake-up costs between two threads (seed: NOTIFY TEST PROGRAM).
#[derive(Parser, Debug)]
#[command(
    name = "schedlab notify",
    about = "Cost of thread notifications: test A (receiver wake-up rate) or test B (-S, sender cost while the receiver sleeps)",
    after_help = "Examples:\n  schedlab notify          # measure receiver side cost\n  schedlab notify -S       # measure sender side cost\n  schedlab notify -S --primitive futex -n 5\n\nOutput: `SECONDS FUNCTION [CPU] ...`; the bracketed number is the CPU the thread ran on."
)]
struct NotifyArgs {
    /// number of notifications to be sent, in thousands (default 2000 for test A, 40 for test B)
    #[arg(short = 'n', long = "thousands")]
    thousands: Option<f64>,
    /// identifier of the core where the sender is run (default: the first CPU)
    #[arg(short = 's', long = "sender-core")]
    sender: Option<usize>,
    /// identifier of the core where the receiver is run (default: the second CPU, if any)
    #[arg(short = 'r', long = "receiver-core")]
    receiver: Option<usize>,
    /// carry out test B (if not set, test A is carried out)
    #[arg(short = 'S', long = "sender-test")]
    sender_test: bool,
    /// mechanism: eventfd, pipe, futex, sem, condvar, unix
    #[arg(long = "primitive", visible_alias = "mechanism", default_value = "eventfd")]
    primitive: String,
    /// test B: gap between two notifications, in microseconds (busy-waited by the sender)
    #[arg(long = "gap-us", default_value_t = 30.0)]
    gap_us: f64,
    /// do not pin the threads
    #[arg(long = "no-pin", conflicts_with_all = ["sender", "receiver"])]
    no_pin: bool,
    /// stop sending after this long, as rt-tests' -D (10s, 5m, 1h, 1d, 500ms; a bare number is
    /// seconds); without -n the count is then unlimited, with -n whichever comes first
    #[arg(short = 'D', long = "duration", value_name = "TIME", value_parser = parse_duration_ns)]
    duration: Option<u64>,
    /// test B: write the histograms of the sender cost and the wake-up latency to FILE in
    /// rt-tests' --histfile format (1 us buckets; columns: sender cost, wake-up latency)
    #[arg(long, value_name = "FILE")]
    histfile: Option<PathBuf>,
    /// buckets (us) of --histfile; larger samples are counted as overflows
    #[arg(long, value_name = "US", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    hist_max_us: u64,
    #[command(flatten)]
    common: Common,
}

fn notify_job(a: NotifyArgs) -> Result<NotifyJob> {
    let mechanism: Mechanism = a.primitive.parse()?;
    let test = if a.sender_test { NotifyTest::Sender } else { NotifyTest::Receiver };
    let notifications = match (a.thousands, a.duration) {
        (None, Some(_)) => u64::MAX,
        (n, _) => {
            let thousands = n.unwrap_or(if a.sender_test { 40.0 } else { 2000.0 });
            anyhow::ensure!(
                thousands.is_finite() && thousands > 0.0,
                "-n {thousands}: the number of notifications (in thousands) must be above 0"
            );
            let notifications = (thousands * 1000.0).round() as u64;
            anyhow::ensure!(notifications >= 1, "-n {thousands}: less than one notification");
            notifications
        }
    };
    anyhow::ensure!(
        a.histfile.is_none() || a.sender_test,
        "--histfile needs test B (-S): test A takes no per-notification samples"
    );
    anyhow::ensure!(a.gap_us.is_finite() && (0.0..=1e6).contains(&a.gap_us), "--gap-us {}: use 0 to 1000000", a.gap_us);
    let cpus = online_cpus();
    let (sender_cpu, receiver_cpu) = if a.no_pin {
        (None, None)
    } else {
        let s = a.sender.unwrap_or(cpus[0]);
        let r = a.receiver.unwrap_or(*cpus.get(1).unwrap_or(&cpus[0]));
        place::check_cpus([("-s", s), ("-r", r)])?;
        (Some(s), Some(r))
    };
    let config = NotifyConfig {
        test,
        mechanism,
        notifications,
        sender_cpu,
        receiver_cpu,
        gap_ns: (a.gap_us * 1000.0) as u64,
        allow_degraded: a.common.allow_degraded,
        duration_ns: a.duration,
    };
    Ok(NotifyJob { config, gap_us: a.gap_us, histfile: a.histfile, hist_max_us: a.hist_max_us, outputs: outputs(&a.common) })
}

// ---------------------------------------------------------------------------------------------
// semtest

/// Wake-up latency between thread pairs (seed: semtest).
#[derive(Parser, Debug)]
#[command(
    name = "semtest",
    override_usage = "semtest <options>",
    about = "Latency of (POSIX) semaphore wake-ups between thread pairs",
    after_help = "Examples:\n  schedlab semtest -i 10000\n  sudo schedlab semtest -i 10000 -p90\n  schedlab semtest -i 2000 --mode one-way --placement same-core --interval 500\n\nLatencies are in microseconds (nanosecond clock). `P: i, cpu` gives the pair and the CPU its\npolo thread ran on; the placement follows on the same line."
)]
struct SemtestArgs {
    /// bind tasks to cores explicitly (default)
    #[arg(short = 'a', long = "affinity", action = ArgAction::SetTrue)]
    affinity: bool,
    /// do not set affinity, let the scheduler move tasks
    #[arg(short = 'A', long = "no_affinity", visible_alias = "no-affinity", conflicts_with = "affinity")]
    no_affinity: bool,
    /// run threads for ITER iterations (default 10000; unlimited when -D is given)
    #[arg(short = 'i', long = "iterations", value_name = "ITER")]
    iterations: Option<u64>,
    /// test on number of cores (one pair per core; default: all available)
    #[arg(short = 'n', long = "num_cpus", visible_alias = "num-cpus", value_name = "CPUS")]
    num_cpus: Option<usize>,
    /// run with given (real-time) priority
    #[arg(short = 'p', long = "priority", value_name = "PRIO", default_value_t = 0)]
    priority: i32,
    /// use SCHED_RR instead of the default SCHED_FIFO for rt-priorities
    #[arg(short = 'r', long = "policy_rr", visible_alias = "policy-rr")]
    policy_rr: bool,
    /// round-trip (two wake-ups, the original's sample) or one-way (one wake-up, like ptsematest)
    #[arg(long, default_value = "round-trip", value_parser = ["round-trip", "roundtrip", "one-way", "oneway"])]
    mode: String,
    /// same-core | cross-core | unpinned | permuted | CPU:CPU (default: permuted, or unpinned with -A)
    #[arg(long)]
    placement: Option<String>,
    /// sleep between iterations, microseconds
    #[arg(long, value_name = "US", default_value_t = 1000)]
    interval: u64,
    /// iterations run first and not recorded
    #[arg(long, default_value_t = 100)]
    warmup: u64,
    /// lock memory (mlockall) so page faults stay out of the samples
    #[arg(short = 'm', long)]
    mlockall: bool,
    /// notification primitive: sem (default), eventfd, pipe, futex, condvar, unix
    #[arg(long, default_value = "sem")]
    primitive: String,
    /// seed of the polo permutation (default: from the clock; printed)
    #[arg(long)]
    seed: Option<u64>,
    /// run for this long, as rt-tests' -D (10s, 5m, 1h, 1d, 500ms; a bare number is seconds);
    /// with -i, whichever comes first
    #[arg(short = 'D', long = "duration", value_name = "TIME", value_parser = parse_duration_ns)]
    duration: Option<u64>,
    /// write the latency histogram to FILE in rt-tests' --histfile format (1 us buckets, one
    /// column per pair)
    #[arg(long, value_name = "FILE")]
    histfile: Option<PathBuf>,
    /// buckets (us) of --histfile; larger samples are counted as overflows
    #[arg(long, value_name = "US", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    hist_max_us: u64,
    #[command(flatten)]
    common: Common,
}

fn semtest_job(a: SemtestArgs) -> Result<SemtestJob> {
    let iterations = match (a.iterations, a.duration) {
        (Some(i), _) => i,
        (None, Some(_)) => u64::MAX,
        (None, None) => 10_000,
    };
    let primitive: Mechanism = a.primitive.parse()?;
    let mode = if a.mode.starts_with("one") { Mode::OneWay } else { Mode::RoundTrip };
    let placement = match (&a.placement, a.no_affinity) {
        (Some(p), false) => Placement::parse(p)?,
        (Some(_), true) => anyhow::bail!("-A and --placement contradict each other: use one"),
        (None, true) => Placement::Unpinned,
        (None, false) => Placement::Permuted,
    };
    anyhow::ensure!((0..=99).contains(&a.priority), "-p {}: priorities are 0 (SCHED_OTHER) or 1 to 99 (real-time)", a.priority);
    let mut notes = Vec::new();
    if a.policy_rr && a.priority == 0 {
        notes.push("-r selects SCHED_RR only together with a real-time priority (-p 1..99); running SCHED_OTHER".to_string());
    }
    let rt = (a.priority > 0).then_some(RtRequest { round_robin: a.policy_rr, priority: a.priority });
    let cpus = online_cpus();
    let pairs = match (a.num_cpus, placement) {
        (Some(n), _) => n,
        (None, Placement::Fixed(..)) => 1,
        (None, _) => cpus.len(),
    };
    anyhow::ensure!(pairs <= MAX_THREADS / 2, "-n {pairs}: at most {} pairs ({MAX_THREADS} threads)", MAX_THREADS / 2);
    let seed = a.seed.unwrap_or_else(|| crate::clock::now_ns() ^ 0x5eed);
    let config = SemtestConfig {
        pairs,
        iterations,
        warmup: a.warmup,
        mode,
        primitive,
        placement,
        rt,
        interval_us: a.interval,
        mlockall: a.mlockall,
        allow_degraded: a.common.allow_degraded,
        seed,
        duration_ns: a.duration,
    };
    semtest::pair_cpus(&config, &cpus)?;
    anyhow::ensure!(iterations > 0, "-i 0: at least one iteration is needed");
    Ok(SemtestJob {
        config,
        iterations_given: a.iterations,
        priority: a.priority,
        histfile: a.histfile,
        hist_max_us: a.hist_max_us,
        outputs: outputs(&a.common),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn seed_command_lines_parse() {
        let t = TrylockArgs::try_parse_from(args(&["trylock", "-n", "3", "-F", "-o", "dump.txt"])).unwrap();
        assert_eq!(t.threads, 3);
        assert!(t.free);
        let s = SemtestArgs::try_parse_from(args(&["semtest", "-i", "10000", "-p90"])).unwrap();
        assert_eq!((s.iterations, s.priority), (Some(10_000), 90));
        let n = NotifyArgs::try_parse_from(args(&["notify", "-S"])).unwrap();
        assert!(n.sender_test);
    }

    #[test]
    fn command_lines_become_jobs() {
        let PrimsCommand::Trylock(t) =
            parse_args(args(&["trylock", "-n", "1", "-F", "-o", "d.txt", "-t", "0.5", "--json", "-"])).unwrap()
        else {
            panic!("a trylock job")
        };
        assert_eq!((t.config.test, t.config.threads, t.config.ops_per_thread), (TrylockTest::Free, 1, 500_000));
        assert_eq!(t.samples, Some(PathBuf::from("d.txt")));
        assert_eq!(t.outputs, Outputs { json: Some("-".into()), disturbance_csv: None });
        let PrimsCommand::Notify(n) = parse_args(args(&["notify", "-S", "--gap-us", "2.5", "-D", "1s", "--no-pin"])).unwrap()
        else {
            panic!("a notify job")
        };
        assert_eq!((n.config.test, n.config.notifications, n.config.gap_ns), (NotifyTest::Sender, u64::MAX, 2_500));
        assert_eq!((n.config.duration_ns, n.gap_us), (Some(1_000_000_000), 2.5));
        let PrimsCommand::Semtest(s) =
            parse_args(args(&["semtest", "-n", "1", "-r", "--seed", "9", "--placement", "unpinned"])).unwrap()
        else {
            panic!("a semtest job")
        };
        assert_eq!((s.config.pairs, s.config.seed, s.config.iterations, s.config.rt), (1, 9, 10_000, None));
        assert_eq!(s.notes.len(), 1, "-r without -p is said: {:?}", s.notes);
        let e = parse_args(args(&["trylock", "--bogus"])).unwrap_err();
        assert!(e.downcast_ref::<clap::Error>().is_some(), "a usage error is clap's: {e:#}");
        assert!(parse_args(args(&["trylock", "--lock", "rwlock"])).unwrap_err().downcast_ref::<clap::Error>().is_none());
    }

    /// Found by the `cli_args` fuzz target: `trylock -n 7777777777777` asked for a vector of that
    /// many CPU slots and aborted out of memory; `semtest -A -n` likewise when its pairs started.
    #[test]
    fn thread_counts_are_bounded() {
        for argv in
            [&["trylock", "-n", "7777777777777"][..], &["trylock", "-n", "4097", "--no-pin"], &["semtest", "-A", "-n", "2049"]]
        {
            let e = parse_args(args(argv)).unwrap_err();
            assert!(format!("{e:#}").contains("at most"), "{argv:?}: {e:#}");
        }
        assert!(parse_args(args(&["trylock", "-n", "4096", "--no-pin"])).is_ok());
        // Likewise `-F -o d.txt --ring 777777777777`: a vector of that many samples per thread.
        let e = parse_args(args(&["trylock", "-F", "-o", "d.txt", "--ring", "777777777777"])).unwrap_err();
        assert!(format!("{e:#}").contains("at most"), "{e:#}");
        let PrimsCommand::Trylock(t) = parse_args(args(&["trylock", "-F", "-o", "d.txt", "-t", "0.001"])).unwrap() else {
            panic!("a trylock job")
        };
        assert_eq!(t.config.ring, 1000, "no more samples kept than operations made");
        assert!(parse_args(args(&["semtest", "-A", "-n", "2048"])).is_ok());
    }

    #[test]
    fn durations_parse_as_rt_tests_does() {
        assert_eq!(parse_duration_ns("10s"), Ok(10_000_000_000));
        assert_eq!(parse_duration_ns("10"), Ok(10_000_000_000));
        assert_eq!(parse_duration_ns("1.5m"), Ok(90_000_000_000));
        assert_eq!(parse_duration_ns("2h"), Ok(7_200_000_000_000));
        assert_eq!(parse_duration_ns("1d"), Ok(86_400_000_000_000));
        assert_eq!(parse_duration_ns("250ms"), Ok(250_000_000));
        for bad in ["", "0", "-1s", "abc", "10x", "nan", "inf", "0.1ms", "1e30s"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ops_conversion() {
        assert_eq!(ops_from_millions(0.5, "-t").unwrap(), 500_000);
        assert!(ops_from_millions(-1.0, "-t").is_err());
        assert!(ops_from_millions(f64::NAN, "-t").is_err());
    }
}
