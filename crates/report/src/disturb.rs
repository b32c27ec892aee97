//! Was a measuring thread disturbed? Per thread, over its measured window: the involuntary
//! context switches (the kernel took the CPU away), the voluntary ones (it slept), the
//! migrations (it moved to another CPU), and the longest gap between two iterations of its own
//! polling loop, with the mean wait a random arrival would have seen before the loop's next
//! iteration.
//!
//! - Switches: `getrusage(RUSAGE_THREAD)` (`ru_nivcsw`, `ru_nvcsw`) at the start and the end of
//!   the window, in the thread itself.
//! - Migrations: `se.nr_migrations` of `/proc/thread-self/sched` (kernels with scheduler
//!   debugging, as Debian's) at both ends: [`MigrationSource::ProcSched`]. Without that file,
//!   the CPU (`sched_getcpu`) at both ends: one migration when they differ, a lower bound
//!   ([`MigrationSource::CpuChange`]).
//! - Gaps: [`LoopGap::tick`] takes the clock value the loop already read (no clock read of its
//!   own): a subtraction, a compare and one multiply-add per iteration.
//!
//! Nothing here judges: the commands decide what counts as disturbed for what they measure
//! (`predict`'s verdict, for one).

use serde::{Deserialize, Serialize};

/// How the migrations were counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MigrationSource {
    /// `se.nr_migrations` of `/proc/thread-self/sched`: every migration.
    ProcSched,
    /// The CPU at the start and at the end of the window: 0 or 1, a lower bound.
    CpuChange,
}

/// The kernel's per-thread counters at one instant (the calling thread's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadCounters {
    pub involuntary: u64,
    pub voluntary: u64,
    /// `se.nr_migrations`, when the kernel exposes it.
    pub migrations: Option<u64>,
    /// The CPU the thread ran on at the read (`None` if `sched_getcpu` failed).
    pub cpu: Option<usize>,
}

impl ThreadCounters {
    /// Reads the calling thread's counters (two system calls and, when present, one small
    /// `/proc` file: call it at the ends of a window, not inside a measured loop).
    pub fn read() -> ThreadCounters {
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_THREAD reads the calling thread's usage into the struct we own.
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
        let (involuntary, voluntary) = if ok { (ru.ru_nivcsw as u64, ru.ru_nvcsw as u64) } else { (0, 0) };
        // SAFETY: sched_getcpu takes no arguments and only reports the current CPU.
        let cpu = unsafe { libc::sched_getcpu() };
        ThreadCounters {
            involuntary,
            voluntary,
            migrations: std::fs::read_to_string("/proc/thread-self/sched").ok().and_then(|t| parse_nr_migrations(&t)),
            cpu: usize::try_from(cpu).ok(),
        }
    }
}

/// `se.nr_migrations` from the text of `/proc/<pid>/task/<tid>/sched`.
pub fn parse_nr_migrations(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "se.nr_migrations").then(|| v.trim().parse().ok()).flatten()
    })
}

/// The longest gap between consecutive iterations of a loop, from the clock values the loop
/// already reads (ns on any monotonic time line).
#[derive(Clone, Copy, Debug)]
pub struct LoopGap {
    first: u64,
    last: u64,
    max: u64,
    /// When the longest gap ended.
    max_end: u64,
    /// Σ gap², for the mean residual wait (ns², as f64: a 4 s gap squared overflows u64).
    sq_sum: f64,
    ticks: u64,
}

impl LoopGap {
    /// Starts at the clock value `now`.
    pub fn new(now: u64) -> LoopGap {
        LoopGap { first: now, last: now, max: 0, max_end: now, sq_sum: 0.0, ticks: 0 }
    }

    /// One loop iteration that read the clock as `now`.
    #[inline(always)]
    pub fn tick(&mut self, now: u64) {
        let g = now.saturating_sub(self.last);
        if g > self.max {
            self.max = g;
            self.max_end = now;
        }
        let gf = g as f64;
        self.sq_sum += gf * gf;
        self.last = now;
        self.ticks += 1;
    }

    /// The longest gap so far, ns.
    pub fn max_ns(&self) -> u64 {
        self.max
    }

    /// Iterations seen.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// From the first to the last clock value seen, ns.
    pub fn span_ns(&self) -> u64 {
        self.last - self.first
    }

    /// When the longest gap ended, ns after the start.
    pub fn max_end_ns(&self) -> u64 {
        self.max_end - self.first
    }

    /// The mean time an event arriving at a uniformly random instant of the span waits for the
    /// loop's next iteration: Σ gap² / (2 Σ gap), ns (the residual-life formula). A loop that
    /// iterates every 100 ns gives 50 ns; one 3 ms stall in a 1 s span adds 4.5 µs.
    pub fn mean_residual_ns(&self) -> f64 {
        let span = self.span_ns();
        if span == 0 {
            0.0
        } else {
            self.sq_sum / (2.0 * span as f64)
        }
    }
}

/// A measured window of one thread: the counters at its start and the loop's gaps.
#[derive(Clone, Debug)]
pub struct Probe {
    start: ThreadCounters,
    pub gap: LoopGap,
}

impl Probe {
    /// Starts the window in the calling thread at the clock value `now`.
    pub fn start(now: u64) -> Probe {
        Probe { start: ThreadCounters::read(), gap: LoopGap::new(now) }
    }

    /// One loop iteration (see [`LoopGap::tick`]).
    #[inline(always)]
    pub fn tick(&mut self, now: u64) {
        self.gap.tick(now);
    }

    /// Ends the window in the same thread (the counters are the calling thread's).
    pub fn finish(&self, thread: &str) -> Disturbance {
        let end = ThreadCounters::read();
        let (migrations, migrations_source) = match (self.start.migrations, end.migrations) {
            (Some(a), Some(b)) => (b.saturating_sub(a), MigrationSource::ProcSched),
            _ => (u64::from(self.start.cpu != end.cpu), MigrationSource::CpuChange),
        };
        let g = &self.gap;
        Disturbance {
            thread: thread.to_string(),
            window_ns: g.span_ns(),
            involuntary_switches: end.involuntary.saturating_sub(self.start.involuntary),
            voluntary_switches: end.voluntary.saturating_sub(self.start.voluntary),
            migrations,
            migrations_source,
            loop_iterations: g.ticks(),
            max_gap_ns: g.max_ns(),
            max_gap_end_ns: g.max_end_ns(),
            mean_residual_ns: g.mean_residual_ns(),
        }
    }
}

/// What disturbed one thread during its measured window, as printed and exported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Disturbance {
    /// The thread's role, e.g. `sched`, `client0`, `waker`.
    pub thread: String,
    /// From the loop's first to its last clock read, ns.
    pub window_ns: u64,
    /// The kernel took the CPU away from the thread (preemption, or a yield that switched).
    pub involuntary_switches: u64,
    /// The thread blocked (slept, waited).
    pub voluntary_switches: u64,
    pub migrations: u64,
    pub migrations_source: MigrationSource,
    pub loop_iterations: u64,
    /// The longest interval between two consecutive iterations of the thread's loop, ns.
    pub max_gap_ns: u64,
    /// When it ended, ns after the window's start.
    pub max_gap_end_ns: u64,
    /// The mean wait, for an event at a random instant of the window, until the loop's next
    /// iteration (Σ gap² / 2 Σ gap), ns.
    #[serde(deserialize_with = "crate::results::nan_or_number")]
    #[schemars(with = "crate::results::NullableF64")]
    pub mean_residual_ns: f64,
}

impl Disturbance {
    /// One human line: `sched: 0 involuntary / 2 voluntary switches, 0 migrations, longest loop
    /// gap 3.1 us (at 0.412 s), mean residual 0.05 us, over 1.050 s`.
    pub fn line(&self) -> String {
        format!(
            "{}: {} involuntary / {} voluntary switches, {} migration{}{}, longest loop gap {:.1} us (at {:.3} s), mean residual {:.2} us, over {:.3} s",
            self.thread,
            self.involuntary_switches,
            self.voluntary_switches,
            self.migrations,
            if self.migrations == 1 { "" } else { "s" },
            if self.migrations_source == MigrationSource::CpuChange { " (CPU at start vs end, a lower bound)" } else { "" },
            self.max_gap_ns as f64 / 1e3,
            self.max_gap_end_ns as f64 / 1e9,
            self.mean_residual_ns / 1e3,
            self.window_ns as f64 / 1e9
        )
    }

    /// The CSV columns of [`Disturbance::csv_cells`], units in the names.
    pub const CSV_HEADER: [&'static str; 10] = [
        "thread",
        "window_ns",
        "involuntary_switches",
        "voluntary_switches",
        "migrations",
        "migrations_source",
        "loop_iterations",
        "max_gap_ns",
        "max_gap_end_ns",
        "mean_residual_ns",
    ];

    /// The row's cells, in [`Disturbance::CSV_HEADER`]'s order.
    pub fn csv_cells(&self) -> Vec<String> {
        vec![
            self.thread.clone(),
            self.window_ns.to_string(),
            self.involuntary_switches.to_string(),
            self.voluntary_switches.to_string(),
            self.migrations.to_string(),
            match self.migrations_source {
                MigrationSource::ProcSched => "proc_sched".into(),
                MigrationSource::CpuChange => "cpu_change".into(),
            },
            self.loop_iterations.to_string(),
            self.max_gap_ns.to_string(),
            self.max_gap_end_ns.to_string(),
            format!("{:.1}", self.mean_residual_ns),
        ]
    }
}

/// Writes `--disturbance-csv`: one row per measuring thread of every run, in the order given.
/// `run` names the run a row belongs to (an algorithm, `run 3`, a message size; the same for
/// every row of a one-run command), then [`Disturbance::CSV_HEADER`]'s columns.
pub fn write_csv<'a, I>(path: &std::path::Path, rows: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = (&'a str, &'a Disturbance)>,
{
    let mut header = vec!["run"];
    header.extend(Disturbance::CSV_HEADER);
    let mut c = crate::export::Csv::create(path, &header)?;
    for (run, d) in rows {
        let mut cells = vec![run.to_string()];
        cells.extend(d.csv_cells());
        c.row(&cells)?;
    }
    c.finish()?;
    Ok(())
}

/// The human block for a set of threads: one indented line each.
pub fn lines(threads: &[Disturbance]) -> String {
    let mut s = String::from("disturbance (per measuring thread, over its window):\n");
    for d in threads {
        s += &format!("  {}\n", d.line());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn now_ns(t0: Instant) -> u64 {
        t0.elapsed().as_nanos() as u64
    }

    #[test]
    fn nr_migrations_is_read_from_the_sched_file() {
        let text = "cat (11703, #threads: 1)\n----\nse.exec_start   :   461816.663794\nse.nr_migrations                             :                    7\nnr_switches :  1\n";
        assert_eq!(parse_nr_migrations(text), Some(7));
        assert_eq!(parse_nr_migrations("nr_switches : 1\n"), None);
        assert_eq!(parse_nr_migrations("se.nr_migrations : x\n"), None);
    }

    #[test]
    fn a_thread_that_sleeps_shows_voluntary_switches() {
        let d = std::thread::spawn(|| {
            let t0 = Instant::now();
            let mut p = Probe::start(now_ns(t0));
            for _ in 0..5 {
                std::thread::sleep(Duration::from_millis(2));
                p.tick(now_ns(t0));
            }
            p.finish("sleeper")
        })
        .join()
        .unwrap();
        // Each sleep blocks the thread: one voluntary switch at least.
        assert!(d.voluntary_switches >= 5, "{d:?}");
        assert_eq!(d.loop_iterations, 5);
        assert!(d.max_gap_ns >= 2_000_000, "{d:?}");
    }

    /// Two threads pinned to one CPU, both spinning: the kernel must take the CPU from each in
    /// turn, so each sees involuntary switches. They spin until both have seen one (the
    /// observable event), at most 20 s.
    #[test]
    fn threads_sharing_a_cpu_show_involuntary_switches() {
        let cpu = crate::machine::online_cpus().first().copied().unwrap_or(0);
        let seen = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let pinned = crate::machine::pin_current_thread(cpu);
                    let t0 = Instant::now();
                    let mut p = Probe::start(now_ns(t0));
                    loop {
                        p.tick(now_ns(t0));
                        if ThreadCounters::read().involuntary > p.start.involuntary {
                            seen[i].store(true, Ordering::SeqCst);
                        }
                        if (seen[0].load(Ordering::SeqCst) && seen[1].load(Ordering::SeqCst)) || t0.elapsed().as_secs() >= 20 {
                            break;
                        }
                        // A yield here would be a switch of its own: spin instead.
                        std::hint::spin_loop();
                    }
                    (pinned, p.finish(&format!("spinner{i}")))
                })
            })
            .collect();
        for h in handles {
            let (pinned, d) = h.join().unwrap();
            if let Err(e) = pinned {
                crate::skip!("cannot pin to CPU {cpu}: {e}");
            }
            assert!(d.involuntary_switches >= 1, "{d:?}");
            // Preempted while runnable: the other spinner ran meanwhile, a gap in this loop.
            assert!(d.max_gap_ns > 0, "{d:?}");
        }
    }

    #[test]
    fn an_injected_pause_shows_as_a_gap_and_in_the_residual() {
        let t0 = Instant::now();
        let start = now_ns(t0);
        let mut p = Probe::start(start);
        let (mut paused_at, mut pause_gap) = (0, 0);
        for i in 0..20_000u32 {
            if i == 10_000 {
                let before = now_ns(t0);
                p.tick(before);
                std::thread::sleep(Duration::from_millis(20));
                paused_at = now_ns(t0);
                pause_gap = paused_at - before;
                p.tick(paused_at);
                continue;
            }
            p.tick(now_ns(t0));
        }
        let d = p.finish("loop");
        assert!(d.max_gap_ns >= 20_000_000, "{d:?}");
        // The pause is the longest gap unless the machine stalled this thread even longer
        // elsewhere (a loaded machine may): then that one is reported, and it is longer still.
        assert!(d.max_gap_end_ns == paused_at - start || d.max_gap_ns > pause_gap, "{d:?}");
        assert_eq!(d.loop_iterations, 20_001);
        // One gap G in a span S gives a residual of at least G²/2S.
        let g = d.max_gap_ns as f64;
        assert!(d.mean_residual_ns >= g * g / (2.0 * d.window_ns as f64) * 0.999, "{d:?}");
    }

    #[test]
    fn the_residual_of_a_regular_loop_is_half_its_period() {
        let mut g = LoopGap::new(1_000);
        for k in 1..=1000u64 {
            g.tick(1_000 + 100 * k);
        }
        assert_eq!(g.max_ns(), 100);
        assert_eq!(g.span_ns(), 100_000);
        assert!((g.mean_residual_ns() - 50.0).abs() < 1e-9);
        assert_eq!(LoopGap::new(5).mean_residual_ns(), 0.0);
    }

    #[test]
    fn csv_cells_match_the_header() {
        let d = Probe::start(0).finish("x");
        assert_eq!(d.csv_cells().len(), Disturbance::CSV_HEADER.len());
        assert!(d.line().starts_with("x: "));
    }

    #[test]
    fn the_csv_file_has_a_row_per_thread_under_its_run() {
        let (a, b) = (Probe::start(0).finish("sched"), Probe::start(0).finish("client0"));
        let dir = std::env::temp_dir().join(format!("schedlab-disturb-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.csv");
        write_csv(&path, [("fifo", &a), ("sf", &b)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("run,thread,window_ns,"), "{text}");
        assert!(lines[1].starts_with("fifo,sched,") && lines[2].starts_with("sf,client0,"), "{text}");
        assert!(write_csv(&dir.join("no/such/dir/d.csv"), [("x", &a)]).is_err());
    }
}
