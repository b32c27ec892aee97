//! `schedlab rdma --backend verbs` on a real verbs stack: Soft-RoCE (`rdma_rxe`) in the QEMU guest
//! of `schedlab_kernel::guest`, driven by `tests/guest/rdma-verbs.sh` (one boot per test). The seed's
//! command lines for every operation and both completion modes, perftest's `ib_write_bw` and
//! `ib_write_lat` beside schedlab in the same boot, and two concurrent flows shaped by a tbf on the
//! veth, on verbs and on the emulated backend over the same path.
//!
//! Skipped, visibly, where the guest cannot run (no QEMU, kernel package, space) or where this
//! `schedlab` was built without the verbs backend (`cargo test --release -p schedlab --features
//! rdma-verbs --test rdma_verbs` builds it with it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use schedlab_kernel::guest::{self, GuestConfig, GuestError, Kernel};
use schedlab_report::skip;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/guest/rdma-verbs.sh");
/// Messages per seed command line (every -O, busy and event polling).
const OPS_N: u64 = 40;
/// Paired trials against perftest, and their sizes (short: the kernel stage has a budget).
const PERF_PAIRS: usize = 5;
const PERF_BW_N: f64 = 200.0;
const PERF_LAT_N: f64 = 100.0;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("schedlab")
}

/// `Err(reason)` when this binary has no verbs backend (the message its verbs backend gives).
fn verbs_built() -> Result<(), String> {
    let out = std::process::Command::new(bin())
        .args(["rdma", "--backend", "verbs", "--timeout", "1", "127.0.0.1", "-p", "9"])
        .output()
        .expect("runs schedlab");
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("built without the real RDMA backend") {
        return Err(format!("this schedlab was built without --features rdma-verbs: {}", err.trim()));
    }
    Ok(())
}

/// Why there are no results: no guest or no verbs backend here (a skip), or the run failed.
#[derive(Debug)]
enum NoRun {
    Skip(String),
    Fail(String),
}

/// The guest's results: one boot for all three tests (the guest is slow; CI's kernel stage has
/// five minutes for everything), made by whichever test comes first; a failed run fails them all.
static RUN: OnceLock<Result<tempfile::TempDir, NoRun>> = OnceLock::new();

macro_rules! guest_results {
    () => {
        match RUN.get_or_init(|| run_guest("ops perf share", 600)) {
            Ok(d) => d.path(),
            Err(NoRun::Skip(why)) => skip!("{why}"),
            Err(NoRun::Fail(why)) => panic!("{why}"),
        }
    };
}

/// Boots the guest and runs the script's `phases`; returns the output folder.
fn run_guest(phases: &str, timeout_s: u64) -> Result<tempfile::TempDir, NoRun> {
    verbs_built().map_err(NoRun::Skip)?;
    let mut cfg = GuestConfig::new(guest::default_cache());
    cfg.timeout = Duration::from_secs(timeout_s);
    let k: Kernel = match guest::prepare(&cfg, &mut |m| eprintln!("{m}")) {
        Ok(k) => k,
        Err(GuestError::Unavailable(u)) => return Err(NoRun::Skip(u.to_string())),
        Err(e) => return Err(NoRun::Fail(format!("preparing the guest failed: {e}"))),
    };
    let dir = tempfile::tempdir().unwrap();
    cfg.writable.push(dir.path().to_path_buf());
    cfg.cwd = Some(dir.path().to_path_buf());
    let argv: Vec<String> = vec![
        "sh".into(),
        SCRIPT.into(),
        bin().display().to_string(),
        dir.path().display().to_string(),
        phases.into(),
        OPS_N.to_string(),
        PERF_PAIRS.to_string(),
        PERF_BW_N.to_string(),
        PERF_LAT_N.to_string(),
    ];
    let t0 = std::time::Instant::now();
    let out = guest::run(&k, &cfg, &argv).map_err(|e| NoRun::Fail(format!("the guest run failed: {e}")))?;
    eprintln!("guest run ({phases}): {:.1} s", t0.elapsed().as_secs_f64());
    for f in &out.failed_boots {
        eprintln!("note: a guest boot died before the script started ({f}); booted again");
    }
    if out.exit != 0 {
        return Err(NoRun::Fail(format!(
            "guest script exit {}; steps:\n{}\nstderr:\n{}\nconsole:\n{}",
            out.exit,
            read(dir.path(), "steps.txt"),
            String::from_utf8_lossy(&out.stderr),
            out.console
        )));
    }
    Ok(dir)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| format!("<{name}: {e}>"))
}

/// Every step the script recorded (`NAME rc=N`), by name.
fn steps(dir: &Path) -> BTreeMap<String, i32> {
    let text = read(dir, "steps.txt");
    assert!(text.lines().last() == Some("done"), "the guest script did not finish:\n{text}");
    text.lines()
        .filter_map(|l| l.rsplit_once(" rc="))
        .map(|(n, rc)| (n.to_string(), rc.parse().unwrap_or_else(|_| panic!("bad step line in:\n{text}"))))
        .collect()
}

fn assert_ok(dir: &Path, steps: &BTreeMap<String, i32>, name: &str) {
    let rc = steps.get(name).unwrap_or_else(|| panic!("no step {name} in {steps:?}"));
    let base = name.rsplit_once('.').map_or(name, |(b, _)| b);
    assert_eq!(
        *rc,
        0,
        "{name} failed; client:\n{}{}\nserver:\n{}{}",
        read(dir, &format!("{base}.cli.out")),
        read(dir, &format!("{base}.cli.err")),
        read(dir, &format!("{base}.srv.out")),
        read(dir, &format!("{base}.srv.err"))
    );
}

/// An `-o` file read as the original tool's (Justitia's `write_bw`) are: one header line, then
/// `Task_cnt`, completion time (µs since start) and latency (µs), tab-separated, one per message.
fn parse_original(path: &Path) -> Vec<(u64, f64, f64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("Task_cnt\tTime(us)\t\tLatency"), "{}", path.display());
    lines
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').filter(|s| !s.is_empty()).collect();
            assert_eq!(f.len(), 3, "{}:{}: {l:?}", path.display(), i + 2);
            let n = f[0].parse().unwrap_or_else(|_| panic!("{}:{}: {l:?}", path.display(), i + 2));
            let t = f[1].parse().unwrap_or_else(|_| panic!("{}:{}: {l:?}", path.display(), i + 2));
            let lat = f[2].parse().unwrap_or_else(|_| panic!("{}:{}: {l:?}", path.display(), i + 2));
            (n, t, lat)
        })
        .collect()
}

fn json(dir: &Path, name: &str) -> serde_json::Value {
    serde_json::from_str(&read(dir, name)).unwrap_or_else(|e| panic!("{name}: {e}: {}", read(dir, name)))
}

/// perftest's result row: the line after the `#bytes` header, its `col`-th number.
fn perftest_col(text: &str, col: usize) -> f64 {
    let mut lines = text.lines().skip_while(|l| !l.trim_start().starts_with("#bytes"));
    lines.next();
    let row = lines.next().unwrap_or_else(|| panic!("no perftest result row in:\n{text}"));
    row.split_whitespace().nth(col).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("column {col} of {row:?}"))
}

#[test]
fn the_seeds_command_lines_complete_on_soft_roce() {
    let d = guest_results!();
    let st = steps(d);
    for s in ["modprobe", "veth", "addr", "rxe0", "rxe1", "routing"] {
        assert_eq!(st.get(s), Some(&0), "setup step {s}: {st:?}\ndevinfo:\n{}", read(d, "devinfo.txt"));
    }
    let mut cases: Vec<(String, &str, &str, u64, u32)> = Vec::new();
    for (op, name) in [(0, "WRITE"), (1, "READ"), (2, "WRITE_IMM"), (3, "SEND")] {
        for poll in ["busy", "event"] {
            cases.push((format!("op{op}-{poll}"), name, poll, OPS_N, 65536));
        }
    }
    cases.push(("op3-depth4".into(), "SEND", "busy", 300, 4096));
    for (case, op, poll, n, bytes) in &cases {
        assert_ok(d, &st, &format!("{case}.cli"));
        assert_ok(d, &st, &format!("{case}.srv"));
        let res = json(d, &format!("{case}.json"));
        assert_eq!(res["backend"].as_str(), Some("VERBS"), "{case}");
        assert_eq!((res["completed"].as_u64(), res["bytes"].as_u64()), (Some(*n), Some(u64::from(*bytes))), "{case}");
        assert!(res["bw_avg_gbps"].as_f64().unwrap() > 0.0, "{case}: {res}");
        // The -o file as the original's: every message once, in order, times not decreasing.
        let recs = parse_original(&d.join(format!("{case}.o.txt")));
        assert_eq!(recs.len() as u64, *n, "{case}");
        for (i, w) in recs.windows(2).enumerate() {
            assert_eq!(w[0].0, i as u64 + 1, "{case}");
            assert!(w[1].1 >= w[0].1, "{case}: time goes back at message {}", i + 2);
        }
        assert!(recs.iter().all(|r| r.2 > 0.0), "{case}: a latency of 0");
        // The sidecar says what wrote it (the original tool's readers skip it).
        let side = json(d, &format!("{case}.o.txt.json"));
        assert_eq!(
            (side["backend"].as_str(), side["op"].as_str(), side["poll"].as_str(), side["count"].as_u64()),
            (Some("VERBS"), Some(*op), Some(*poll), Some(*n)),
            "{case}"
        );
        // SEND and WRITE_IMM consume a receive per message at the server: it saw all of them.
        if matches!(*op, "SEND" | "WRITE_IMM") {
            let srv = read(d, &format!("{case}.srv.out"));
            let row = format!(" {bytes} ");
            assert!(
                srv.lines().any(|l| l.starts_with(&format!("{row}{n} ")) || (l.contains(&row) && l.contains(&format!(" {n} ")))),
                "{case}: the server must report all {n} received:\n{srv}"
            );
        }
        println!(
            "{case:<12} {op:<9} {poll:<5} {n:>5} x {bytes:>6} B  {:.3} Gb/s  p50 {:.1} us",
            res["bw_avg_gbps"], res["lat_us"]["p50"]
        );
    }
}

/// Distribution-free interval of a median: order statistics k and n+1-k, the largest k with at most
/// 5% in each tail of Binomial(n, 1/2) (as scripts/sched-crosscheck.sh). Returns (median, lo, hi,
/// coverage), or no interval (None) below 5 values.
fn median_ci(v: &[f64]) -> (f64, Option<(f64, f64, f64)>) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    let binom = |n: usize, j: usize| (0..j).fold(1.0f64, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
    let tail = |k: usize| (0..=k).map(|j| binom(n, j)).sum::<f64>() / 2f64.powi(n as i32);
    let mut k = 0;
    while k < n / 2 && tail(k) <= 0.05 {
        k += 1;
    }
    if k == 0 {
        return (med, None);
    }
    (med, Some((v[k - 1], v[n - k], 1.0 - 2.0 * tail(k - 1))))
}

/// Whether the interval of the median paired ratio lies in a band (e.g. [0.9, 1.1], within 10%):
/// yes when it lies inside, no when it lies wholly beyond, otherwise it cannot tell.
#[derive(Debug, PartialEq)]
enum InBand {
    Yes,
    No,
    CannotTell,
}

fn judge_within_10(ci: Option<(f64, f64, f64)>) -> InBand {
    judge_band(ci, 0.9, 1.1)
}

/// The judgement against the band [`lo`, `hi`].
fn judge_band(ci: Option<(f64, f64, f64)>, lo: f64, hi: f64) -> InBand {
    match ci {
        Some((a, b, _)) if a >= lo && b <= hi => InBand::Yes,
        Some((a, b, _)) if a > hi || b < lo => InBand::No,
        _ => InBand::CannotTell,
    }
}

#[test]
fn the_median_interval_and_the_judgement_follow_the_order_statistics() {
    // 6 values: k = 1 (P(X <= 0) = 1/64 <= 5%, P(X <= 1) = 7/64 > 5%): the extremes, 96.9%.
    let (m, ci) = median_ci(&[1.0, 0.95, 1.05, 0.98, 1.02, 0.99]);
    assert!((m - 0.995).abs() < 1e-12);
    let (lo, hi, cov) = ci.unwrap();
    assert_eq!((lo, hi), (0.95, 1.05));
    assert!((cov - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
    assert_eq!(judge_within_10(ci), InBand::Yes);
    // 9 values: k = 2, the 2nd and the 8th.
    let v: Vec<f64> = (1..=9).map(f64::from).collect();
    assert_eq!(median_ci(&v).1.map(|c| (c.0, c.1)), Some((2.0, 8.0)));
    assert_eq!(median_ci(&[1.0, 1.0, 1.0, 1.0]).1, None);
    assert_eq!(judge_within_10(None), InBand::CannotTell);
    assert_eq!(judge_within_10(median_ci(&[0.5, 0.6, 0.7, 0.8, 0.85]).1), InBand::No);
    assert_eq!(judge_within_10(median_ci(&[0.8, 1.0, 1.0, 1.0, 1.0]).1), InBand::CannotTell);
    // The factor-of-three band that fails the test: the boots of 2026-11-28 (0.72 [0.43-0.87],
    // 1.80 [1.04-2.02]) are inside it, a bytes-for-bits slip (0.125) is not.
    let band = |v: &[f64]| judge_band(median_ci(v).1, 1.0 / 3.0, 3.0);
    assert_eq!(band(&[0.72, 0.43, 0.87, 0.6, 0.8]), InBand::Yes);
    assert_eq!(band(&[2.007, 1.179, 1.804, 1.036, 2.023]), InBand::Yes);
    assert_eq!(band(&[0.12, 0.13, 0.125, 0.11, 0.14]), InBand::No);
}

#[test]
fn write_bandwidth_and_latency_beside_perftest() {
    let d = guest_results!();
    let st = steps(d);
    let pf = |name: &str, bytes: f64, iters: f64, col: usize| {
        let t = read(d, name);
        assert_eq!((perftest_col(&t, 0), perftest_col(&t, 1)), (bytes, iters), "same bytes and iterations:\n{t}");
        perftest_col(&t, col)
    };
    // Per pair: (schedlab, perftest) for WRITE bandwidth (Gb/s) and 64-byte latency (us). Same
    // bytes and iterations on both sides. perftest's rows: #bytes #iterations, then (bw) BW-peak
    // BW-average MsgRate or (lat) t_min t_max t_typical t_avg ... ib_write_lat's t_typical is half
    // a ping-pong; schedlab's latency is post to completion of one WRITE (data out, ACK back), a
    // round trip: set beside 2 x t_typical. The two are not the same quantity: ib_write_lat's
    // round trip includes the remote program seeing the write in its polling loop and writing
    // back, schedlab's only the transport's ACK. Under emulation that turnaround is most of the
    // time (2026-11-28: schedlab 0.47 [0.35-0.68] of 2 x t_typical), so latency is printed with
    // its interval and not judged; bandwidth (the same work on both sides) is, within a factor of
    // three (below).
    let (mut bw, mut lat) = (Vec::new(), Vec::new());
    for i in 1..=PERF_PAIRS {
        for s in
            [format!("perf-bw-{i}.cli"), format!("perf-bw-{i}.srv"), format!("perf-lat-{i}.cli"), format!("perf-lat-{i}.srv")]
        {
            assert_ok(d, &st, &s);
        }
        for s in [format!("pf-bw-{i}"), format!("pf-lat-{i}")] {
            let rc = st.get(&format!("{s}.cli"));
            assert_eq!(rc, Some(&0), "{s}:\n{}\nserver:\n{}", read(d, &format!("{s}.cli")), read(d, &format!("{s}.srv")));
        }
        let ob = json(d, &format!("perf-bw-{i}.json"));
        assert_eq!((ob["completed"].as_f64(), ob["bytes"].as_u64()), (Some(PERF_BW_N), Some(65536)), "pair {i}");
        let ol = json(d, &format!("perf-lat-{i}.json"));
        assert_eq!((ol["completed"].as_f64(), ol["bytes"].as_u64()), (Some(PERF_LAT_N), Some(64)), "pair {i}");
        bw.push((ob["bw_avg_gbps"].as_f64().unwrap(), pf(&format!("pf-bw-{i}.cli"), 65536.0, PERF_BW_N, 3)));
        lat.push((ol["lat_us"]["p50"].as_f64().unwrap(), 2.0 * pf(&format!("pf-lat-{i}.cli"), 64.0, PERF_LAT_N, 4)));
    }
    let mut verdicts = Vec::new();
    let mut not_judged = Vec::new();
    for (what, pairs, unit, judged) in [
        (format!("WRITE bandwidth, {PERF_BW_N} x 64 KiB, one request in flight (ib_write_bw -t 1)"), &bw, "Gb/s", true),
        (format!("WRITE latency p50, {PERF_LAT_N} x 64 B (ib_write_lat: 2 x t_typical)"), &lat, "us", false),
    ] {
        let ratios: Vec<f64> = pairs.iter().map(|(o, p)| o / p).collect();
        let (med, ci) = median_ci(&ratios);
        // perftest against itself: its spread, and the ratio of each of its trials to the one before.
        let pft: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        let (lo, hi) = pft.iter().fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        let self_ratios: Vec<f64> = pft.windows(2).map(|w| w[1] / w[0]).collect();
        let (smed, sci) = median_ci(&self_ratios);
        let fmt = |m: f64, ci: Option<(f64, f64, f64)>| match ci {
            Some((a, b, c)) => format!("{m:.3} [{a:.3}-{b:.3}, {:.0}%]", 100.0 * c),
            None => format!("{m:.3} [no interval: fewer than 5 values]"),
        };
        println!("{what}, {} alternating pairs in one boot:", pairs.len());
        for (i, (o, p)) in pairs.iter().enumerate() {
            println!("  pair {}: schedlab {o:.4} {unit}, perftest {p:.4} {unit}, ratio {:.3}", i + 1, o / p);
        }
        println!("  median paired ratio schedlab/perftest {}", fmt(med, ci));
        println!("  perftest's own swing: {lo:.4}-{hi:.4} {unit} ({:.2}x); trial to the one before {}", hi / lo, fmt(smed, sci));
        let v = judge_within_10(ci);
        if judged {
            println!("  within 10%: {v:?}");
            verdicts.push((what, v, fmt(med, ci), ci));
        } else {
            println!("  within 10%: not judged (post to completion against a ping-pong's round trip: {v:?})");
            not_judged.push(format!("{what}: {} (post to completion against a ping-pong; printed, not judged)", fmt(med, ci)));
        }
    }
    // What fails: a median whose interval lies wholly beyond a factor of three of perftest's — a
    // measurement error (units, bytes for bits, the clock), not emulation's swing. Within 10% is
    // the claim shown when the interval allows it; under TCG it mostly cannot be: the same paired
    // trials gave medians from 0.72 [0.43-0.87] to 1.80 [1.04-2.02] in different boots, single
    // pairs from 0.43 to 2.02 (2026-11-28, docs/notes/2026-11-28-rdma-perftest-pairs.md), so a
    // boot that reads "No" is reported as not shown, not failed.
    for (what, _, r, ci) in &verdicts {
        assert_ne!(
            judge_band(*ci, 1.0 / 3.0, 3.0),
            InBand::No,
            "{what}: the median paired ratio {r} lies wholly outside [1/3, 3]"
        );
    }
    let mut unsure: Vec<String> = verdicts
        .iter()
        .filter(|v| v.1 != InBand::Yes)
        .map(|(w, v, r, _)| {
            format!("{w}: {r} ({})", if *v == InBand::No { "outside [0.9, 1.1] in this boot" } else { "cannot tell" })
        })
        .collect();
    unsure.extend(not_judged);
    if !unsure.is_empty() {
        // Not a pass: the interval is too wide, straddles a limit, or lies outside it in this boot.
        skip!("not shown within 10% of perftest: {}", unsure.join("; "));
    }
}

#[test]
fn two_flows_through_a_shaped_veth_on_verbs_and_emulated() {
    let d = guest_results!();
    let st = steps(d);
    assert_eq!(st.get("tbf"), Some(&0), "{st:?}");
    let mut shares = Vec::new();
    for be in ["verbs", "emulated"] {
        for s in [format!("share-{be}.listen"), format!("share-{be}-A.cli"), format!("share-{be}-B.cli")] {
            assert_eq!(
                st.get(&s),
                Some(&0),
                "{s}:\nA:\n{}\nB:\n{}",
                read(d, &format!("share-{be}-A.cli.out")),
                read(d, &format!("share-{be}-B.cli.out"))
            );
        }
        assert_eq!(st.get(&format!("share-{be}.analysis")), Some(&0), "{}", read(d, &format!("share-{be}.txt")));
        let r = json(d, &format!("share-{be}.json"));
        let want = if be == "verbs" { "VERBS" } else { "EMULATED" };
        assert_eq!(r["backend"].as_str(), Some(want), "{r}");
        let f = r["flows"].as_array().unwrap();
        let (a, b) = (f[0]["gbps"].as_f64().unwrap(), f[1]["gbps"].as_f64().unwrap());
        assert!(a > 0.0 && b > 0.0, "{be}: both flows moved data: {r}");
        // The tbf (10 Mb/s) let no more through: the traffic took the shaped veth, not lo.
        assert!(a + b <= 0.010 * 1.05, "{be}: {a} + {b} Gb/s is more than the 10 Mb/s tbf lets through");
        println!(
            "{be:<8} A (256 KiB) {a:.4} Gb/s  B (16 KiB) {b:.4} Gb/s  A's share {:.3}  Jain {:.3}  link use {:.2}",
            a / (a + b),
            r["jain"],
            (a + b) / 0.010
        );
        shares.push(a / (a + b));
    }
    println!("tbf:\n{}", read(d, "tbf-stats.txt"));
    // One request in flight per flow behind one FIFO: the larger message takes the larger share,
    // on the real stack and in emulation alike.
    assert!(shares.iter().all(|s| *s > 0.5), "{shares:?}");
}
