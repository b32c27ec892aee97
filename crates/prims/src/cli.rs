//! Command line of `schedlab trylock`, `schedlab notify` and `schedlab semtest`: the seeds'
//! options, output lines in the seeds' shape, `--json FILE` with the machine facts.
//!
//! Output lines start like the originals': seconds since start, the reporting function, and a
//! bracketed number. In the originals that number was a source line; here it is **the CPU the
//! reporting thread was running on** when it finished (read with `sched_getcpu`). Context lines
//! (what was asked, what was got, the clock's cost) start with `# `.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{ArgAction, Parser};
use schedlab_report::machine::{online_cpus, MachineInfo};
use schedlab_report::{results, Summary};
use serde::Serialize;

use crate::chan::Mechanism;
use crate::clock::{c_exp, current_cpu, ClockInfo, RunClock};
use crate::locks::LockKind;
use crate::notify::{self, NotifyConfig, NotifyTest};
use crate::place::{self, RtRequest, ThreadGot};
use crate::semtest::{self, Mode, Placement, SemtestConfig};
use crate::trylock::{self, Dispatch, TrylockConfig, TrylockTest};

/// Where the human-readable lines go: stdout, or stderr when `--json -` has stdout for the JSON
/// alone (so `schedlab notify --json - | jq` gets nothing but JSON).
#[derive(Clone, Copy, Debug)]
struct Out {
    to_stderr: bool,
}

impl Out {
    fn for_json(json: Option<&Path>) -> Out {
        Out { to_stderr: json.is_some_and(|p| p.as_os_str() == "-") }
    }
    fn line(&self, a: std::fmt::Arguments<'_>) {
        if self.to_stderr {
            eprintln!("{a}");
        } else {
            println!("{a}");
        }
    }
}

/// `say!(out, "...", args)`: one human line to wherever [`Out`] sends them.
macro_rules! say {
    ($o:expr, $($t:tt)*) => { $o.line(format_args!($($t)*)) };
}

/// Fails unless `path` can be written, without truncating an existing file or leaving a new one
/// behind: output files are checked before measuring, not after.
pub fn check_writable(path: &Path, what: &str) -> Result<()> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let r = if path.exists() {
        std::fs::OpenOptions::new().append(true).open(path).map(drop)
    } else {
        std::fs::OpenOptions::new().write(true).create_new(true).open(path).and_then(|_| std::fs::remove_file(path))
    };
    r.with_context(|| format!("{what} file {} cannot be written (checked before measuring)", path.display()))
}

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

/// Runs the command; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    restore_sigpipe();
    match parse_args(args) {
        Ok(PrimsCommand::Trylock(a)) => run_trylock(a),
        Ok(PrimsCommand::Notify(a)) => run_notify(a),
        Ok(PrimsCommand::Semtest(a)) => run_semtest(a),
        // 0 after help, 2 after a usage error (message printed).
        Err(e) => match e.downcast_ref::<clap::Error>() {
            Some(c) => {
                let _ = c.print();
                Ok(if c.use_stderr() { 2 } else { 0 })
            }
            None => Err(e),
        },
    }
}

/// One `trylock`, `notify` or `semtest` command line, parsed: nothing is run or printed.
#[derive(Debug)]
pub enum PrimsCommand {
    Trylock(TrylockArgs),
    Notify(NotifyArgs),
    Semtest(SemtestArgs),
}

/// Parses a command line (`args[0]` is the command name). Help, version and usage errors are
/// `Err` holding the `clap::Error`; an unknown command is another `Err`.
pub fn parse_args(args: Vec<OsString>) -> Result<PrimsCommand> {
    let cmd = args.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(match cmd.as_str() {
        "trylock" => PrimsCommand::Trylock(TrylockArgs::try_parse_from(args)?),
        "notify" => PrimsCommand::Notify(NotifyArgs::try_parse_from(args)?),
        "semtest" => PrimsCommand::Semtest(SemtestArgs::try_parse_from(args)?),
        other => anyhow::bail!("schedlab-prims does not provide '{other}' (it has trylock, notify, semtest)"),
    })
}

/// Lets `schedlab semtest | head` end quietly like a C tool instead of panicking in `println!`.
fn restore_sigpipe() {
    // SAFETY: resetting a signal's disposition to the default has no memory-safety preconditions;
    // this runs in the CLI process before any measuring thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// What every `--json` result carries besides the run itself.
fn context(clock: &ClockInfo, degraded: Vec<String>) -> results::prims::Context {
    results::prims::Context {
        argv: std::env::args().collect(),
        machine: MachineInfo::collect(),
        clock: clock.to_result(),
        degraded,
    }
}

fn print_context(o: Out, clock: &ClockInfo) {
    say!(o, "# {}", MachineInfo::collect().line());
    say!(o, "# {}", clock.line());
}

fn print_degraded(lines: &[String]) {
    for l in lines {
        eprintln!("warning: degraded (--allow-degraded): {l}");
    }
}

fn got_line(t: &ThreadGot) -> String {
    format!(
        "# {}: CPU {} (allowed {:?}), {} priority {}",
        t.requested.role,
        t.got.cpu,
        t.got.allowed_cpus,
        t.got.policy.name(),
        t.got.priority
    )
}

fn pcts(s: &Summary, unit: &str) -> String {
    format!("p50 {:.0} p90 {:.0} p99 {:.0} p99.9 {:.0} max {:.0} {unit}", s.p50, s.p90, s.p99, s.p999, s.max)
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
pub struct TrylockArgs {
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
pub struct Common {
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

/// Pins thread i to the i-th CPU when there are enough; otherwise the policy of `pin`/`no_pin`.
fn worker_cpus(n: usize, pin: bool, no_pin: bool) -> Result<(Vec<Option<usize>>, Option<String>)> {
    anyhow::ensure!(n > 0, "-n 0: at least one thread is needed");
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

fn run_trylock(a: TrylockArgs) -> Result<i32> {
    let o = Out::for_json(a.common.json.as_deref());
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
    if let Some(x) = a.alloc_core {
        place::check_cpus([("-x", x)])?;
    }
    if let Some(n) = &note {
        eprintln!("note: {n}");
    }
    let cfg = TrylockConfig {
        test,
        lock,
        threads: a.threads,
        ops_per_thread: ops,
        alloc_cpu: a.alloc_core,
        worker_cpus: cpus,
        ring: a.ring,
        allow_degraded: a.common.allow_degraded,
        track_handover: a.handover || test == TrylockTest::PingPong,
        dispatch: if a.dispatch == "trait-object" { Dispatch::TraitObject } else { Dispatch::Direct },
    };
    anyhow::ensure!(
        !a.handover || test == TrylockTest::Free,
        "--handover applies to test B (-F); the ping-pong always tracks it"
    );
    trylock::validate(&cfg)?;
    if let Some(p) = &a.output {
        check_writable(p, "-o")?;
    }
    if let Some(p) = &a.common.json {
        check_writable(p, "--json")?;
    }
    if let Some(p) = &a.common.disturbance_csv {
        check_writable(p, "--disturbance-csv")?;
    }
    // SIGINT/SIGTERM stop the measurement loops (partial results are reported), not the process.
    schedlab_report::frontend::interrupt();
    let clock = ClockInfo::measure();
    print_context(o, &clock);
    let what = match test {
        TrylockTest::Busy => "test A (busy lock)",
        TrylockTest::Free => "test B (free lock, token passing)",
        TrylockTest::PingPong => "ping-pong (strict alternation)",
    };
    say!(o, "# trylock {what}: lock {lock}, {} threads, {ops} operations per thread", a.threads);
    let rc = RunClock::start();
    let run = trylock::run(&cfg)?;
    for t in &run.threads {
        say!(o, "{}", got_line(t));
    }
    if let (Some(x), Some(got)) = (a.alloc_core, run.alloc_cpu_got) {
        say!(o, "# lock allocated by a thread pinned to CPU {x} (ran on CPU {got})");
    }
    let mut workers = run.workers.clone();
    workers.sort_by_key(|w| w.index);
    match test {
        TrylockTest::Busy => {
            for w in &workers {
                say!(
                    o,
                    "{}#{:02} busy: {} samples {} ops, free: {} samples {} ops",
                    rc.prefix("fn_busy", w.cpu_at_end),
                    w.index,
                    c_exp(w.busy_samples as f64, 3),
                    c_exp(w.rate_ops_per_s, 3),
                    c_exp(w.free_samples as f64, 6),
                    c_exp(w.free_samples as f64 / w.duration_s.max(1e-9), 3),
                );
            }
            let total = run.total_rate();
            let per = total / workers.len().max(1) as f64;
            let p = rc.prefix("main", current_cpu());
            say!(o, "{p}BUSY: total {} ops, per-thread {} ops", c_exp(total, 3), c_exp(per, 3));
            say!(o, "# busy trylock cost from the rate (no clock in the loop): {:.2} ns per try per thread", 1e9 / per.max(1e-9));
            let cpu: f64 = workers.iter().map(|w| w.busy_ns_per_try_cpu).sum::<f64>() / workers.len().max(1) as f64;
            say!(o, "# per CPU time each thread got: {cpu:.2} ns per try (wall and CPU time differ when threads were preempted)");
        }
        TrylockTest::Free | TrylockTest::PingPong => {
            let func = if test == TrylockTest::Free { "fn_free" } else { "fn_pp" };
            for w in &workers {
                say!(
                    o,
                    "{}#{:02} busy: {} samples {} ns, free: {} samples {} ns, post: {} ns, duration {:.6} s",
                    rc.prefix(func, w.cpu_at_end),
                    w.index,
                    c_exp(w.busy_samples as f64, 3),
                    c_exp(w.busy_avg_ns, 3),
                    c_exp(w.free_samples as f64, 3),
                    c_exp(w.free_avg_ns, 3),
                    c_exp(w.post_avg_ns, 3),
                    w.duration_s
                );
            }
            let (tb, tf, tp) = run.averages();
            let p = rc.prefix("main", current_cpu());
            say!(o, "{p}t_busy {} ns, t_free {} ns", c_exp(tb, 3), c_exp(tf, 3));
            say!(o, "# t_post {} ns (average unlock cost)", c_exp(tp, 3));
            let (mb, mf, mp, mh) = (run.all.busy_ns, run.all.free_ns, run.all.post_ns, run.all.free_handover_ns);
            say!(o, "# all threads: busy {}; free {}; post {}", pcts(&mb, "ns"), pcts(&mf, "ns"), pcts(&mp, "ns"));
            if cfg.track_handover {
                say!(
                    o,
                    "# free tries that took a lock another thread had just released: {} of {} ({})",
                    mh.count,
                    mf.count,
                    if mh.count > 0 { pcts(&mh, "ns") } else { "none".into() }
                );
            }
            say!(
                o,
                "# every sample includes one clock read ({:.1} ns amortized, back-to-back p50 {} ns)",
                clock.read_cost_amortized_ns,
                clock.read_cost_p50_ns
            );
            if let Some(path) = &a.output {
                let n = dump_samples(path, &workers)?;
                say!(o, "# {n} busy trylock samples (ns, one per line, thread by thread) written to {}", path.display());
            }
        }
    }
    print_disturbance(o, &a.common, workers.iter().filter_map(|w| w.disturbance.as_ref()))?;
    finish(a.common.json.as_deref(), &clock, &run.threads, &[], run.interrupted, |ctx| {
        results::trylock::Trylock::new(ctx, run.to_result())
    })
}

fn dump_samples(path: &Path, workers: &[trylock::WorkerResult]) -> Result<usize> {
    let f = std::fs::File::create(path).with_context(|| format!("cannot create -o file {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut n = 0;
    for wk in workers {
        for s in &wk.busy_ring {
            writeln!(w, "{s}").with_context(|| format!("writing {}", path.display()))?;
            n += 1;
        }
    }
    w.flush().with_context(|| format!("writing {}", path.display()))?;
    Ok(n)
}

/// `# disturbance` lines: per measuring thread, switches, migrations, the longest loop gap; and
/// `--disturbance-csv`, one row per thread (`run` is `1`: these commands make one run).
fn print_disturbance<'a>(
    o: Out,
    common: &Common,
    threads: impl IntoIterator<Item = &'a schedlab_report::disturb::Disturbance>,
) -> Result<()> {
    let threads: Vec<&schedlab_report::disturb::Disturbance> = threads.into_iter().collect();
    for d in &threads {
        say!(o, "# disturbance {}", d.line());
    }
    if let Some(path) = &common.disturbance_csv {
        schedlab_report::disturb::write_csv(path, threads.iter().map(|d| ("1", *d)))?;
    }
    Ok(())
}

/// Common tail: degraded warnings, interrupted note, JSON (the typed result `make` builds from
/// the context).
fn finish<K: Serialize>(
    json: Option<&Path>,
    clock: &ClockInfo,
    threads: &[ThreadGot],
    extra: &[String],
    interrupted: bool,
    make: impl FnOnce(results::prims::Context) -> K,
) -> Result<i32> {
    let degraded = place::degraded_lines(threads, extra);
    print_degraded(&degraded);
    if interrupted {
        eprintln!("note: interrupted (Ctrl-C): the figures above cover the part that ran");
    }
    if let Some(path) = json {
        schedlab_report::export::write_json(path, &make(context(clock, degraded)))?;
    }
    Ok(if interrupted { schedlab_report::frontend::exit::INTERRUPTED } else { 0 })
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
pub struct NotifyArgs {
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

fn run_notify(a: NotifyArgs) -> Result<i32> {
    let o = Out::for_json(a.common.json.as_deref());
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
    for (what, p) in [("--json", &a.common.json), ("--histfile", &a.histfile), ("--disturbance-csv", &a.common.disturbance_csv)] {
        if let Some(p) = p {
            check_writable(p, what)?;
        }
    }
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
    let cfg = NotifyConfig {
        test,
        mechanism,
        notifications,
        sender_cpu,
        receiver_cpu,
        gap_ns: (a.gap_us * 1000.0) as u64,
        allow_degraded: a.common.allow_degraded,
        duration_ns: a.duration,
    };
    // SIGINT/SIGTERM stop the measurement loops (partial results are reported), not the process.
    schedlab_report::frontend::interrupt();
    let clock = ClockInfo::measure();
    print_context(o, &clock);
    let place_s = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
    let count = match (notifications, a.duration) {
        (u64::MAX, Some(d)) => format!("notifications for {}", fmt_secs(d)),
        (n, Some(d)) => format!("{n} notifications or {}, whichever first", fmt_secs(d)),
        (n, None) => format!("{n} notifications"),
    };
    say!(
        o,
        "# notify test {}: {mechanism}, {count}, sender {}, receiver {}{}",
        if a.sender_test { "B (sender cost, receiver asleep)" } else { "A (receiver side)" },
        place_s(sender_cpu),
        place_s(receiver_cpu),
        if a.sender_test { format!(", gap {} us", a.gap_us) } else { String::new() }
    );
    let rc = RunClock::start();
    let run = notify::run(&cfg)?;
    for t in &run.threads {
        say!(o, "{}", got_line(t));
    }
    let (s, r) = (&run.sender, &run.receiver);
    let rcv_line = format!(
        "{}receiver rate {} ops, #wakeups {}",
        rc.prefix("rcv_body", r.cpu_at_end),
        c_exp(r.rate_ops_per_s, 3),
        r.wakeups
    );
    match test {
        NotifyTest::Receiver => {
            say!(o, "{}sender rate {} ops", rc.prefix("snd_body", s.cpu_at_end), c_exp(s.rate_ops_per_s, 3));
            say!(o, "{rcv_line}");
            say!(
                o,
                "# {} notifications sent, {} received in {} wake-ups ({:.2} per wake-up)",
                s.sent,
                r.received,
                r.wakeups,
                r.received as f64 / r.wakeups.max(1) as f64
            );
        }
        NotifyTest::Sender => {
            say!(o, "{rcv_line}");
            let p = rc.prefix("snd_slow_b", s.cpu_at_end);
            say!(o, "{p}sender cost {} ns", c_exp(s.cost_avg_ns, 3));
            say!(o, "# sender cost {}", pcts(&s.cost_ns, "ns"));
            say!(
                o,
                "# wake-up latency (sender's clock before notify -> receiver back from wait) {}",
                pcts(&r.wake_latency_ns, "ns")
            );
            say!(
                o,
                "# {} of {} notifications woke the receiver separately; each sample includes one clock read ({:.1} ns)",
                r.wakeups,
                s.sent,
                clock.read_cost_amortized_ns
            );
        }
    }
    if s.stopped_by_duration {
        say!(o, "# stopped after -D {} with {} notifications sent", fmt_secs(a.duration.unwrap_or(0)), s.sent);
    }
    if let Some(path) = &a.histfile {
        let cols = [("sender cost", &s.cost_hist), ("wake-up latency", &r.wake_latency_hist)];
        write_histfile(path, &cols, a.hist_max_us)?;
        say!(o, "# histograms (1 us buckets: sender cost, wake-up latency) written to {}", path.display());
    }
    print_disturbance(o, &a.common, [&s.disturbance, &r.disturbance].into_iter().flatten())?;
    finish(a.common.json.as_deref(), &clock, &run.threads, &[], run.interrupted, |ctx| {
        results::notify::Notify::new(ctx, run.to_result())
    })
}

fn fmt_secs(ns: u64) -> String {
    format!("{} s", ns as f64 / 1e9)
}

/// Writes histograms of nanosecond samples in rt-tests' (`cyclictest --histfile`) format: one
/// line per microsecond bucket from 0 to the largest sample below `max_us` (`%06d` bucket, then
/// `%06lu` counts separated by tabs, one column per histogram), then `# Total:`,
/// `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:` (us) and `# Histogram Overflows:`
/// (samples of `max_us` or more). Counts come from the HDR histograms (3 significant digits: a
/// sample lands in the bucket of its equivalence range's middle value).
fn write_histfile(path: &Path, cols: &[(&str, &schedlab_report::Hist)], max_us: u64) -> Result<()> {
    let text = histfile_text(cols, max_us);
    std::fs::write(path, text).with_context(|| format!("writing --histfile {}", path.display()))
}

fn histfile_text(cols: &[(&str, &schedlab_report::Hist)], max_us: u64) -> String {
    use std::fmt::Write as _;
    let mut buckets = vec![vec![0u64; max_us as usize]; cols.len()];
    let mut overflows = vec![0u64; cols.len()];
    let mut top = 0usize;
    for (c, (_, h)) in cols.iter().enumerate() {
        let inner = h.inner();
        for v in inner.iter_recorded() {
            let us = (inner.median_equivalent(v.value_iterated_to()) / 1000) as usize;
            let n = v.count_since_last_iteration();
            match buckets[c].get_mut(us) {
                Some(b) => {
                    *b += n;
                    top = top.max(us);
                }
                None => overflows[c] += n,
            }
        }
    }
    let mut t = String::new();
    let _ = writeln!(t, "# Histogram: {}", cols.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "));
    if cols.iter().any(|(_, h)| !h.is_empty()) {
        for us in 0..=top {
            let row: Vec<String> = buckets.iter().map(|b| format!("{:06}", b[us])).collect();
            let _ = writeln!(t, "{us:06} {}", row.join("\t"));
        }
    }
    let per = |f: &dyn Fn(&schedlab_report::Hist) -> u64, width: usize| -> String {
        cols.iter().map(|(_, h)| format!(" {:0width$}", f(h), width = width)).collect()
    };
    let us = |v: f64| (v / 1000.0).round() as u64;
    let _ = writeln!(t, "# Total:{}", per(&|h| h.len(), 9));
    let _ = writeln!(t, "# Min Latencies:{}", per(&|h| if h.is_empty() { 0 } else { us(h.summary(1.0).min) }, 5));
    let _ = writeln!(t, "# Avg Latencies:{}", per(&|h| if h.is_empty() { 0 } else { us(h.summary(1.0).mean) }, 5));
    let _ = writeln!(t, "# Max Latencies:{}", per(&|h| if h.is_empty() { 0 } else { us(h.summary(1.0).max) }, 5));
    let ov: String = overflows.iter().map(|n| format!(" {n:05}")).collect();
    let _ = writeln!(t, "# Histogram Overflows:{ov}");
    t
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
pub struct SemtestArgs {
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

fn run_semtest(a: SemtestArgs) -> Result<i32> {
    let o = Out::for_json(a.common.json.as_deref());
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
    if a.policy_rr && a.priority == 0 {
        eprintln!("note: -r selects SCHED_RR only together with a real-time priority (-p 1..99); running SCHED_OTHER");
    }
    let rt = (a.priority > 0).then_some(RtRequest { round_robin: a.policy_rr, priority: a.priority });
    let cpus = online_cpus();
    let pairs = match (a.num_cpus, placement) {
        (Some(n), _) => n,
        (None, Placement::Fixed(..)) => 1,
        (None, _) => cpus.len(),
    };
    let seed = a.seed.unwrap_or_else(|| crate::clock::now_ns() ^ 0x5eed);
    let cfg = SemtestConfig {
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
    semtest::pair_cpus(&cfg, &cpus)?;
    anyhow::ensure!(iterations > 0, "-i 0: at least one iteration is needed");
    for (what, p) in [("--json", &a.common.json), ("--histfile", &a.histfile), ("--disturbance-csv", &a.common.disturbance_csv)] {
        if let Some(p) = p {
            check_writable(p, what)?;
        }
    }
    // SIGINT/SIGTERM stop the measurement loops (partial results are reported), not the process.
    schedlab_report::frontend::interrupt();
    let clock = ClockInfo::measure();
    // Schedlab's own lines start with '#' and come before and after the seed's block, which is
    // printed as the original did, so scripts that parse it keep working.
    say!(o, "# {}", MachineInfo::collect().line());
    say!(o, "# {}", clock.line());
    let run_for = match (a.iterations, a.duration) {
        (_, None) => format!("{iterations} iterations"),
        (None, Some(d)) => format!("{} (-D)", fmt_secs(d)),
        (Some(i), Some(d)) => format!("{i} iterations or {} (-D), whichever first", fmt_secs(d)),
    };
    say!(
        o,
        "# semtest: {}, primitive {primitive}, placement {}{}, interval {} us, warm-up {} iterations, {run_for}",
        if mode == Mode::OneWay { "one-way (one wake-up per sample)" } else { "round-trip (two wake-ups per sample)" },
        placement.describe(),
        if placement == Placement::Permuted { format!(" (seed {seed})") } else { String::new() },
        a.interval,
        a.warmup
    );
    say!(o, "\nStarting test:");
    let run = semtest::run(&cfg)?;
    // Header lines print what the threads GOT (read back), not what was asked.
    let pinned = run.threads.iter().all(|t| t.got.allowed_cpus.len() == 1);
    let first = run.threads.first();
    let pri = first.map_or(0, |t| t.got.priority);
    let pol = first.map_or("unknown", |t| t.got.policy.name());
    let asked = |got: String, want: String| if got == want { got } else { format!("{got} (asked for {want}: not granted)") };
    let done: u64 = run.pairs.iter().map(|p| p.lat_us.count).min().unwrap_or(0);
    let head = |k: &str, v: String| format!("{k:<16}{v}");
    say!(
        o,
        "{}",
        head(
            "Affinity:",
            asked(if pinned { "On" } else { "Off" }.into(), if placement == Placement::Unpinned { "Off" } else { "On" }.into())
        )
    );
    say!(
        o,
        "{}",
        head(
            "Iterations:",
            if a.iterations.is_some() {
                iterations.to_string()
            } else if a.duration.is_some() {
                done.to_string()
            } else {
                iterations.to_string()
            }
        )
    );
    say!(o, "{}", head("num_cpus:", pairs.to_string()));
    say!(o, "{}", head("Priority:", asked(pri.to_string(), a.priority.to_string())));
    let want_pol = match rt {
        Some(r) => r.policy_name(),
        None => "SCHED_OTHER",
    };
    say!(o, "{}", head("Policy:", asked(pol.to_string(), want_pol.to_string())));
    say!(o, "Summary of {done} iterations");
    // The original's values are whole microseconds.
    let whole = |v: f64| v.round();
    for p in &run.pairs {
        let tm = &run.threads[2 * p.index];
        say!(
            o,
            "{}",
            seed_tabs(&format!(
                "P: {:2}, {}\tPri: {}\tMax:{:12}\tMin:{:12}",
                p.index,
                p.polo_cpu_at_end,
                tm.got.priority,
                whole(p.lat_us.max),
                whole(p.lat_us.min)
            ))
        );
    }
    let with_samples: Vec<&semtest::PairResult> = run.pairs.iter().filter(|p| p.lat_us.count > 0).collect();
    let maxes: Vec<f64> = with_samples.iter().map(|p| whole(p.lat_us.max)).collect();
    let mins: Vec<f64> = with_samples.iter().map(|p| whole(p.lat_us.min)).collect();
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let gmax = maxes.iter().copied().fold(0.0, f64::max);
    let gmin = if mins.is_empty() { 0.0 } else { mins.iter().copied().fold(f64::INFINITY, f64::min) };
    say!(
        o,
        "{}",
        seed_tabs(&format!("(Max) Global: {gmax:12} usvg: {:.4} us\tmiddle: {:.6}", mean(&maxes), semtest::median(&maxes)))
    );
    say!(
        o,
        "{}",
        seed_tabs(&format!("(Min) Global: {gmin:12} usvg: {:.4} us\tmiddle: {:.6}", mean(&mins), semtest::median(&mins)))
    );
    let secs = run.duration_s;
    let (h, m) = ((secs / 3600.0) as u64, ((secs % 3600.0) / 60.0) as u64);
    say!(o, "Test took {h} hours {m} mins {:.6} secs to complete", secs % 60.0);
    // Schedlab's detail, after the seed's block.
    for p in &run.pairs {
        let tm = &run.threads[2 * p.index];
        let tp = &run.threads[2 * p.index + 1];
        let req = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
        say!(
            o,
            "# P: {:2} min {:.1} avg {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} us | marco {} (ran on {}), polo {} (ran on {}), {}{}",
            p.index,
            p.lat_us.min,
            p.lat_us.mean,
            p.lat_us.p50,
            p.lat_us.p99,
            p.lat_us.p999,
            p.lat_us.max,
            req(p.marco_cpu_requested),
            p.marco_cpu_at_end,
            req(p.polo_cpu_requested),
            p.polo_cpu_at_end,
            tm.got.policy.name(),
            if tp.got.policy != tm.got.policy { format!(" / polo {}", tp.got.policy.name()) } else { String::new() }
        );
    }
    say!(o, "# (All) Global: {} ({} samples, HDR)", pcts_f(&run.all_lat_us), run.all_lat_us.count);
    say!(
        o,
        "# mlockall: {}",
        if run.mlock.locked {
            "yes"
        } else if a.mlockall {
            "NO (refused)"
        } else {
            "no"
        }
    );
    if let Some(path) = &a.histfile {
        let names: Vec<String> = run.pairs.iter().map(|p| format!("pair {}", p.index)).collect();
        let cols: Vec<(&str, &schedlab_report::Hist)> =
            names.iter().map(String::as_str).zip(run.pairs.iter().map(|p| &p.hist)).collect();
        write_histfile(path, &cols, a.hist_max_us)?;
        say!(o, "# histogram (1 us buckets, one column per pair) written to {}", path.display());
    }
    print_disturbance(o, &a.common, run.pairs.iter().flat_map(|p| [&p.marco_disturbance, &p.polo_disturbance]))?;
    let extra: Vec<String> = run.mlock.error.iter().cloned().collect();
    finish(a.common.json.as_deref(), &clock, &run.threads, &extra, run.interrupted, |ctx| {
        results::semtest::Semtest::new(ctx, run.to_result())
    })
}

/// Expands tabs to 8-column stops: the seed shows the original's tab-separated lines with the
/// tabs expanded, and that is the text schedlab reproduces.
fn seed_tabs(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for ch in s.chars() {
        if ch == '\t' {
            let pad = 8 - out.chars().count() % 8;
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.push(ch);
        }
    }
    out
}

fn pcts_f(s: &Summary) -> String {
    format!("p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} us", s.p50, s.p90, s.p99, s.p999, s.max)
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
    fn bad_input_is_refused_before_running() {
        assert!(main(args(&["trylock", "-n", "0"])).is_err());
        assert!(main(args(&["trylock", "--lock", "rwlock"])).unwrap_err().to_string().contains("rwlock"));
        assert!(main(args(&["trylock", "-o", "x.txt"])).unwrap_err().to_string().contains("-F"));
        assert!(main(args(&["trylock", "-t", "0"])).is_err());
        assert!(main(args(&["notify", "--primitive", "carrier-pigeon"])).is_err());
        assert!(main(args(&["semtest", "-n", "0"])).is_err());
        assert!(main(args(&["semtest", "-p", "100"])).is_err());
        assert_eq!(main(args(&["semtest", "--bogus"])).unwrap(), 2);
        let many = (online_cpus().len() + 1).to_string();
        assert!(main(args(&["semtest", "-n", &many])).unwrap_err().to_string().contains("only"));
        assert!(main(args(&["trylock", "-n", &many, "--pin"])).unwrap_err().to_string().contains("--pin"));
    }

    #[test]
    fn seed_lines_have_the_seeds_layout() {
        // Lines copied from the seed's example output.
        let p = |i: usize, cpu: i32, pri: i32, max: f64, min: f64| {
            seed_tabs(&format!("P: {i:2}, {cpu}\tPri: {pri}\tMax:{max:12}\tMin:{min:12}"))
        };
        assert_eq!(p(0, 6, 0, 303.0, 5.0), "P:  0, 6        Pri: 0  Max:         303        Min:           5");
        assert_eq!(p(7, 0, 90, 304.0, 4.0), "P:  7, 0        Pri: 90 Max:         304        Min:           4");
        assert_eq!(p(2, 7, 0, 9430.0, 4.0), "P:  2, 7        Pri: 0  Max:        9430        Min:           4");
        let g =
            |k: &str, v: f64, avg: f64, mid: f64| seed_tabs(&format!("({k}) Global: {v:12} usvg: {avg:.4} us\tmiddle: {mid:.6}"));
        assert_eq!(g("Max", 348.0, 202.75, 165.0), "(Max) Global:          348 usvg: 202.7500 us    middle: 165.000000");
        assert_eq!(g("Min", 5.0, 4.875, 5.0), "(Min) Global:            5 usvg: 4.8750 us      middle: 5.000000");
        assert_eq!(g("Max", 9430.0, 5910.25, 5863.5), "(Max) Global:         9430 usvg: 5910.2500 us   middle: 5863.500000");
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
    fn histfile_has_rt_tests_shape() {
        let mut a = schedlab_report::Hist::new();
        let mut b = schedlab_report::Hist::new();
        for ns in [1_200, 1_900, 3_100, 3_400, 3_499] {
            a.record(ns);
        }
        b.record(2_000);
        b.record(50_000_000);
        let t = histfile_text(&[("x", &a), ("y", &b)], 100);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "# Histogram: x, y");
        assert_eq!(lines[1], "000000 000000\t000000");
        assert_eq!(lines[2], "000001 000002\t000000");
        assert_eq!(lines[3], "000002 000000\t000001");
        assert_eq!(lines[4], "000003 000003\t000000");
        assert_eq!(lines[5], "# Total: 000000005 000000002");
        assert_eq!(lines[6], "# Min Latencies: 00001 00002");
        assert!(lines[8].starts_with("# Max Latencies: 00003 5000"), "{}", lines[8]);
        assert_eq!(lines[9], "# Histogram Overflows: 00000 00001");
        let empty = histfile_text(&[("x", &schedlab_report::Hist::new())], 10);
        assert!(empty.starts_with("# Histogram: x\n# Total: 000000000\n"), "{empty}");
    }

    #[test]
    fn writability_is_checked_without_side_effects() {
        let dir = std::env::temp_dir().join(format!("schedlab-prims-wr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.txt");
        check_writable(&f, "-o").unwrap();
        assert!(!f.exists());
        std::fs::write(&f, "keep").unwrap();
        check_writable(&f, "-o").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "keep");
        let e = check_writable(&dir.join("none/x.txt"), "--histfile").unwrap_err();
        assert!(format!("{e:#}").contains("--histfile file"), "{e:#}");
        check_writable(Path::new("-"), "--json").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ops_conversion() {
        assert_eq!(ops_from_millions(0.5, "-t").unwrap(), 500_000);
        assert!(ops_from_millions(-1.0, "-t").is_err());
        assert!(ops_from_millions(f64::NAN, "-t").is_err());
    }
}
