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
use schedlab_report::Summary;
use serde::Serialize;

use crate::chan::Mechanism;
use crate::clock::{c_exp, current_cpu, ClockInfo, RunClock};
use crate::locks::LockKind;
use crate::notify::{self, NotifyConfig, NotifyTest};
use crate::place::{self, RtRequest, ThreadGot};
use crate::semtest::{self, Mode, Placement, SemtestConfig};
use crate::trylock::{self, TrylockConfig, TrylockTest};

/// Runs the command; `args[0]` is the command name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    restore_sigpipe();
    let cmd = args.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
    match cmd.as_str() {
        "trylock" => parse::<TrylockArgs>(args).map_or_else(Ok, run_trylock),
        "notify" => parse::<NotifyArgs>(args).map_or_else(Ok, run_notify),
        "semtest" => parse::<SemtestArgs>(args).map_or_else(Ok, run_semtest),
        other => anyhow::bail!("schedlab-prims does not provide '{other}' (it has trylock, notify, semtest)"),
    }
}

/// Lets `schedlab semtest | head` end quietly like a C tool instead of panicking in `println!`.
fn restore_sigpipe() {
    // SAFETY: resetting a signal's disposition to the default has no memory-safety preconditions;
    // this runs in the CLI process before any measuring thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Parses, or gives the exit code: 0 after help, 2 after a usage error (message printed).
fn parse<T: Parser>(args: Vec<OsString>) -> std::result::Result<T, i32> {
    T::try_parse_from(args).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            2
        } else {
            0
        }
    })
}

/// Everything a `--json` result carries besides the run itself.
#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    command: &'a str,
    argv: Vec<String>,
    machine: MachineInfo,
    clock: &'a ClockInfo,
    /// Requests that were not granted (the run was made anyway because of --allow-degraded).
    degraded: Vec<String>,
    run: &'a T,
}

fn write_json<T: Serialize>(path: &Path, command: &str, clock: &ClockInfo, degraded: Vec<String>, run: &T) -> Result<()> {
    let env = Envelope {
        command,
        argv: std::env::args().collect(),
        machine: MachineInfo::collect(),
        clock,
        degraded,
        run,
    };
    schedlab_report::export::write_json(path, &env)
}

fn print_context(clock: &ClockInfo) {
    println!("# {}", MachineInfo::collect().line());
    println!("# {}", clock.line());
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
    #[command(flatten)]
    common: Common,
}

/// Options every command has.
#[derive(clap::Args, Debug)]
struct Common {
    /// write the result (with machine facts) as JSON to FILE ('-' for stdout)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
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
    };
    trylock::validate(&cfg)?;
    place::install_ctrlc();
    let clock = ClockInfo::measure();
    print_context(&clock);
    let what = match test {
        TrylockTest::Busy => "test A (busy lock)",
        TrylockTest::Free => "test B (free lock, token passing)",
        TrylockTest::PingPong => "ping-pong (strict alternation)",
    };
    println!("# trylock {what}: lock {lock}, {} threads, {ops} operations per thread", a.threads);
    let rc = RunClock::start();
    let run = trylock::run(&cfg)?;
    for t in &run.threads {
        println!("{}", got_line(t));
    }
    if let (Some(x), Some(got)) = (a.alloc_core, run.alloc_cpu_got) {
        println!("# lock allocated by a thread pinned to CPU {x} (ran on CPU {got})");
    }
    let mut workers = run.workers.clone();
    workers.sort_by_key(|w| w.index);
    match test {
        TrylockTest::Busy => {
            for w in &workers {
                println!(
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
            println!("{p}BUSY: total {} ops, per-thread {} ops", c_exp(total, 3), c_exp(per, 3));
            println!("# busy trylock cost from the rate (no clock in the loop): {:.2} ns per try per thread", 1e9 / per.max(1e-9));
        }
        TrylockTest::Free | TrylockTest::PingPong => {
            let func = if test == TrylockTest::Free { "fn_free" } else { "fn_pp" };
            for w in &workers {
                println!(
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
            println!("{p}t_busy {} ns, t_free {} ns", c_exp(tb, 3), c_exp(tf, 3));
            println!("{p}t_post {} ns", c_exp(tp, 3));
            let (mb, mf, mp, mh) = (run.all.busy_ns, run.all.free_ns, run.all.post_ns, run.all.free_handover_ns);
            println!("# all threads: busy {}; free {}; post {}", pcts(&mb, "ns"), pcts(&mf, "ns"), pcts(&mp, "ns"));
            println!(
                "# free tries that took a lock another thread had just released: {} of {} ({})",
                mh.count,
                mf.count,
                if mh.count > 0 { pcts(&mh, "ns") } else { "none".into() }
            );
            println!(
                "# every sample includes one clock read ({:.1} ns amortized, back-to-back p50 {} ns)",
                clock.read_cost_amortized_ns, clock.read_cost_p50_ns
            );
            if let Some(path) = &a.output {
                let n = dump_samples(path, &workers)?;
                println!("# {n} busy trylock samples (ns, one per line, thread by thread) written to {}", path.display());
            }
        }
    }
    finish(a.common.json.as_deref(), "trylock", &clock, &run.threads, &[], run.interrupted, &run)
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

/// Common tail: degraded warnings, interrupted note, JSON.
fn finish<T: Serialize>(
    json: Option<&Path>,
    cmd: &str,
    clock: &ClockInfo,
    threads: &[ThreadGot],
    extra: &[String],
    interrupted: bool,
    run: &T,
) -> Result<i32> {
    let degraded = place::degraded_lines(threads, extra);
    print_degraded(&degraded);
    if interrupted {
        eprintln!("note: interrupted (Ctrl-C): the figures above cover the part that ran");
    }
    if let Some(path) = json {
        write_json(path, cmd, clock, degraded, run)?;
    }
    Ok(if interrupted { 130 } else { 0 })
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
    #[command(flatten)]
    common: Common,
}

fn run_notify(a: NotifyArgs) -> Result<i32> {
    let mechanism: Mechanism = a.primitive.parse()?;
    let test = if a.sender_test { NotifyTest::Sender } else { NotifyTest::Receiver };
    let thousands = a.thousands.unwrap_or(if a.sender_test { 40.0 } else { 2000.0 });
    anyhow::ensure!(thousands.is_finite() && thousands > 0.0, "-n {thousands}: the number of notifications (in thousands) must be above 0");
    let notifications = (thousands * 1000.0).round() as u64;
    anyhow::ensure!(notifications >= 1, "-n {thousands}: less than one notification");
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
    };
    place::install_ctrlc();
    let clock = ClockInfo::measure();
    print_context(&clock);
    let place_s = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
    println!(
        "# notify test {}: {mechanism}, {notifications} notifications, sender {}, receiver {}{}",
        if a.sender_test { "B (sender cost, receiver asleep)" } else { "A (receiver side)" },
        place_s(sender_cpu),
        place_s(receiver_cpu),
        if a.sender_test { format!(", gap {} us", a.gap_us) } else { String::new() }
    );
    let rc = RunClock::start();
    let run = notify::run(&cfg)?;
    for t in &run.threads {
        println!("{}", got_line(t));
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
            println!("{}sender rate {} ops", rc.prefix("snd_body", s.cpu_at_end), c_exp(s.rate_ops_per_s, 3));
            println!("{rcv_line}");
            println!(
                "# {} notifications sent, {} received in {} wake-ups ({:.2} per wake-up)",
                s.sent,
                r.received,
                r.wakeups,
                r.received as f64 / r.wakeups.max(1) as f64
            );
        }
        NotifyTest::Sender => {
            println!("{rcv_line}");
            let p = rc.prefix("snd_slow_b", s.cpu_at_end);
            println!("{p}sender cost {} ns", c_exp(s.cost_avg_ns, 3));
            println!("# sender cost {}", pcts(&s.cost_ns, "ns"));
            println!("# wake-up latency (sender's clock before notify -> receiver back from wait) {}", pcts(&r.wake_latency_ns, "ns"));
            println!(
                "# {} of {} notifications woke the receiver separately; each sample includes one clock read ({:.1} ns)",
                r.wakeups, s.sent, clock.read_cost_amortized_ns
            );
        }
    }
    finish(a.common.json.as_deref(), "notify", &clock, &run.threads, &[], run.interrupted, &run)
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
    /// run threads for ITER iterations
    #[arg(short = 'i', long = "iterations", value_name = "ITER", default_value_t = 10_000)]
    iterations: u64,
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
    #[command(flatten)]
    common: Common,
}

fn run_semtest(a: SemtestArgs) -> Result<i32> {
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
        iterations: a.iterations,
        warmup: a.warmup,
        mode,
        primitive,
        placement,
        rt,
        interval_us: a.interval,
        mlockall: a.mlockall,
        allow_degraded: a.common.allow_degraded,
        seed,
    };
    semtest::pair_cpus(&cfg, &cpus)?;
    anyhow::ensure!(a.iterations > 0, "-i 0: at least one iteration is needed");
    place::install_ctrlc();
    let clock = ClockInfo::measure();
    println!("\nStarting test:");
    let run = semtest::run(&cfg)?;
    // Header lines print what the threads GOT (read back), not what was asked.
    let pinned = run.threads.iter().all(|t| t.got.allowed_cpus.len() == 1);
    let first = run.threads.first();
    let pri = first.map_or(0, |t| t.got.priority);
    let pol = first.map_or("unknown", |t| t.got.policy.name());
    let asked = |got: String, want: String| if got == want { got } else { format!("{got} (asked for {want}: not granted)") };
    println!("Affinity:       {}", asked(if pinned { "On" } else { "Off" }.into(), if placement == Placement::Unpinned { "Off" } else { "On" }.into()));
    println!("Iterations:     {}", a.iterations);
    println!("num_cpus:       {pairs}");
    println!("Priority:       {}", asked(pri.to_string(), a.priority.to_string()));
    let want_pol = match rt {
        Some(r) => r.policy_name(),
        None => "SCHED_OTHER",
    };
    println!("Policy:         {}", asked(pol.to_string(), want_pol.to_string()));
    println!("Mode:           {}", if mode == Mode::OneWay { "one-way (one wake-up per sample)" } else { "round-trip (two wake-ups per sample)" });
    println!("Primitive:      {primitive}");
    println!("Placement:      {}{}", placement.describe(), if placement == Placement::Permuted { format!(" (seed {seed})") } else { String::new() });
    println!("Interval:       {} us, warm-up {} iterations", a.interval, a.warmup);
    println!("mlockall:       {}", if run.mlock.locked { "yes" } else if a.mlockall { "NO (refused)" } else { "no" });
    println!("# {}", MachineInfo::collect().line());
    println!("# {}", clock.line());
    let done: u64 = run.pairs.iter().map(|p| p.lat_us.count).min().unwrap_or(0);
    println!("Summary of {done} iterations");
    for p in &run.pairs {
        let tm = &run.threads[2 * p.index];
        let tp = &run.threads[2 * p.index + 1];
        let req = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
        println!(
            "P: {:2}, {:<8} Pri: {:<2} Max: {:>12.1}        Min: {:>12.1}   avg {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} us | marco {} (ran on {}), polo {} (ran on {}), {}{}",
            p.index,
            p.polo_cpu_at_end,
            tm.got.priority,
            p.lat_us.max,
            p.lat_us.min,
            p.lat_us.mean,
            p.lat_us.p50,
            p.lat_us.p99,
            p.lat_us.p999,
            req(p.marco_cpu_requested),
            p.marco_cpu_at_end,
            req(p.polo_cpu_requested),
            p.polo_cpu_at_end,
            tm.got.policy.name(),
            if tp.got.policy != tm.got.policy { format!(" / polo {}", tp.got.policy.name()) } else { String::new() }
        );
    }
    let (mx, mn) = (run.max_global, run.min_global);
    println!("(Max) Global: {:>12.1} us avg: {:.4} us    middle: {:.6}", mx.value_us, mx.avg_us, mx.middle_us);
    println!("(Min) Global: {:>12.1} us avg: {:.4} us    middle: {:.6}", mn.value_us, mn.avg_us, mn.middle_us);
    println!("(All) Global: {} ({} samples, HDR)", pcts_f(&run.all_lat_us), run.all_lat_us.count);
    let secs = run.duration_s;
    let (h, m) = ((secs / 3600.0) as u64, ((secs % 3600.0) / 60.0) as u64);
    println!("Test took {h} hours {m} mins {:.6} secs to complete", secs % 60.0);
    let extra: Vec<String> = run.mlock.error.iter().cloned().collect();
    finish(a.common.json.as_deref(), "semtest", &clock, &run.threads, &extra, run.interrupted, &run)
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
        assert_eq!((s.iterations, s.priority), (10_000, 90));
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
    fn ops_conversion() {
        assert_eq!(ops_from_millions(0.5, "-t").unwrap(), 500_000);
        assert!(ops_from_millions(-1.0, "-t").is_err());
        assert!(ops_from_millions(f64::NAN, "-t").is_err());
    }
}
