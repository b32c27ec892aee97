//! The host side of `schedlab qdisc`: the plan from a sched traffic file, the harness's answer
//! (`schedlab sched` with the same options, as a subprocess), the model's, and the kernel's from a
//! guest (`schedlab qdisc --in-guest PLAN` inside [`crate::guest`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use schedlab_sched::traffic;
use schedlab_sched::workload::Gaps;

use super::{compare, model, FlowResult, KernelAnswer, OtherAnswer, Plan, QdiscReport, Step};
use crate::guest::{self, GuestConfig, GuestError};

/// What `schedlab qdisc` runs.
#[derive(Clone, Debug)]
pub struct QdiscConfig {
    pub plan: Plan,
    /// The traffic file and the options as given, for the harness's command line.
    pub traffic_file: PathBuf,
    pub threads: usize,
    pub link: String,
    pub flowsets: String,
    pub harness: bool,
    pub model: bool,
    pub guest: GuestConfig,
    /// The schedlab binary (the guest runs it from the host's file system).
    pub exe: PathBuf,
}

/// Reads a sched traffic file into per-client steps the kernel's senders can follow.
pub fn load_traffic(path: &Path, threads: usize) -> Result<Vec<Vec<Step>>> {
    let t = traffic::load(path, threads)?;
    for w in &t.warnings {
        eprintln!("schedlab qdisc: warning: {w}");
    }
    t.programs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            p.iter()
                .enumerate()
                .map(|(k, s)| {
                    if s.lengths.is_some() {
                        bail!("{}: thread {i}, entry {}: message-length distributions (dist:...) are not sent through the kernel yet: use a fixed BURST", path.display(), k + 1);
                    }
                    if s.gaps != Gaps::Periodic {
                        bail!("{}: thread {i}, entry {}: poisson gaps are not sent through the kernel yet: leave the last field out", path.display(), k + 1);
                    }
                    Ok(Step { duration_ns: s.duration.0, rate_bps: s.rate.0, pkt_len: s.pkt_len, burst: s.burst })
                })
                .collect()
        })
        .collect()
}

/// The harness's answer: `schedlab sched` with the same traffic, link and policy.
pub fn harness(cfg: &QdiscConfig, alg: &str, scratch: &Path) -> Result<OtherAnswer> {
    let json = scratch.join("harness.json");
    // sched writes its per-queue message files (queue-N.txt) into its working folder: the scratch
    // folder, not the user's. The traffic file is named from the user's folder, so made absolute.
    let traffic = std::path::absolute(&cfg.traffic_file)
        .with_context(|| format!("traffic file {}: cannot resolve its path", cfg.traffic_file.display()))?;
    let mut cmd = Command::new(&cfg.exe);
    cmd.current_dir(scratch)
        .arg("sched")
        .args(["-t", &cfg.threads.to_string()])
        .arg("-f")
        .arg(&traffic)
        .args(["-b", &cfg.link, "--json"])
        .arg(&json)
        .args(["--", "-flowsets", &cfg.flowsets, "-alg", alg]);
    let shown = format!("{cmd:?}");
    let out = cmd.output().with_context(|| format!("cannot run {shown}"))?;
    if !out.status.success() {
        bail!("the harness failed ({}): {shown}\n{}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = std::fs::read_to_string(&json).with_context(|| format!("reading {}", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", json.display()))?;
    let elapsed = v.get("elapsed_s").and_then(|x| x.as_f64()).unwrap_or(0.0);
    let clients = v.get("clients").and_then(|c| c.as_array()).with_context(|| format!("{}: no clients array", json.display()))?;
    let mut flows: Vec<FlowResult> = (0..cfg.plan.flows.len()).map(|i| FlowResult { flow: i, ..Default::default() }).collect();
    for c in clients {
        let i = c.get("client").and_then(|x| x.as_u64()).context("harness JSON: a client without its number")? as usize;
        let Some(f) = flows.get_mut(i) else { continue };
        f.bytes = c.get("bits").and_then(|x| x.as_u64()).unwrap_or(0) / 8;
        f.pkts = c.get("transmitted_pkts").and_then(|x| x.as_u64()).unwrap_or(0);
        f.drops = c.get("sched_drops").and_then(|x| x.as_u64()).unwrap_or(0)
            + c.get("ring_full_drops").and_then(|x| x.as_u64()).unwrap_or(0);
        f.offered_pkts = c.get("generated_pkts").and_then(|x| x.as_u64()).unwrap_or(0);
        f.backlogged = f.drops > 0;
        f.delay_us = c.get("delay_us").and_then(|d| serde_json::from_value(d.clone()).ok());
    }
    super::fill_shares(&mut flows, elapsed);
    Ok(OtherAnswer { source: format!("harness: {shown} (whole run, {elapsed:.2} s; per-packet delay)"), flows })
}

/// Runs the plan in a guest and returns the kernel's answer with the guest's boot figures.
pub fn kernel(cfg: &QdiscConfig, scratch: &Path) -> Result<(KernelAnswer, Option<f64>, f64), GuestError> {
    let plan_path = scratch.join("plan.json");
    let text = serde_json::to_string_pretty(&cfg.plan).map_err(|e| GuestError::Invalid(format!("plan: {e}")))?;
    std::fs::write(&plan_path, text).map_err(|e| GuestError::Io { what: "cannot write", path: plan_path.clone(), source: e })?;
    let mut log = |m: &str| eprintln!("schedlab qdisc: {m}");
    let k = guest::prepare(&cfg.guest, &mut log)?;
    let mut gcfg = cfg.guest.clone();
    gcfg.env.push(("SCHEDLAB_IN_GUEST".into(), "1".into()));
    let argv = vec![cfg.exe.display().to_string(), "qdisc".into(), "--in-guest".into(), plan_path.display().to_string()];
    let out = guest::run(&k, &gcfg, &argv)?;
    for f in &out.failed_boots {
        log(&format!("note: a guest boot died before the command started ({f}); booted again"));
    }
    if out.exit != 0 {
        return Err(GuestError::Invalid(format!(
            "the guest side failed (exit {}): {}",
            out.exit,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let answer: KernelAnswer = serde_json::from_slice(&out.stdout).map_err(|e| {
        GuestError::Invalid(format!("the guest side printed no answer ({e}): {}", String::from_utf8_lossy(&out.stdout).trim()))
    })?;
    Ok((answer, out.boot_s, out.wall_s))
}

/// The whole `schedlab qdisc`: harness, model, kernel, compared. A guest that cannot run here is
/// returned as [`GuestError::Unavailable`] inside the error (see [`unavailable`]).
pub fn run(cfg: &QdiscConfig) -> Result<QdiscReport> {
    cfg.plan.validate().map_err(anyhow::Error::msg)?;
    let scratch =
        std::env::temp_dir().join(format!("schedlab-qdisc-{}-{}", std::process::id(), schedlab_report::frontend::now_ns()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let result = (|| {
        // The harness first, alone on the CPUs (the guest would disturb it).
        let harness = match (cfg.harness, cfg.plan.alg.harness(cfg.plan.qfq_agg_classes)) {
            (true, Some(alg)) => Some(harness(cfg, &alg, &scratch)?),
            _ => None,
        };
        let model = if cfg.model { model::run(&cfg.plan) } else { None };
        let (k, boot, wall) = kernel(cfg, &scratch)?;
        Ok(compare(cfg.plan.clone(), k, model, harness, boot, wall))
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The one-line reason when `e` says a guest cannot run on this machine.
pub fn unavailable(e: &anyhow::Error) -> Option<String> {
    e.chain().find_map(|c| match c.downcast_ref::<GuestError>() {
        Some(GuestError::Unavailable(u)) => Some(u.to_string()),
        _ => None,
    })
}
