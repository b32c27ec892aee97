//! One page section per result kind.

use std::collections::BTreeMap;

use serde_json::Value;

use super::input::{Content, Input, Kind, Table};
use super::{Block, Section};
use crate::hist::Summary;
use crate::plot::bar::BarChart;
use crate::plot::figures::{
    echo_chart, paper_figures, predict_chart, share_chart, summary_cdf, EchoCell, PaperFigure, PaperLevel, PaperStrategy,
    PredictSeries,
};
use crate::plot::fmt_tick;
use crate::results::burst::Burst;
use crate::results::notify::{Notify, NotifySchema};
use crate::results::sched::Sched;
use crate::results::semtest::{Semtest, SemtestSchema};
use crate::results::sim::Sim;
use crate::results::trylock::{Trylock, TrylockSchema};
use crate::results::{self, echo_bench::EchoBench, echo_bench::EchoRow, predict::Predict, rdma_share::RdmaShare};

/// A number for a table cell: about four significant digits, no exponent below a million.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    let s = if a == 0.0 {
        "0".to_string()
    } else if a >= 1e6 {
        format!("{x:.4e}")
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A JSON value as cell text ("–" for null or missing).
fn txt(v: &Value) -> String {
    match v {
        Value::Null => "–".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => n.as_f64().map(num).unwrap_or_else(|| n.to_string()),
        Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Value::Array(a) => a.iter().map(txt).collect::<Vec<_>>().join(", "),
        Value::Object(_) => v.to_string(),
    }
}

fn summary(v: &Value) -> Option<Summary> {
    let s: Summary = serde_json::from_value(v.clone()).ok()?;
    (s.count > 0).then_some(s)
}

/// Shell-quotes one word of a command line for display.
fn quote(w: &str) -> String {
    if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c)) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

fn command_line(v: &Value) -> Option<String> {
    let words = v.get("argv").or_else(|| v.get("command")).and_then(Value::as_array)?;
    let mut w: Vec<String> = words.iter().map(|x| x.as_str().map(quote).unwrap_or_else(|| x.to_string())).collect();
    // argv[0] is the binary's path as it was run; the page shows the command as a user types it.
    if let Some(first) = w.first_mut() {
        if first.ends_with("/schedlab") || first == "schedlab" {
            *first = "schedlab".into();
        } else if !first.starts_with("schedlab") {
            w.insert(0, "schedlab".into());
        }
    }
    Some(w.join(" "))
}

/// "What was run": command line, seed, version, source file.
fn what_was_run(sec: &mut Section, v: &Value, extra: Vec<(String, String)>) {
    let mut facts = vec![(
        "command line".to_string(),
        command_line(v).unwrap_or_else(|| "not recorded in this result (its parameters are listed below)".into()),
    )];
    if let Some(s) = v.get("seed").or_else(|| v.pointer("/run/config/seed")) {
        facts.push(("seed".into(), txt(s)));
    }
    let version = v.pointer("/machine/schedlab_version").map(txt).unwrap_or_else(|| "not recorded".into());
    facts.push(("schedlab version".into(), version));
    facts.extend(extra);
    sec.push(Block::Heading("What was run".into()));
    sec.push(Block::Facts(facts));
}

/// The machine facts and every thread's granted placement found in the result.
fn machine_and_placement(sec: &mut Section, v: &Value) {
    sec.push(Block::Heading("Machine and placement granted".into()));
    match v.get("machine").and_then(Value::as_object) {
        Some(m) => {
            let order = [
                "hostname",
                "kernel",
                "kernel_version",
                "arch",
                "cpu_model",
                "cpus_online",
                "virtualization",
                "cpuidle_driver",
                "cpuidle_governor",
                "cpufreq_governor",
                "euid",
                "collected_unix_s",
            ];
            let mut facts: Vec<(String, String)> =
                order.iter().filter_map(|k| m.get(*k).map(|x| (k.replace('_', " "), txt(x)))).collect();
            for (k, x) in m {
                if !order.contains(&k.as_str()) && k != "schedlab_version" {
                    facts.push((k.replace('_', " "), txt(x)));
                }
            }
            sec.push(Block::Facts(facts));
        }
        None => {
            sec.push(Block::Note("This result does not record the machine it ran on.".into()));
        }
    }
    let mut rows = Vec::new();
    threads(v, "", None, &mut rows);
    if !rows.is_empty() {
        sec.push(Block::Table {
            caption: "Threads: the CPU, mask and policy read back from the kernel (not the label asked for)".into(),
            header: ["thread", "requested CPU", "CPU got", "allowed CPUs", "policy", "priority", "tid"]
                .map(String::from)
                .to_vec(),
            rows,
        });
    }
}

fn is_thread(v: &Value) -> bool {
    v.get("tid").is_some() && v.get("policy").is_some() && v.get("cpu").is_some()
}

/// Collects thread-placement rows: objects of the machine::ThreadInfo shape, labelled by their
/// place in the result, with the CPU that was asked for when the result records it.
fn threads(v: &Value, path: &str, requested: Option<&Value>, rows: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(o) if is_thread(v) => {
            rows.push(vec![
                path.trim_start_matches('.').to_string(),
                requested.map(txt).unwrap_or_else(|| "–".into()),
                txt(&v["cpu"]),
                txt(&v["allowed_cpus"]),
                txt(&v["policy"]),
                txt(&v["priority"]),
                txt(&v["tid"]),
            ]);
            let _ = o;
        }
        Value::Object(o) => {
            for (k, child) in o {
                if k == "machine" {
                    continue;
                }
                let req = if is_thread(child) {
                    // prims: {requested: {role, cpu}, got: {...}}; sched clients: requested_cpu next
                    // to thread; the scheduler: scheduler_requested_cpu next to scheduler_thread.
                    o.get("requested")
                        .and_then(|r| r.get("cpu"))
                        .or_else(|| o.get("requested_cpu"))
                        .or_else(|| o.get(&format!("{}_requested_cpu", k.trim_end_matches("_thread"))))
                } else {
                    None
                };
                let label = match o.get("requested").and_then(|r| r.get("role")).and_then(Value::as_str) {
                    Some(role) if is_thread(child) => role.to_string(),
                    _ => format!("{path}.{k}"),
                };
                threads(child, &label, req.or(requested), rows);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                threads(child, &format!("{path}[{i}]"), None, rows);
            }
        }
        _ => {}
    }
}

fn fig(sec: &mut Section, caption: &str, svg: String) {
    sec.push(Block::Figure { caption: caption.into(), svg });
}

/// Renders one recognised input as a section.
pub fn render(input: &Input, kind: Kind) -> Section {
    let source = input.file.display().to_string();
    match (&input.content, kind) {
        (Content::Json(v), Kind::Sim) => sim(v, &source),
        (Content::Table(t), Kind::Sweep | Kind::SimCsv) => table(t, kind, &source),
        (Content::Json(v), Kind::Sched) => sched(v, &source),
        (Content::Json(v), Kind::Predict) => predict(v, &source),
        (Content::Json(v), Kind::Prims) => prims(v, &source),
        (Content::Json(v), Kind::EchoBench) => echo(v, &source),
        (Content::Json(v), Kind::Burst) => burst(v, &source),
        (Content::Json(v), Kind::RdmaShare) => rdma_share(v, &source),
        (Content::Json(v), Kind::Qdisc) => super::kernel::qdisc(v, &source),
        _ => unsupported(input, "the content does not match its kind"),
    }
}

/// A visible "unsupported result" section.
pub fn unsupported(input: &Input, why: &str) -> Section {
    let mut sec = Section::new("unsupported", "Unsupported result", &input.file.display().to_string());
    sec.unsupported = true;
    sec.push(Block::Warning(format!("unsupported result: {why}. Nothing from this file is shown.")));
    sec
}

// ----- sim and sweep: the report's Figures 1-4 and tables -----

/// One strategy's row of a level: (label, [(len, mean latency)], overall (mean, ci, p99, max, msgs)).
type StrategyRow = (String, Vec<(f64, f64)>, [f64; 5]);

/// One level's strategies, queue length and packet count.
struct LevelRows {
    traffic: f64,
    caption_extra: String,
    strategies: Vec<StrategyRow>,
    qlen: f64,
    packets: f64,
}

fn paper_levels(levels: &[LevelRows]) -> Vec<PaperLevel> {
    levels
        .iter()
        .map(|l| PaperLevel {
            traffic_pct: l.traffic,
            strategies: l
                .strategies
                .iter()
                .map(|(lab, by_len, o)| PaperStrategy { label: lab.clone(), by_len: by_len.clone(), overall_mean_tu: o[0] })
                .collect(),
        })
        .collect()
}

/// Figures 1-4 and the tables for a set of levels.
fn paper_blocks(sec: &mut Section, levels: &[LevelRows]) {
    let figs = paper_figures(&paper_levels(levels));
    // The report shows length vs latency at 50% and 95%; with many levels the page does too
    // (or the lowest and highest level when those were not run).
    let traffic: Vec<f64> = levels.iter().map(|l| l.traffic).collect();
    let shown: Vec<f64> = if traffic.len() <= 4 {
        traffic.clone()
    } else {
        let pick: Vec<f64> = [50.0, 95.0].into_iter().filter(|t| traffic.contains(t)).collect();
        if pick.is_empty() {
            let lo = traffic.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = traffic.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            vec![lo, hi]
        } else {
            pick
        }
    };
    sec.push(Block::Heading("Figures".into()));
    let mut n_len = 0;
    for (id, chart) in figs {
        let caption = match id {
            PaperFigure::LengthVsLatency(t) => {
                if !shown.contains(&t) {
                    continue;
                }
                n_len += 1;
                format!(
                    "(report Figure {}) Mean latency per message length at {}% traffic, one line per strategy.",
                    n_len.min(2),
                    fmt_tick(t)
                )
            }
            PaperFigure::TrafficVsLatency => "(report Figure 3) Overall mean latency vs traffic, one line per strategy.".into(),
            PaperFigure::TrafficVsRelative => {
                "(report Figure 4) Overall mean latency relative to shortest-first (SF) vs traffic; the dashed line is SF itself."
                    .into()
            }
        };
        fig(sec, &caption, chart.svg());
    }
    if levels.len() >= 2 {
        let mut sorted: Vec<&LevelRows> = levels.iter().collect();
        sorted.sort_by(|a, b| a.traffic.total_cmp(&b.traffic));
        let labels: Vec<String> = sorted[0].strategies.iter().map(|s| s.0.clone()).collect();
        let mut header = vec!["strategy".to_string()];
        header.extend(sorted.iter().map(|l| format!("{}%", fmt_tick(l.traffic))));
        let rows = labels
            .iter()
            .map(|lab| {
                let mut r = vec![lab.clone()];
                r.extend(
                    sorted
                        .iter()
                        .map(|l| l.strategies.iter().find(|s| &s.0 == lab).map(|s| num(s.2[0])).unwrap_or_else(|| "–".into())),
                );
                r
            })
            .collect();
        sec.push(Block::Table {
            caption: "Overall mean latency (time units) per traffic level (the data of Figure 3)".into(),
            header,
            rows,
        });
    }
    for l in levels {
        let mut lens: Vec<f64> = l.strategies.iter().flat_map(|s| s.1.iter().map(|p| p.0)).collect();
        lens.sort_by(f64::total_cmp);
        lens.dedup();
        let mut header = vec!["strategy".to_string()];
        header.extend(lens.iter().map(|x| format!("len {}", fmt_tick(*x))));
        header.extend(["overall", "±95% CI", "p99", "max", "messages"].map(String::from));
        let rows = l
            .strategies
            .iter()
            .map(|(lab, by_len, o)| {
                let mut r = vec![lab.clone()];
                r.extend(lens.iter().map(|x| by_len.iter().find(|p| p.0 == *x).map(|p| num(p.1)).unwrap_or_else(|| "–".into())));
                r.extend(o.iter().map(|v| num(*v)));
                r
            })
            .collect();
        sec.push(Block::Table {
            caption: format!(
                "Traffic {}%{}: mean latency per message length (time units); queue {} packets, {} arrival packets",
                fmt_tick(l.traffic),
                l.caption_extra,
                num(l.qlen),
                num(l.packets)
            ),
            header,
            rows,
        });
    }
}

fn sim(v: &Value, source: &str) -> Section {
    let title = "Simulation (alpha scheduling report)";
    let r: Sim = match results::read(v) {
        Ok(r) => r,
        Err(e) => return unreadable(Section::new("sim", title, source), &e),
    };
    let mut sec = Section::new("sim", title, source);
    let levels: Vec<LevelRows> = r
        .runs
        .iter()
        .map(|run| LevelRows {
            traffic: run.traffic_pct,
            caption_extra: String::new(),
            strategies: run
                .strategies
                .iter()
                .map(|s| {
                    let o = &s.overall;
                    (
                        s.label.clone(),
                        s.by_len.iter().map(|l| (f64::from(l.len), l.mean_tu)).collect(),
                        [o.mean_tu, o.ci95_tu, o.p99_tu, o.max_tu, o.count as f64],
                    )
                })
                .collect(),
            qlen: run.qlen_pkts,
            packets: run.packets_in as f64,
        })
        .collect();
    let ranges = &r.length_distribution.ranges;
    let dist = if ranges.is_empty() {
        "–".into()
    } else {
        ranges.iter().map(|x| format!("{}-{} pkts: {}%", x.low, x.high, num(x.frac * 100.0))).collect::<Vec<_>>().join(", ")
    };
    let strategies =
        levels.first().map(|l| l.strategies.iter().map(|s| s.0.clone()).collect::<Vec<_>>().join(", ")).unwrap_or_default();
    what_was_run(
        &mut sec,
        v,
        vec![
            ("traffic levels (%)".into(), levels.iter().map(|l| fmt_tick(l.traffic)).collect::<Vec<_>>().join(", ")),
            ("strategies".into(), strategies),
            ("arrival packets per level".into(), levels.iter().map(|l| num(l.packets)).collect::<Vec<_>>().join(", ")),
            ("message lengths".into(), dist),
            ("service times".into(), r.service.clone()),
            ("time unit".into(), r.time_unit.clone()),
        ],
    );
    machine_and_placement(&mut sec, v);
    if r.runs.iter().any(|x| x.interrupted) {
        sec.push(Block::Warning("The run was interrupted: the figures show the packets simulated until then.".into()));
    }
    paper_blocks(&mut sec, &levels);
    super::slowdown::blocks(&mut sec, &super::slowdown::from_sim(&r));
    sec
}

fn table(t: &Table, kind: Kind, source: &str) -> Section {
    let title = if kind == Kind::Sweep { "Sweep (grid of simulations)" } else { "Simulation table (sim --csv)" };
    let mut sec = Section::new(kind.name(), title, source);
    let c = |name: &str| t.col(name);
    let get = |r: &Vec<String>, name: &str| c(name).and_then(|i| r.get(i)).cloned().unwrap_or_default();
    let getf = |r: &Vec<String>, name: &str| get(r, name).parse::<f64>().unwrap_or(f64::NAN);
    // One level per cell (sweep) or per traffic level and seed (sim csv), in file order.
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Vec<String>>> = BTreeMap::new();
    for r in &t.rows {
        let key = if kind == Kind::Sweep { get(r, "cell") } else { format!("{}/{}", get(r, "traffic_pct"), get(r, "seed")) };
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    let variant_cols =
        ["lengths", "service", "seed", "replication", "apps", "closed_apps", "in_order", "batches", "queue_delay_tu"];
    // A named workload's lengths are followed by its table's checksum: `lengths=w3 (fnv1a64:…)`.
    let variant = |r: &Vec<String>| {
        variant_cols
            .iter()
            .filter(|n| c(n).is_some())
            .map(|n| match get(r, "workload_checksum") {
                sum if *n == "lengths" && !sum.is_empty() => format!("{n}={} ({sum})", get(r, n)),
                _ => format!("{n}={}", get(r, n)),
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut levels: Vec<LevelRows> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    for key in &order {
        let rows = &groups[key];
        let first = rows[0];
        let var = variant(first);
        if !variants.contains(&var) {
            variants.push(var.clone());
        }
        let mut strategies: Vec<StrategyRow> = Vec::new();
        for r in rows {
            let label = get(r, "strategy");
            let len = getf(r, "len_pkts");
            let idx = match strategies.iter().position(|s| s.0 == label) {
                Some(i) => i,
                None => {
                    strategies.push((label, Vec::new(), [f64::NAN; 5]));
                    strategies.len() - 1
                }
            };
            let count = if c("msgs").is_some() { getf(r, "msgs") } else { getf(r, "count") };
            if len == 0.0 {
                strategies[idx].2 =
                    [getf(r, "mean_lat_tu"), getf(r, "ci95_lat_tu"), getf(r, "p99_lat_tu"), getf(r, "max_lat_tu"), count];
            } else {
                strategies[idx].1.push((len, getf(r, "mean_lat_tu")));
            }
        }
        levels.push(LevelRows {
            traffic: getf(first, "traffic_pct"),
            caption_extra: if variants.len() > 1 || order.len() > 1 && kind == Kind::Sweep {
                format!(" (cell {key}: {var})")
            } else {
                String::new()
            },
            strategies,
            qlen: getf(first, "qlen_pkts"),
            packets: if c("packets_in").is_some() { getf(first, "packets_in") } else { getf(first, "packets") },
        });
    }
    let version =
        t.rows.first().map(|r| get(r, "schedlab_version")).filter(|s| !s.is_empty()).unwrap_or_else(|| "not recorded".into());
    let seeds: Vec<String> = {
        let mut s: Vec<String> = t.rows.iter().map(|r| get(r, "seed")).collect();
        s.dedup();
        s.sort();
        s.dedup();
        s
    };
    sec.push(Block::Heading("What was run".into()));
    let mut facts = vec![
        ("command line".to_string(), "not recorded in a table (the grid's parameters are listed below)".to_string()),
        ("seed".into(), seeds.join(", ")),
        ("schedlab version".into(), version),
        ("rows".into(), t.rows.len().to_string()),
    ];
    if kind == Kind::Sweep {
        facts.push(("sweep id".into(), t.rows.first().map(|r| get(r, "sweep_id")).unwrap_or_default()));
        facts.push((
            "cells".into(),
            format!("{} of {}", order.len(), t.rows.first().map(|r| get(r, "cells_total")).unwrap_or_default()),
        ));
    }
    facts.push(("traffic levels (%)".into(), levels.iter().map(|l| fmt_tick(l.traffic)).collect::<Vec<_>>().join(", ")));
    facts.push(("arrival packets per cell".into(), levels.iter().map(|l| num(l.packets)).collect::<Vec<_>>().join(", ")));
    for v in &variants {
        facts.push(("parameters".into(), v.clone()));
    }
    // Each named workload the cells drew lengths from, with how its table was read and where
    // the table comes from (sweep tables record it in their `workload_*` columns).
    let mut workloads: Vec<(String, String)> = Vec::new();
    for r in t.rows.iter().filter(|r| !get(r, "workload_checksum").is_empty()) {
        let bpp = get(r, "workload_bytes_per_pkt");
        let how = format!(
            "{} CDF{}; {}; {} @ {}",
            get(r, "workload_reading"),
            if bpp.is_empty() { String::new() } else { format!(", {bpp} B/packet") },
            get(r, "workload_checksum"),
            get(r, "workload_source"),
            get(r, "workload_commit")
        );
        let w = (format!("workload {}", get(r, "lengths")), how);
        if !workloads.contains(&w) {
            workloads.push(w);
        }
    }
    facts.extend(workloads);
    sec.push(Block::Facts(facts));
    sec.push(Block::Heading("Machine and placement granted".into()));
    sec.push(Block::Note("A table does not record the machine it ran on (the simulator's results do not depend on it).".into()));
    // Figures: the first variant's cells (one per traffic level); other variants are in the tables.
    let first_var = variants.first().cloned().unwrap_or_default();
    let mut fig_levels: Vec<LevelRows> = Vec::new();
    let mut rest: Vec<LevelRows> = Vec::new();
    for (key, l) in order.iter().zip(levels) {
        let var = variant(groups[key][0]);
        if var == first_var && !fig_levels.iter().any(|x| x.traffic == l.traffic) {
            fig_levels.push(l);
        } else {
            rest.push(l);
        }
    }
    if !rest.is_empty() {
        sec.push(Block::Note(format!(
            "The figures show the cells with {first_var}; {} further cells (other parameters) are in the tables below.",
            rest.len()
        )));
    }
    paper_blocks(&mut sec, &fig_levels);
    if !rest.is_empty() {
        paper_tables_only(&mut sec, &rest);
    }
    super::slowdown::blocks(&mut sec, &super::slowdown::from_table(t, kind == Kind::Sweep));
    sec
}

fn paper_tables_only(sec: &mut Section, levels: &[LevelRows]) {
    let mut tmp = Section::new("", "", "");
    paper_blocks(&mut tmp, levels);
    sec.blocks.extend(tmp.blocks.into_iter().filter(|b| matches!(b, Block::Table { .. })));
}

// ----- sched -----

fn sched(raw: &Value, source: &str) -> Section {
    let r: Sched = match results::read(raw) {
        Ok(r) => r,
        Err(e) => return unreadable(Section::new("sched", "Scheduler harness", source), &e),
    };
    // Everything below comes through the type: the generic blocks read its serialised form.
    let v = &typed_value(&r);
    let mut sec = Section::new("sched", &format!("Scheduler harness: {} over {} clients", r.alg, r.threads), source);
    let mbps = |x: f64| format!("{} Mb/s", num(x / 1e6));
    what_was_run(
        &mut sec,
        v,
        vec![
            ("traffic program".into(), r.traffic.clone()),
            ("algorithm".into(), format!("{} (label {})", r.alg, r.label)),
            ("flows".into(), r.flows.to_string()),
            ("ring size (packets)".into(), r.queue_pkts.to_string()),
            ("link nominal".into(), r.link_nominal_bps.map_or_else(|| "unlimited".into(), |b| mbps(b as f64))),
            ("distributed (-D)".into(), if r.distributed { "yes" } else { "no" }.into()),
            ("elapsed (s)".into(), num(r.elapsed_s)),
        ],
    );
    machine_and_placement(&mut sec, v);
    if r.interrupted {
        sec.push(Block::Warning("The run was interrupted.".into()));
    }
    sec.push(Block::Heading("Results".into()));
    sec.push(Block::Facts(vec![
        (
            "link achieved".into(),
            format!("{} ({}% of nominal)", mbps(r.link_achieved_bps), num(r.link_utilisation.unwrap_or(f64::NAN) * 100.0)),
        ),
        ("packets transmitted".into(), r.total_pkts.to_string()),
        ("drops (ring full + scheduler queue)".into(), r.total_drops.to_string()),
        ("scheduler passes (thread / clients)".into(), format!("{} / {}", r.scheduler_passes, r.client_sched_passes)),
        ("queue limit -qmax / -qmin (packets)".into(), format!("{} / {}", r.qmax_pkts, r.qmin_pkts)),
    ]));
    let clients = &r.clients;
    let total_bits: f64 = clients.iter().map(|c| c.bits as f64).sum();
    let total_gen: f64 = clients.iter().map(|c| c.generated_pkts as f64).sum();
    let share = |x: f64, t: f64| if t > 0.0 { 100.0 * x / t } else { f64::NAN };
    let mut rows = Vec::new();
    for c in clients {
        let d = &c.delay_us;
        rows.push(vec![
            c.client.to_string(),
            c.generated_pkts.to_string(),
            c.transmitted_pkts.to_string(),
            c.ring_full_drops.to_string(),
            c.sched_drops.to_string(),
            num(c.rate_bps / 1e6),
            num(share(c.bits as f64, total_bits)),
            num(d.p50),
            num(d.p99),
            num(d.max),
            c.thread.cpu.to_string(),
        ]);
    }
    let t = &r.total_delay_us;
    rows.push(vec![
        "total".into(),
        num(total_gen),
        r.total_pkts.to_string(),
        "".into(),
        "".into(),
        num(r.total_rate_bps / 1e6),
        "100".into(),
        num(t.p50),
        num(t.p99),
        num(t.max),
        "".into(),
    ]);
    sec.push(Block::Table {
        caption: "Per client: packets, drops, rate, share of the transmitted bits, delay (cli_enq to cli_deq, us)".into(),
        header: [
            "client",
            "generated",
            "transmitted",
            "ring drops",
            "sched drops",
            "rate (Mb/s)",
            "share (%)",
            "delay p50 (us)",
            "delay p99 (us)",
            "delay max (us)",
            "CPU got",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let counted = |s: &Summary| (s.count > 0).then_some(*s);
    let mut series: Vec<(String, Summary)> =
        clients.iter().filter_map(|c| Some((format!("client {}", c.client), counted(&c.delay_us)?))).collect();
    if let Some(s) = counted(&r.total_delay_us) {
        series.push(("all clients".into(), s));
    }
    sec.push(Block::Heading("Figures".into()));
    let cdf = summary_cdf("Packet delay distribution per client", "delay, client enqueue to client dequeue (us)", &series);
    if cdf.has_data() {
        fig(
            &mut sec,
            "Delay CDF per client, drawn through the recorded percentiles (min, p50, p90, p99, p99.9, p99.99, max).",
            cdf.svg(),
        );
    } else {
        sec.push(Block::Note("No packet was delivered: no delay distribution to draw.".into()));
    }
    if !clients.is_empty() {
        let cats: Vec<String> = clients.iter().map(|c| c.client.to_string()).collect();
        let mut bars = BarChart::new("Per-client shares", "client", "share (%)", cats);
        bars.add("transmitted bits", clients.iter().map(|c| share(c.bits as f64, total_bits)).collect());
        bars.add("generated packets", clients.iter().map(|c| share(c.generated_pkts as f64, total_gen)).collect());
        let active = clients.iter().filter(|c| c.active).count();
        if active > 0 {
            bars.reference_y = Some(100.0 / active as f64);
        }
        fig(
            &mut sec,
            "Each client's share of the transmitted bits and of the generated packets; the dashed line is the equal share.",
            bars.svg(),
        );
    }
    sec
}

/// A typed result in its serialised form, for the blocks that walk any result (what was run,
/// machine and placement, percentile summaries): what they show has been read through the type.
fn typed_value<T: serde::Serialize>(r: &T) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

// ----- predict -----

fn predict(v: &Value, source: &str) -> Section {
    let r: Predict = match results::read(v) {
        Ok(r) => r,
        Err(e) => return unreadable(Section::new("predict", "Measured vs predicted", source), &e),
    };
    let algs: Vec<String> = r.runs.iter().map(|x| x.alg.clone()).collect();
    let mut sec = Section::new("predict", &format!("Measured vs predicted: {}", algs.join(", ")), source);
    what_was_run(
        &mut sec,
        v,
        vec![
            ("traffic program".into(), r.traffic.clone()),
            ("clients".into(), r.threads.to_string()),
            ("ring size (packets)".into(), r.queue_pkts.to_string()),
            ("link".into(), r.runs.first().map(|x| format!("{} Mb/s", num(x.link_nominal_bps as f64 / 1e6))).unwrap_or_default()),
        ],
    );
    machine_and_placement(&mut sec, v);
    let series: Vec<PredictSeries> = r
        .runs
        .iter()
        .map(|x| PredictSeries {
            alg: x.alg.clone(),
            rows: x
                .rows
                .iter()
                .map(|row| {
                    let p = row.predicted.mean_us;
                    (f64::from(row.len_pkts), row.measured.mean_us, (x.predicted && p.is_finite()).then_some(p))
                })
                .collect(),
        })
        .collect();
    sec.push(Block::Heading("Figures".into()));
    let chart = predict_chart(&series);
    if chart.has_data() {
        fig(&mut sec, "Mean queueing latency vs message length: measured on the harness and predicted by the simulator from the same arrivals.", chart.svg());
    }
    for run in &r.runs {
        sec.push(Block::Heading(format!("Algorithm {}", run.alg)));
        if run.verdict.kept_up {
            sec.push(Block::Note("The harness kept up with the link: the prediction applies.".into()));
        } else {
            sec.push(Block::Warning(format!(
                "The harness could not keep up with the link ({}); measured figures only, no prediction.",
                run.verdict.reasons.join("; ")
            )));
        }
        let order = match &run.order_check {
            Some(o) => match o.first_mismatch {
                None => format!("the {} packets the harness released are the simulator's, in order", o.harness_pkts),
                Some(k) => format!("differs from the simulator's at {k}"),
            },
            None => "not checked (no scheduler trace)".into(),
        };
        sec.push(Block::Facts(vec![
            ("messages delivered".into(), format!("{} of {}", run.delivered, run.messages)),
            ("link achieved".into(), format!("{} Mb/s", num(run.link_achieved_bps / 1e6))),
            ("packet service time (us)".into(), num(run.service_ns / 1e3)),
            ("release order".into(), order),
            (
                "release lateness mean / p99 (us)".into(),
                format!("{} / {}", num(run.release_lateness.mean_us), num(run.release_lateness.p99_us)),
            ),
        ]));
        let rows = run
            .rows
            .iter()
            .map(|x| {
                vec![
                    if x.len_pkts == 0 { "all".into() } else { x.len_pkts.to_string() },
                    x.count.to_string(),
                    num(x.measured.mean_us),
                    num(x.measured.p50_us),
                    num(x.measured.p99_us),
                    num(x.predicted.mean_us),
                    num(x.predicted.p50_us),
                    num(x.predicted.p99_us),
                    num(x.ratio_mean),
                    num(x.breakdown.ring_wait_us),
                    num(x.breakdown.sched_queue_us),
                    num(x.breakdown.release_to_seen_us),
                ]
            })
            .collect();
        sec.push(Block::Table {
            caption: format!(
                "{}: queueing latency per message length (us), measured vs predicted, and where the measured time went",
                run.alg
            ),
            header: [
                "length (pkts)",
                "messages",
                "measured mean",
                "measured p50",
                "measured p99",
                "predicted mean",
                "predicted p50",
                "predicted p99",
                "measured / predicted",
                "ring wait",
                "scheduler queue",
                "release to seen",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    sec
}

// ----- trylock / notify / semtest -----

/// Every non-empty percentile summary under `v`, with its path and unit ("ns" or "us").
fn summaries(v: &Value, path: &str, out: &mut Vec<(String, String, Summary)>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                if child.get("p50").is_some() && child.get("count").is_some() {
                    if let Some(s) = summary(child) {
                        let unit = if k.ends_with("_ns") {
                            "ns"
                        } else if k.ends_with("_us") {
                            "us"
                        } else {
                            ""
                        };
                        out.push((p, unit.into(), s));
                    }
                } else {
                    summaries(child, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                summaries(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn rates(v: &Value, path: &str, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                if k == "rate_ops_per_s" {
                    if let Some(x) = child.as_f64().filter(|x| *x > 0.0) {
                        out.push((path.to_string(), x));
                    }
                } else {
                    rates(child, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                rates(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn prims(raw: &Value, source: &str) -> Section {
    let cmd = txt(&raw["command"]);
    // Each command's result reads as its type; the section walks the typed result's fields.
    let typed = match results::tag_of(raw).and_then(results::kind_named).map(|k| k.name).unwrap_or_else(|| match cmd.as_str() {
        "trylock" => TrylockSchema::NAME,
        "notify" => NotifySchema::NAME,
        _ => SemtestSchema::NAME,
    }) {
        TrylockSchema::NAME => results::read::<Trylock>(raw).map(|r| typed_value(&r)),
        NotifySchema::NAME => results::read::<Notify>(raw).map(|r| typed_value(&r)),
        _ => results::read::<Semtest>(raw).map(|r| typed_value(&r)),
    };
    let v = &match typed {
        Ok(v) => v,
        Err(e) => return unreadable(Section::new(&cmd, &cmd, source), &e),
    };
    let cfg = &v["run"]["config"];
    let test = cfg.get("test").map(txt).or_else(|| cfg.get("mode").map(txt)).unwrap_or_default();
    let what = cfg.get("lock").or_else(|| cfg.get("mechanism")).or_else(|| cfg.get("primitive")).map(txt).unwrap_or_default();
    let mut sec = Section::new(&cmd, &format!("{cmd}: {what}, {test}"), source);
    let config: Vec<(String, String)> = cfg
        .as_object()
        .map(|o| o.iter().map(|(k, x)| (format!("config: {}", k.replace('_', " ")), txt(x))).collect())
        .unwrap_or_default();
    what_was_run(&mut sec, v, config);
    machine_and_placement(&mut sec, v);
    if let Some(c) = v.get("clock").and_then(Value::as_object) {
        sec.push(Block::Facts(c.iter().map(|(k, x)| (format!("clock: {}", k.replace('_', " ")), txt(x))).collect()));
    }
    let degraded = v["degraded"].as_array().map(|a| a.iter().map(txt).collect::<Vec<_>>()).unwrap_or_default();
    if !degraded.is_empty() {
        sec.push(Block::Warning(format!("Degraded: {}", degraded.join("; "))));
    }
    if v["run"]["interrupted"].as_bool() == Some(true) {
        sec.push(Block::Warning("The run was interrupted.".into()));
    }
    let mut sums = Vec::new();
    summaries(&v["run"], "", &mut sums);
    let mut rts = Vec::new();
    rates(&v["run"], "", &mut rts);
    sec.push(Block::Heading("Results".into()));
    if !rts.is_empty() {
        sec.push(Block::Table {
            caption: "Rates (operations per second)".into(),
            header: vec!["where".into(), "ops/s".into()],
            rows: rts.iter().map(|(p, x)| vec![p.clone(), num(*x)]).collect(),
        });
    }
    if !sums.is_empty() {
        sec.push(Block::Table {
            caption: "Percentile summaries (unit: the field's suffix)".into(),
            header: ["what", "unit", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"]
                .map(String::from)
                .to_vec(),
            rows: sums
                .iter()
                .map(|(p, u, s)| {
                    let mut r = vec![p.clone(), u.clone(), s.count.to_string()];
                    r.extend([s.min, s.mean, s.p50, s.p90, s.p99, s.p999, s.p9999, s.max].map(num));
                    r
                })
                .collect(),
        });
    }
    sec.push(Block::Heading("Figures".into()));
    // The distributions: the all-threads summaries when there are many, all in us.
    let mut shown: Vec<&(String, String, Summary)> = sums.iter().collect();
    if shown.len() > 8 {
        let all: Vec<_> = shown.iter().copied().filter(|x| x.0.contains("all")).collect();
        shown = if all.is_empty() { shown.into_iter().take(8).collect() } else { all };
    }
    let series: Vec<(String, Summary)> = shown
        .iter()
        .map(|(p, u, s)| {
            let k = if u == "ns" { 1e-3 } else { 1.0 };
            let sc = |x: f64| x * k;
            (
                p.clone(),
                Summary {
                    count: s.count,
                    min: sc(s.min),
                    mean: sc(s.mean),
                    stddev: sc(s.stddev),
                    p50: sc(s.p50),
                    p90: sc(s.p90),
                    p99: sc(s.p99),
                    p999: sc(s.p999),
                    p9999: sc(s.p9999),
                    max: sc(s.max),
                },
            )
        })
        .collect();
    let cdf = summary_cdf(&format!("{cmd}: latency and cost distributions"), "time (us)", &series);
    if cdf.has_data() {
        fig(
            &mut sec,
            "Distributions drawn through the recorded percentiles (min, p50, p90, p99, p99.9, p99.99, max).",
            cdf.svg(),
        );
    }
    if !rts.is_empty() {
        let mut bars = BarChart::new(
            &format!("{cmd}: rates"),
            "where",
            "million operations per second",
            rts.iter().map(|r| r.0.clone()).collect(),
        );
        bars.add("rate", rts.iter().map(|r| r.1 / 1e6).collect());
        fig(&mut sec, "Operation rates per thread or side.", bars.svg());
    }
    if sec.figures() == 0 {
        sec.push(Block::Note("No samples and no rates in this result: nothing to draw.".into()));
    }
    sec
}

// ----- echo-bench -----

fn size_label(bytes: f64) -> String {
    if bytes >= 1048576.0 && bytes % 1048576.0 == 0.0 {
        format!("{}M", bytes / 1048576.0)
    } else if bytes >= 1024.0 && bytes % 1024.0 == 0.0 {
        format!("{}K", bytes / 1024.0)
    } else {
        format!("{bytes}B")
    }
}

fn echo(v: &Value, source: &str) -> Section {
    let mut sec = Section::new("echo-bench", "TCP echo latency matrix", source);
    let r: EchoBench = match results::read(v) {
        Ok(r) => r,
        Err(e) => return unreadable(sec, &e),
    };
    what_was_run(
        &mut sec,
        v,
        vec![
            ("path".into(), r.path.clone()),
            ("measured rounds per cell".into(), r.rounds.to_string()),
            ("warm-up rounds".into(), r.warmup.to_string()),
        ],
    );
    machine_and_placement(&mut sec, v);
    let busy = |b: Option<u32>| b.map_or_else(|| "off".to_string(), |u| format!("{u} us"));
    let table_rows = r
        .rows
        .iter()
        .map(|x| {
            let t = &x.trimmed_rtt_us;
            vec![
                x.mode.clone(),
                size_label(x.size_bytes as f64),
                busy(x.busy_poll_us),
                t.count.to_string(),
                num(t.p50),
                num(t.stddev),
                num(t.min),
                num(t.max),
                num(x.rtt_us.p99),
                format!("{} / {}", x.client_cpu, x.server_cpu.map_or_else(|| "–".to_string(), |c| c.to_string())),
            ]
        })
        .collect();
    sec.push(Block::Heading("Results".into()));
    sec.push(Block::Table {
        caption: "Round trip per mode and size (us; median, dev, min, max after dropping the slowest rounds; p99 of all rounds)"
            .into(),
        header: ["mode", "size", "busy poll", "rounds", "median", "dev", "min", "max", "p99 (all)", "client / server CPU"]
            .map(String::from)
            .to_vec(),
        rows: table_rows,
    });
    if !r.skipped.is_empty() {
        sec.push(Block::Warning(format!("Skipped: {}", r.skipped.join("; "))));
    }
    if r.interrupted {
        sec.push(Block::Warning("Interrupted: the matrix stopped early; the rows are the cells that finished.".into()));
    }
    sec.push(Block::Heading("Figures".into()));
    let mut sizes: Vec<u64> = r.rows.iter().map(|x| x.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let busy_us = r.rows.iter().find_map(|x| x.busy_poll_us);
    let counted = |s: &Summary| (s.count > 0).then_some(*s);
    for size in sizes {
        let at: Vec<&EchoRow> = r.rows.iter().filter(|x| x.size_bytes == size).collect();
        let cells: Vec<EchoCell> = at
            .iter()
            .filter_map(|x| {
                Some(EchoCell { mode: x.mode.clone(), busy_poll: x.busy_poll_us.is_some(), rtt_us: counted(&x.trimmed_rtt_us)? })
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let label = size_label(size as f64);
        let chart =
            echo_chart(&label, &format!("with BUSYPOLL ({} us)", busy_us.map(|u| u.to_string()).unwrap_or_default()), &cells);
        fig(
            &mut sec,
            &format!("{label} blocks: candlesticks per mode (box: median to median + dev/2; whiskers: min to max)."),
            chart.svg(),
        );
        let series: Vec<(String, Summary)> = at
            .iter()
            .filter_map(|x| {
                let name = format!("{}{}", x.mode, if x.busy_poll_us.is_some() { " busypoll" } else { "" });
                Some((name, counted(&x.rtt_us)?))
            })
            .collect();
        let cdf = summary_cdf(&format!("TCP echo round trip, {label} blocks"), "round trip (us)", &series);
        fig(
            &mut sec,
            &format!("{label} blocks: round-trip CDF per mode, through the recorded percentiles of all rounds."),
            cdf.svg(),
        );
    }
    sec
}

// ----- burst -----

fn burst(raw: &Value, source: &str) -> Section {
    let r: Burst = match results::read(raw) {
        Ok(r) => r,
        Err(e) => return unreadable(Section::new("burst", "TCP echo bursts", source), &e),
    };
    let v = &typed_value(&r);
    let targets = r.all_targets();
    let mut sec = Section::new(
        "burst",
        &format!(
            "TCP echo bursts: {} to {}",
            size_label(r.size_bytes as f64),
            targets.iter().map(|t| t.addr.as_str()).collect::<Vec<_>>().join(", ")
        ),
        source,
    );
    what_was_run(
        &mut sec,
        v,
        vec![
            ("burst size".into(), format!("{} bytes", r.size_bytes)),
            ("rounds (warm-up)".into(), format!("{} ({})", r.rounds, r.warmup)),
            ("mode".into(), format!("{}{}", r.mode, if r.spin { ", spinning" } else { "" })),
        ],
    );
    machine_and_placement(&mut sec, v);
    if r.interrupted {
        sec.push(Block::Warning("Interrupted: fewer rounds than asked for.".into()));
    }
    sec.push(Block::Heading("Results".into()));
    let ratio = |x: Option<f64>| x.map_or_else(|| "–".to_string(), num);
    sec.push(Block::Table {
        caption: "Round trip per target (us) and what the client cost per round".into(),
        header: [
            "target",
            "rounds",
            "p50",
            "p99",
            "max",
            "p50 / target 1",
            "client CPU (us/round)",
            "syscalls/round",
            "bytes verified",
        ]
        .map(String::from)
        .to_vec(),
        rows: targets
            .iter()
            .map(|t| {
                vec![
                    t.addr.clone(),
                    t.rtt_us.count.to_string(),
                    num(t.rtt_us.p50),
                    num(t.rtt_us.p99),
                    num(t.rtt_us.max),
                    ratio(t.ratio_to_first.map(|x| x.p50)),
                    num(t.client_cost.cpu_us_per_round),
                    num(t.client_cost.syscalls_per_round),
                    t.bytes_verified.to_string(),
                ]
            })
            .collect(),
    });
    sec.push(Block::Heading("Figures".into()));
    let series: Vec<(String, Summary)> =
        targets.iter().filter(|t| t.rtt_us.count > 0).map(|t| (t.addr.clone(), t.rtt_us)).collect();
    let cdf =
        summary_cdf(&format!("TCP echo round trip, {} bursts", size_label(r.size_bytes as f64)), "round trip (us)", &series);
    if cdf.has_data() {
        fig(&mut sec, "Round-trip CDF per target, through the recorded percentiles.", cdf.svg());
    } else {
        sec.push(Block::Note("No round was measured: nothing to draw.".into()));
    }
    sec
}

/// Why a result of a typed kind does not read as its type (None: it reads, or the kind is not
/// typed yet).
pub fn typed_error(input: &Input, kind: Kind) -> Option<String> {
    let Content::Json(v) = &input.content else { return None };
    let e = match kind {
        Kind::EchoBench => results::read::<EchoBench>(v).err(),
        Kind::RdmaShare => results::read::<RdmaShare>(v).err(),
        Kind::Sched => results::read::<Sched>(v).err(),
        Kind::Burst => results::read::<Burst>(v).err(),
        Kind::Prims => match v["command"].as_str() {
            Some("trylock") => results::read::<Trylock>(v).err(),
            Some("notify") => results::read::<Notify>(v).err(),
            _ => results::read::<Semtest>(v).err(),
        },
        _ => None,
    };
    e.map(|e| e.to_string())
}

/// A section whose result does not match its kind's type: says what does not match.
fn unreadable(mut sec: Section, e: &results::ResultError) -> Section {
    sec.push(Block::Warning(format!("This file cannot be read as its kind: {e}.")));
    sec
}

// ----- rdma share -----

fn rdma_share(v: &Value, source: &str) -> Section {
    let r: RdmaShare = match results::read(v) {
        Ok(r) => r,
        Err(e) => return unreadable(Section::new("rdma share", "RDMA two-flow share", source), &e),
    };
    let backend = r.backend.clone();
    let mut sec = Section::new("rdma share", &format!("RDMA two-flow share [{backend}]"), source);
    what_was_run(
        &mut sec,
        v,
        vec![
            ("backend".into(), backend.clone()),
            ("flows".into(), r.flows.iter().map(|x| x.source.clone()).collect::<Vec<_>>().join(", ")),
            ("window (ms)".into(), num(r.window_us / 1e3)),
        ],
    );
    machine_and_placement(&mut sec, v);
    if backend == "EMULATED" {
        sec.push(Block::Warning("EMULATED backend: queue-pair semantics over TCP, not an RDMA device.".into()));
    }
    sec.push(Block::Heading("Results".into()));
    sec.push(Block::Facts(vec![("Jain's fairness index".into(), num(r.jain))]));
    sec.push(Block::Table {
        caption: "Per flow: share at the moment the first flow finished, and post-to-completion latency (us)".into(),
        header: [
            "flow",
            "source",
            "bytes/msg",
            "messages",
            "completed at cut",
            "cut (ms)",
            "Gbps",
            "lat p50",
            "lat p99",
            "lat max",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .flows
            .iter()
            .map(|x| {
                vec![
                    format!("{}{}", x.name, if x.finished_first { " (finished first)" } else { "" }),
                    x.source.clone(),
                    x.bytes_per_msg.to_string(),
                    x.count.map_or_else(|| "–".to_string(), |c| c.to_string()),
                    x.completed_at_cut.to_string(),
                    num(x.cut_time_us / 1e3),
                    num(x.gbps),
                    num(x.lat_us.p50),
                    num(x.lat_us.p99),
                    num(x.lat_us.max),
                ]
            })
            .collect(),
    });
    sec.push(Block::Heading("Figures".into()));
    let names: Vec<(String, u64)> = r.flows.iter().map(|x| (x.name.clone(), x.bytes_per_msg)).collect();
    let windows: Vec<(f64, Vec<f64>)> =
        r.windows.iter().map(|w| ((w.start_ms + w.end_ms) / 2.0, vec![w.a_gbps, w.b_gbps])).collect();
    let chart = share_chart(r.window_us / 1e3, &backend, &names, &windows);
    if chart.has_data() {
        fig(&mut sec, "Throughput of each flow over time (the share of the link).", chart.svg());
    }
    let series: Vec<(String, Summary)> =
        r.flows.iter().filter(|x| x.lat_us.count > 0).map(|x| (format!("flow {}", x.name), x.lat_us)).collect();
    let cdf = summary_cdf("RDMA post-to-completion latency", "latency (us)", &series);
    if cdf.has_data() {
        fig(&mut sec, "Latency CDF per flow, through the recorded percentiles.", cdf.svg());
    }
    sec
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A sweep table's workload cells show the table's checksum in their heading and the
    /// workload's reading, bytes per packet, checksum, source and commit in "What was run"; the
    /// report's mix shows none.
    #[test]
    fn sweep_tables_name_their_workloads() {
        let header = [
            "sweep_id",
            "cell",
            "cells_total",
            "traffic_pct",
            "lengths",
            "workload_reading",
            "workload_bytes_per_pkt",
            "workload_checksum",
            "workload_source",
            "workload_commit",
            "strategy",
            "len_pkts",
            "msgs",
            "mean_lat_tu",
        ];
        let row = |cell: &str, lengths: &str, w: [&str; 5], len: &str| {
            let mut r = vec!["s", cell, "2", "50", lengths];
            r.extend(w);
            r.extend(["FIFO", len, "10", "2.5"]);
            r.into_iter().map(String::from).collect::<Vec<_>>()
        };
        let w3 = ["step", "1460", "fnv1a64:00ff", "github.com/x/y/w3.txt", "abc123"];
        let t = Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: vec![
                row("0", "report", [""; 5], "1"),
                row("0", "report", [""; 5], "0"),
                row("1", "w3", w3, "100"),
                row("1", "w3", w3, "0"),
            ],
        };
        let sec = table(&t, Kind::Sweep, "t.csv");
        let facts: Vec<(String, String)> =
            sec.blocks.iter().filter_map(|b| if let Block::Facts(f) = b { Some(f.clone()) } else { None }).flatten().collect();
        let fact = |name: &str| facts.iter().filter(|f| f.0 == name).map(|f| f.1.as_str()).collect::<Vec<_>>();
        assert_eq!(fact("workload w3"), ["step CDF, 1460 B/packet; fnv1a64:00ff; github.com/x/y/w3.txt @ abc123"]);
        assert!(fact("workload report").is_empty());
        assert_eq!(fact("parameters"), ["lengths=report", "lengths=w3 (fnv1a64:00ff)"]);
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(1234.56), "1235");
        assert_eq!(num(0.012345), "0.0123");
        assert_eq!(num(f64::NAN), "–");
        assert_eq!(num(100.0), "100");
    }

    #[test]
    fn threads_are_found_with_what_was_asked() {
        let v = json!({
            "machine": {"hostname": "h"},
            "run": {"threads": [{"requested": {"role": "sender", "cpu": 0}, "got": {"tid": 7, "cpu": 1, "allowed_cpus": [0, 1], "policy": "SCHED_OTHER", "priority": 0}}]},
            "clients": [{"requested_cpu": 3, "thread": {"tid": 8, "cpu": 3, "allowed_cpus": [3], "policy": "SCHED_FIFO", "priority": 5}}]
        });
        let mut rows = Vec::new();
        threads(&v, "", None, &mut rows);
        assert_eq!(rows.len(), 2);
        let sender = rows.iter().find(|r| r[0] == "sender").unwrap();
        assert_eq!((sender[1].as_str(), sender[2].as_str()), ("0", "1"), "asked for 0, got 1");
        let client = rows.iter().find(|r| r[0] == ".clients[0].thread" || r[0] == "clients[0].thread").unwrap();
        assert_eq!((client[1].as_str(), client[4].as_str()), ("3", "SCHED_FIFO"));
    }

    #[test]
    fn command_lines_are_quoted() {
        let v = json!({"command": ["/x/target/release/schedlab", "sched", "-f", "a b.txt"]});
        assert_eq!(command_line(&v).unwrap(), "schedlab sched -f 'a b.txt'");
        let v = json!({"command": "trylock", "argv": ["/usr/bin/schedlab", "trylock", "-n", "2"]});
        assert_eq!(command_line(&v).unwrap(), "schedlab trylock -n 2");
    }
}
