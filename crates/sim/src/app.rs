//! The flow of `schedlab sim`, `bench` and `workloads`: [`main`] turns argv into a
//! [`Command`] through [`crate::cli`], runs it through the library ([`crate::job`],
//! [`crate::bench`](mod@crate::bench), [`schedlab_workload`]), prints the tables, writes the files
//! asked for and returns the exit code.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use schedlab_report::export::write_json;
use schedlab_report::MachineInfo;

use crate::bench::bench;
use crate::cli::{config, parse_command, BenchPlan, Command, SimArgsError, SimPlan, WorkloadsRequest, WORKLOADS_HELP};
use crate::engine::{Arrivals, Control, SimConfig};
use crate::job;
use crate::output::thousands;
use crate::plot::write_figures;

/// Runs `schedlab sim`, `bench` or `workloads`; `args[0]` is the command name. Help prints and
/// returns 0, a usage error prints and returns 2; other errors are `Err` (exit 1).
pub fn main(args: Vec<OsString>) -> Result<i32> {
    match parse_command(args) {
        Ok(Command::Sim(p)) => sim_main(&p),
        Ok(Command::Bench(b)) => bench_main(&b),
        Ok(Command::Workloads(w)) => workloads_main(&w),
        Err(SimArgsError::Usage(e)) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            e.print().ok();
            Ok(code)
        }
        Err(SimArgsError::Invalid(e)) => Err(e),
    }
}

fn sim_main(p: &SimPlan) -> Result<i32> {
    for n in &p.notes {
        eprintln!("schedlab sim: note: {n}");
    }
    let cfg = config(p);
    let a = &p.output;
    let controls = job::controls(&cfg);
    {
        // The front-end kit's one SIGINT/SIGTERM handler; a second signal exits at once (130).
        let cs = controls.clone();
        let woken = schedlab_report::frontend::interrupt().subscribe();
        std::thread::spawn(move || {
            if woken.recv().is_ok() {
                for c in &cs {
                    c.stop.store(true, Ordering::Relaxed);
                }
            }
        });
    }
    let show_progress = !a.quiet && std::io::stderr().is_terminal();
    let r = job::run_with(&cfg, &controls, |configs, controls, done| {
        if show_progress {
            progress(configs, controls, done);
        }
    });
    let out = job::text(&r, &a.show);
    // `--json -` / `--csv -`: stdout carries only the export; the tables go to stderr.
    let dash = |p: &Option<PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if dash(&a.json) || dash(&a.csv) {
        eprint!("{out}");
    } else {
        print!("{out}");
    }
    for w in &r.warnings() {
        eprintln!("schedlab sim: warning: {w}");
    }
    if let Some(b) = &cfg.stats.compare {
        if r.stats.iter().any(|s| s.comparison.is_none()) {
            eprintln!("schedlab sim: note: --compare {}: no comparison where the base did not run", b.label());
        }
    }
    if let Some(p) = &a.json {
        write_json(p, &job::result(&r, std::env::args().collect(), MachineInfo::collect())?)?;
    }
    if let Some(p) = &a.csv {
        job::write_csv(&r, p)?;
    }
    if let Some(dir) = &a.plot {
        for f in write_figures(dir, r.shown())? {
            eprintln!("wrote {}", f.display());
        }
    }
    Ok(if r.interrupted { schedlab_report::frontend::exit::INTERRUPTED } else { 0 })
}

fn progress(configs: &[SimConfig], controls: &[Arc<Control>], done: &AtomicUsize) {
    use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
    let mp = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>8} [{bar:40}] {percent:>3}% {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let bars: Vec<ProgressBar> = configs
        .iter()
        .map(|c| {
            let total = match &c.arrivals {
                Arrivals::Trace(v) => v.iter().map(|x| u64::from(x.len)).sum(),
                _ => c.packets,
            };
            let b = mp.add(ProgressBar::new(total));
            b.set_style(style.clone());
            b.set_prefix(format!("{}%", crate::output::fmt_g(c.traffic)));
            b
        })
        .collect();
    while done.load(Ordering::Relaxed) < configs.len() {
        for (b, c) in bars.iter().zip(controls) {
            b.set_position(c.progress.load(Ordering::Relaxed));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for b in bars {
        b.finish_and_clear();
    }
}

fn bench_main(a: &BenchPlan) -> Result<i32> {
    let pinned = a.pinned();
    if pinned {
        let cpu = a.cpu.or_else(|| schedlab_report::machine::online_cpus().last().copied()).unwrap_or(0);
        schedlab_report::machine::pin_current_thread(cpu).with_context(|| format!("cannot pin the benchmark to CPU {cpu}"))?;
    }
    let threads = &a.threads;
    let got = schedlab_report::ThreadInfo::current();
    let cfg = SimConfig::report(a.traffic, a.packets, a.seed);
    let rs = bench(&cfg, a.repeat, threads);
    println!(
        "bench: {} strategies in lock step, traffic {}%, {} arrival packets x {} reps, seed {}, {} CPU {:?} (running on {})",
        cfg.strategies.len(),
        a.traffic,
        thousands(a.packets),
        a.repeat,
        a.seed,
        if pinned { "pinned to" } else { "threads allowed on" },
        got.allowed_cpus,
        got.cpu
    );
    for r in &rs {
        let tag =
            if rs.len() > 1 { format!("{} thread{}: ", r.threads, if r.threads == 1 { "" } else { "s" }) } else { String::new() };
        for (i, s) in r.samples.iter().enumerate() {
            println!(
                "  {tag}rep {i}: {:.3} s wall, {:.3} s CPU: {:.2} M arrival packets/s ({:.2} M per CPU-second)",
                s.wall_s,
                s.cpu_s,
                s.rate_pps / 1e6,
                s.cpu_rate_pps / 1e6
            );
        }
    }
    for r in &rs {
        println!(
            "median, {} thread{}: {:.2} M arrival packets/s wall, {:.2} M per CPU-second ({:.1} M packet-decisions/s over {} lanes); baseline (event loop and RNG only, one thread): {:.2} M/s; ratio {:.3}",
            r.threads,
            if r.threads == 1 { "" } else { "s" },
            r.median_rate_pps / 1e6,
            r.median_cpu_rate_pps / 1e6,
            r.median_lane_rate_pps / 1e6,
            r.strategies,
            r.baseline_median_rate_pps / 1e6,
            r.ratio_to_baseline
        );
    }
    for r in rs.iter().skip(1) {
        println!(
            "speedup {} vs {} thread{}: {:.2}x (median wall rates; same-run, alternating)",
            r.threads,
            rs[0].threads,
            if rs[0].threads == 1 { "" } else { "s" },
            r.median_rate_pps / rs[0].median_rate_pps
        );
    }
    if let Some(p) = &a.json {
        let doc = serde_json::json!({"command": "bench", "machine": MachineInfo::collect(), "thread": got, "result": rs[0], "results": rs});
        write_json(p, &doc)?;
    }
    Ok(0)
}

fn workloads_main(req: &WorkloadsRequest) -> Result<i32> {
    use schedlab_report::results::workloads::{WorkloadTable, Workloads, WorkloadsSchema};
    use schedlab_workload::{all, named, Reading, Unit, DEFAULT_BYTES_PER_PACKET};
    let (name, json) = match req {
        WorkloadsRequest::Help => {
            println!("{WORKLOADS_HELP}");
            return Ok(0);
        }
        WorkloadsRequest::List { name, json } => (name, json),
    };
    let tables = match name {
        Some(n) => vec![named(n)?],
        None => all(),
    };
    let rows: Vec<WorkloadTable> = tables
        .iter()
        .map(|w| WorkloadTable {
            name: w.name.into(),
            title: w.title.into(),
            unit: w.unit.name().into(),
            points: w.points(),
            reading: w.default_reading.name().into(),
            stated_mean_size: w.stated_mean,
            step_mean_size: w.mean(Reading::Step),
            interp_mean_size: w.mean(Reading::Interpolated),
            bytes_per_packet: (w.unit == Unit::Bytes).then_some(DEFAULT_BYTES_PER_PACKET),
            step_mean_pkts: w.packet_mean(Reading::Step, DEFAULT_BYTES_PER_PACKET),
            interp_mean_pkts: w.packet_mean(Reading::Interpolated, DEFAULT_BYTES_PER_PACKET),
            analytic_tail: w.tail.is_some(),
            checksum: w.checksum_hex(),
            file: w.file.into(),
            repository: w.provenance.repository.clone(),
            path: w.provenance.path.clone(),
            commit: w.provenance.commit.clone(),
        })
        .collect();
    if let Some(p) = json {
        let doc = Workloads {
            schema: WorkloadsSchema,
            command: "workloads".into(),
            default_bytes_per_packet: DEFAULT_BYTES_PER_PACKET,
            workloads: rows.clone(),
        };
        write_json(p, &doc)?;
        if p.as_os_str() == "-" {
            return Ok(0);
        }
    }
    let mut out = String::new();
    match name {
        None => {
            out.push_str(&format!(
                "{:<19} {:<7} {:>6} {:>6} {:>11} {:>13} {:>13} {:>10} {:>11}  {:<24} source @ commit\n",
                "name",
                "unit",
                "points",
                "rule",
                "stated mean",
                "step mean",
                "interp mean",
                "step pkts",
                "interp pkts",
                "checksum"
            ));
            for (w, r) in tables.iter().zip(&rows) {
                out.push_str(&format!(
                    "{:<19} {:<7} {:>6} {:>6} {:>11} {:>13.4} {:>13.4} {:>10.4} {:>11.4}  {:<24} {}/{} @ {}\n",
                    r.name,
                    r.unit,
                    r.points,
                    r.reading,
                    w.stated_mean_text().unwrap_or(""),
                    r.step_mean_size,
                    r.interp_mean_size,
                    r.step_mean_pkts,
                    r.interp_mean_pkts,
                    r.checksum,
                    r.repository,
                    r.path,
                    &r.commit[..12.min(r.commit.len())]
                ));
            }
            out.push_str(&format!(
                "stated mean: the source's own (blank: it states none); step and interp means: the table's exact means in its \
                 unit, W1 with its analytic tail\n\
                 pkts: mean length in packets, byte tables cut at {DEFAULT_BYTES_PER_PACKET} payload bytes per packet; rule: the \
                 source's own reading\n\
                 choose them where a workload is used: sim --workload NAME --reading step|interp --bytes-per-packet N, or \
                 NAME[:READING[:BYTES_PER_PACKET]] in sched/predict traffic files (dist:w2:step:1442) and sweep lengths; \
                 bytes per packet applies to byte tables only\n"
            ));
        }
        Some(_) => {
            let (w, r) = (&tables[0], &rows[0]);
            out.push_str(w.text.lines().take_while(|l| l.starts_with('#')).collect::<Vec<_>>().join("\n").as_str());
            out.push_str(&format!("\n\n{}: {}; {} points; checksum {}\n", r.name, r.title, r.points, r.checksum));
            out.push_str(&format!(
                "mean size in {}: stated {}, step {:.4}, interp {:.4}{}\n",
                r.unit,
                w.stated_mean_text().unwrap_or("none"),
                r.step_mean_size,
                r.interp_mean_size,
                if r.analytic_tail { " (with the analytic tail)" } else { "" }
            ));
            let at = match r.bytes_per_packet {
                Some(b) => format!(" at {b} B/packet"),
                None => String::new(),
            };
            out.push_str(&format!(
                "mean length in packets{at}: step {:.4}, interp {:.4}\n",
                r.step_mean_pkts, r.interp_mean_pkts
            ));
        }
    }
    print!("{out}");
    Ok(0)
}
