//! `schedlab trylock`, `schedlab notify` and `schedlab semtest` as the binary runs them: the
//! command line through [`crate::cli`] into a job, every output file checked before measuring,
//! the measurement ([`crate::trylock::run`], [`crate::notify::run`], [`crate::semtest::run`]),
//! the seeds' output lines, the files, and the typed result (`--json FILE`, with the machine
//! facts).
//!
//! Output lines start like the originals': seconds since start, the reporting function, and a
//! bracketed number. In the originals that number was a source line; here it is **the CPU the
//! reporting thread was running on** when it finished (read with `sched_getcpu`). Context lines
//! (what was asked, what was got, the clock's cost) start with `# `.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use schedlab_report::frontend::check_writable;
use schedlab_report::machine::MachineInfo;
use schedlab_report::{results, Summary};
use serde::Serialize;

use crate::cli::{parse_args, NotifyJob, Outputs, PrimsCommand, SemtestJob, TrylockJob};
use crate::clock::{self, c_exp, current_cpu, ClockInfo, RunClock};
use crate::notify::{self, NotifyTest};
use crate::place::{self, ThreadGot};
use crate::semtest::{self, Mode, Placement};
use crate::trylock::{self, TrylockTest, TrylockWorker};

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

/// Runs the command; `args[0]` is the command name. 0 after help, 2 after a usage error (message
/// printed), the front-end kit's interrupted code after Ctrl-C.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    restore_sigpipe();
    match parse_args(args) {
        Ok(PrimsCommand::Trylock(job)) => trylock_main(&job),
        Ok(PrimsCommand::Notify(job)) => notify_main(&job),
        Ok(PrimsCommand::Semtest(job)) => semtest_main(&job),
        Err(e) => match e.downcast_ref::<clap::Error>() {
            Some(c) => {
                let _ = c.print();
                Ok(if c.use_stderr() { 2 } else { 0 })
            }
            None => Err(e),
        },
    }
}

/// Each named output file can be written (checked before measuring, nothing left behind).
fn check_outputs(files: &[(&str, &Option<PathBuf>)]) -> Result<()> {
    for (what, path) in files {
        if let Some(p) = path {
            check_writable(p, what)?;
        }
    }
    Ok(())
}

/// Lets `schedlab semtest | head` end quietly like a C tool instead of panicking in `println!`.
fn restore_sigpipe() {
    // SAFETY: resetting a signal's disposition to the default has no memory-safety preconditions;
    // this runs in the CLI process before any measuring thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// What every `--json` result carries besides the run itself.
fn context(clock: &ClockInfo, degraded: Vec<String>) -> results::prims::Context {
    results::prims::Context { argv: std::env::args().collect(), machine: MachineInfo::collect(), clock: clock.clone(), degraded }
}

fn print_context(o: Out, clock: &ClockInfo) {
    say!(o, "# {}", MachineInfo::collect().line());
    say!(o, "# {}", clock::line(clock));
}

fn print_degraded(lines: &[String]) {
    for l in lines {
        eprintln!("warning: degraded (--allow-degraded): {l}");
    }
}

fn got_line(t: &ThreadGot) -> String {
    format!("# {}: CPU {} (allowed {:?}), {}", t.requested.role, t.got.cpu, t.got.allowed_cpus, t.got.policy_text())
}

fn pcts(s: &Summary, unit: &str) -> String {
    format!("p50 {:.0} p90 {:.0} p99 {:.0} p99.9 {:.0} max {:.0} {unit}", s.p50, s.p90, s.p99, s.p999, s.max)
}

/// `schedlab trylock`: measures the job's lock and prints the seed's lines; the files, then the
/// typed result `schedlab.trylock`.
pub fn trylock_main(job: &TrylockJob) -> Result<i32> {
    let (cfg, outputs) = (&job.config, &job.outputs);
    let o = Out::for_json(outputs.json.as_deref());
    let (test, lock, ops) = (cfg.test, cfg.lock, cfg.ops_per_thread);
    if let Some(n) = &job.note {
        eprintln!("note: {n}");
    }
    check_outputs(&[("-o", &job.samples), ("--json", &outputs.json), ("--disturbance-csv", &outputs.disturbance_csv)])?;
    // SIGINT/SIGTERM stop the measurement loops (partial results are reported), not the process.
    schedlab_report::frontend::interrupt();
    let clock = clock::measure();
    print_context(o, &clock);
    let what = match test {
        TrylockTest::Busy => "test A (busy lock)",
        TrylockTest::Free => "test B (free lock, token passing)",
        TrylockTest::PingPong => "ping-pong (strict alternation)",
    };
    say!(o, "# trylock {what}: lock {lock}, {} threads, {ops} operations per thread", cfg.threads);
    let rc = RunClock::start();
    let trylock::Measured { run, busy_rings } = trylock::run(cfg)?;
    for t in &run.threads {
        say!(o, "{}", got_line(t));
    }
    if let (Some(x), Some(got)) = (cfg.alloc_cpu, run.alloc_cpu_got) {
        say!(o, "# lock allocated by a thread pinned to CPU {x} (ran on CPU {got})");
    }
    let mut workers: Vec<(&TrylockWorker, &Vec<u32>)> = run.workers.iter().zip(&busy_rings).collect();
    workers.sort_by_key(|(w, _)| w.index);
    match test {
        TrylockTest::Busy => {
            for (w, _) in &workers {
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
            let total = trylock::total_rate(&run);
            let per = total / workers.len().max(1) as f64;
            let p = rc.prefix("main", current_cpu());
            say!(o, "{p}BUSY: total {} ops, per-thread {} ops", c_exp(total, 3), c_exp(per, 3));
            say!(o, "# busy trylock cost from the rate (no clock in the loop): {:.2} ns per try per thread", 1e9 / per.max(1e-9));
            let cpu: f64 = workers.iter().map(|(w, _)| w.busy_ns_per_try_cpu).sum::<f64>() / workers.len().max(1) as f64;
            say!(o, "# per CPU time each thread got: {cpu:.2} ns per try (wall and CPU time differ when threads were preempted)");
        }
        TrylockTest::Free | TrylockTest::PingPong => {
            let func = if test == TrylockTest::Free { "fn_free" } else { "fn_pp" };
            for (w, _) in &workers {
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
            let (tb, tf, tp) = trylock::averages(&run);
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
            if let Some(path) = &job.samples {
                let n = dump_samples(path, workers.iter().map(|(_, ring)| ring.as_slice()))?;
                say!(o, "# {n} busy trylock samples (ns, one per line, thread by thread) written to {}", path.display());
            }
        }
    }
    print_disturbance(o, outputs, workers.iter().filter_map(|(w, _)| w.disturbance.as_ref()))?;
    let interrupted = run.interrupted;
    finish(outputs.json.as_deref(), &clock, &run.threads.clone(), &[], interrupted, |ctx| {
        results::trylock::Trylock::new(ctx, run)
    })
}

/// `-o`: the busy samples (ns), one per line, ring by ring; returns how many.
fn dump_samples<'a>(path: &Path, rings: impl IntoIterator<Item = &'a [u32]>) -> Result<usize> {
    let f = std::fs::File::create(path).with_context(|| format!("cannot create -o file {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut n = 0;
    for ring in rings {
        for s in ring {
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
    common: &Outputs,
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

/// `schedlab notify`: measures the job's mechanism and prints the seed's lines; `--histfile`, the
/// disturbance CSV, then the typed result `schedlab.notify`.
pub fn notify_main(job: &NotifyJob) -> Result<i32> {
    let (cfg, outputs) = (&job.config, &job.outputs);
    let o = Out::for_json(outputs.json.as_deref());
    check_outputs(&[("--json", &outputs.json), ("--histfile", &job.histfile), ("--disturbance-csv", &outputs.disturbance_csv)])?;
    let (mechanism, notifications, sender_test) = (cfg.mechanism, cfg.notifications, cfg.test == NotifyTest::Sender);
    let (sender_cpu, receiver_cpu, duration) = (cfg.sender_cpu, cfg.receiver_cpu, cfg.duration_ns);
    // SIGINT/SIGTERM stop the measurement loops (partial results are reported), not the process.
    schedlab_report::frontend::interrupt();
    let clock = clock::measure();
    print_context(o, &clock);
    let place_s = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
    let count = match (notifications, duration) {
        (u64::MAX, Some(d)) => format!("notifications for {}", fmt_secs(d)),
        (n, Some(d)) => format!("{n} notifications or {}, whichever first", fmt_secs(d)),
        (n, None) => format!("{n} notifications"),
    };
    say!(
        o,
        "# notify test {}: {mechanism}, {count}, sender {}, receiver {}{}",
        if sender_test { "B (sender cost, receiver asleep)" } else { "A (receiver side)" },
        place_s(sender_cpu),
        place_s(receiver_cpu),
        if sender_test { format!(", gap {} us", job.gap_us) } else { String::new() }
    );
    let rc = RunClock::start();
    let notify::Measured { run, cost_hist, wake_latency_hist } = notify::run(cfg)?;
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
    match cfg.test {
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
        say!(o, "# stopped after -D {} with {} notifications sent", fmt_secs(duration.unwrap_or(0)), s.sent);
    }
    if let Some(path) = &job.histfile {
        let cols = [("sender cost", &cost_hist), ("wake-up latency", &wake_latency_hist)];
        write_histfile(path, &cols, job.hist_max_us)?;
        say!(o, "# histograms (1 us buckets: sender cost, wake-up latency) written to {}", path.display());
    }
    print_disturbance(o, outputs, [&s.disturbance, &r.disturbance].into_iter().flatten())?;
    let interrupted = run.interrupted;
    finish(outputs.json.as_deref(), &clock, &run.threads.clone(), &[], interrupted, |ctx| results::notify::Notify::new(ctx, run))
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

/// `schedlab semtest`: measures the job's pairs and prints the seed's block, then schedlab's
/// detail; `--histfile`, the disturbance CSV, then the typed result `schedlab.semtest`.
pub fn semtest_main(job: &SemtestJob) -> Result<i32> {
    let (cfg, outputs) = (&job.config, &job.outputs);
    let o = Out::for_json(outputs.json.as_deref());
    for n in &job.notes {
        eprintln!("note: {n}");
    }
    check_outputs(&[("--json", &outputs.json), ("--histfile", &job.histfile), ("--disturbance-csv", &outputs.disturbance_csv)])?;
    let (iterations, mode, primitive, placement, seed, rt, pairs) =
        (cfg.iterations, cfg.mode, cfg.primitive, cfg.placement, cfg.seed, cfg.rt, cfg.pairs);
    // SIGINT/SIGTERM stop the measurement loops (partial results are reported), not the process.
    schedlab_report::frontend::interrupt();
    let clock = clock::measure();
    // Schedlab's own lines start with '#' and come before and after the seed's block, which is
    // printed as the original did, so scripts that parse it keep working.
    say!(o, "# {}", MachineInfo::collect().line());
    say!(o, "# {}", clock::line(&clock));
    let run_for = match (job.iterations_given, cfg.duration_ns) {
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
        cfg.interval_us,
        cfg.warmup
    );
    say!(o, "\nStarting test:");
    let semtest::Measured { run, hists } = semtest::run(cfg)?;
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
            if job.iterations_given.is_some() {
                iterations.to_string()
            } else if cfg.duration_ns.is_some() {
                done.to_string()
            } else {
                iterations.to_string()
            }
        )
    );
    say!(o, "{}", head("num_cpus:", pairs.to_string()));
    say!(o, "{}", head("Priority:", asked(pri.to_string(), job.priority.to_string())));
    let want_pol = match rt {
        Some(r) => place::policy_name(&r),
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
    let with_samples: Vec<&semtest::SemtestPair> = run.pairs.iter().filter(|p| p.lat_us.count > 0).collect();
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
        } else if cfg.mlockall {
            "NO (refused)"
        } else {
            "no"
        }
    );
    if let Some(path) = &job.histfile {
        let names: Vec<String> = run.pairs.iter().map(|p| format!("pair {}", p.index)).collect();
        let cols: Vec<(&str, &schedlab_report::Hist)> = names.iter().map(String::as_str).zip(&hists).collect();
        write_histfile(path, &cols, job.hist_max_us)?;
        say!(o, "# histogram (1 us buckets, one column per pair) written to {}", path.display());
    }
    print_disturbance(o, outputs, run.pairs.iter().flat_map(|p| [&p.marco_disturbance, &p.polo_disturbance]))?;
    let extra: Vec<String> = run.mlock.error.iter().cloned().collect();
    let interrupted = run.interrupted;
    finish(outputs.json.as_deref(), &clock, &run.threads.clone(), &extra, interrupted, |ctx| {
        results::semtest::Semtest::new(ctx, run)
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
    fn bad_input_is_refused_before_running() {
        assert!(main(args(&["trylock", "-n", "0"])).is_err());
        assert!(main(args(&["trylock", "--lock", "rwlock"])).unwrap_err().to_string().contains("rwlock"));
        assert!(main(args(&["trylock", "-o", "x.txt"])).unwrap_err().to_string().contains("-F"));
        assert!(main(args(&["trylock", "-t", "0"])).is_err());
        assert!(main(args(&["notify", "--primitive", "carrier-pigeon"])).is_err());
        assert!(main(args(&["semtest", "-n", "0"])).is_err());
        assert!(main(args(&["semtest", "-p", "100"])).is_err());
        assert_eq!(main(args(&["semtest", "--bogus"])).unwrap(), 2);
        let many = (schedlab_report::machine::online_cpus().len() + 1).to_string();
        assert!(main(args(&["semtest", "-n", &many])).unwrap_err().to_string().contains("only"));
        assert!(main(args(&["trylock", "-n", &many, "--pin"])).unwrap_err().to_string().contains("--pin"));
        // A file that cannot be written stops the command before anything is measured.
        let e = main(args(&["trylock", "-F", "-t", "1000", "-o", "/nonexistent-dir/d.txt"])).unwrap_err();
        assert!(
            format!("{e:#}").contains("-o file /nonexistent-dir/d.txt cannot be written (checked before measuring)"),
            "{e:#}"
        );
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
}
