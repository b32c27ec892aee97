//! CLI tests of `schedlab trylock`, `notify` and `semtest` (crate schedlab-prims): the seeds'
//! command lines, output shape, JSON contents, bad input, and what happens without privileges.
//! Runs are kept short (small -t / -n / -i, no sleep between semtest iterations) because CI is a
//! noisy 2-core VM; nothing here compares timings against a threshold.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

fn run(args: &[&str]) -> Output {
    schedlab().args(args).timeout(std::time::Duration::from_secs(120)).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "schedlab {args:?} failed: {}\n{}", stderr(&o), stdout(&o));
    stdout(&o)
}

/// CPUs this process may run on (its affinity mask, as `schedlab` sees it), from /proc.
fn allowed_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

fn cpus() -> usize {
    allowed_cpus().len()
}

/// `000.123456 func       [N] rest` -> (func, N, rest)
fn seed_line(line: &str) -> Option<(&str, i32, &str)> {
    let (stamp, rest) = line.split_once(' ')?;
    if stamp.len() != 10 || stamp.as_bytes()[3] != b'.' || !stamp.replace('.', "").bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let func = rest.get(..10)?.trim_end();
    let rest = rest.get(11..)?;
    let (tag, rest) = rest.strip_prefix('[')?.split_once("] ")?;
    Some((func, tag.parse().ok()?, rest))
}

/// Numbers written like C's %e: 2.031e+08.
fn is_c_exp(s: &str) -> bool {
    let Some((m, e)) = s.split_once('e') else { return false };
    m.parse::<f64>().is_ok()
        && (e.starts_with('+') || e.starts_with('-'))
        && e[1..].len() >= 2
        && e[1..].bytes().all(|b| b.is_ascii_digit())
}

fn field_after<'a>(s: &'a str, key: &str) -> &'a str {
    s.split(key).nth(1).unwrap_or_else(|| panic!("no '{key}' in {s:?}")).split_whitespace().next().unwrap().trim_end_matches(',')
}

#[test]
fn trylock_seed_test_a_verbatim() {
    let out = ok(&["trylock", "-n", "3"]);
    let busy: Vec<_> = out.lines().filter_map(seed_line).filter(|(f, _, _)| *f == "fn_busy").collect();
    assert_eq!(busy.len(), 3, "{out}");
    for (i, (_, cpu, rest)) in busy.iter().enumerate() {
        assert!(*cpu >= 0);
        assert!(rest.starts_with(&format!("#{i:02} busy: ")), "{rest}");
        assert!(is_c_exp(field_after(rest, "busy: ")) && is_c_exp(field_after(rest, "samples ")), "{rest}");
        // The lock is held by the launcher for the whole test: every try fails.
        assert_eq!(field_after(rest, "free: "), "0.000000e+00", "{rest}");
    }
    let main = out.lines().filter_map(seed_line).find(|(f, _, _)| *f == "main").expect("main line");
    assert!(main.2.starts_with("BUSY: total ") && main.2.contains(" ops, per-thread "), "{}", main.2);
    let total: f64 = field_after(main.2, "total ").parse().unwrap();
    let per: f64 = field_after(main.2, "per-thread ").parse().unwrap();
    assert!((total / 3.0 - per).abs() <= per * 0.01, "per-thread is the mean: {total} {per}");
}

#[test]
fn trylock_seed_test_b_with_dump() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump.txt");
    let out = ok(&["trylock", "-n", "3", "-F", "-o", dump.to_str().unwrap(), "-t", "0.2", "--ring", "5000"]);
    let free: Vec<_> = out.lines().filter_map(seed_line).filter(|(f, _, _)| *f == "fn_free").collect();
    assert_eq!(free.len(), 3, "{out}");
    let mut busy_total = 0.0;
    for (_, _, rest) in &free {
        for key in ["busy: ", "free: ", "post: "] {
            assert!(is_c_exp(field_after(rest, key)), "{key} in {rest}");
        }
        let b: f64 = field_after(rest, "busy: ").parse().unwrap();
        let f: f64 = field_after(rest, "free: ").parse().unwrap();
        assert!(((b + f) - 200_000.0).abs() <= 200.0, "every try is busy or free: {rest}");
        busy_total += b.min(5000.0);
        assert!(rest.contains(" ns, duration ") && rest.ends_with(" s"), "{rest}");
    }
    let main = out.lines().filter_map(seed_line).find(|(f, _, r)| *f == "main" && r.starts_with("t_busy")).unwrap();
    assert!(main.2.contains(" ns, t_free ") && main.2.ends_with(" ns"), "{}", main.2);
    let lines: Vec<u64> = std::fs::read_to_string(&dump).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert!((lines.len() as f64 - busy_total).abs() <= 3.0, "dump holds the kept busy samples: {} vs {busy_total}", lines.len());
    assert!(out.contains(&format!("{} busy trylock samples", lines.len())), "{out}");
}

#[test]
fn trylock_every_lock_and_the_pingpong() {
    for lock in ["sem", "mutex", "spinlock", "futex", "tas", "ttas", "ticket"] {
        let out = ok(&["trylock", "-n", "2", "-F", "-t", "0.02", "--lock", lock]);
        assert!(out.contains(&format!("lock {lock},")), "{out}");
        assert_eq!(out.lines().filter_map(seed_line).filter(|(f, _, _)| *f == "fn_free").count(), 2);
    }
    let out = ok(&["trylock", "--pingpong", "-t", "0.002", "--lock", "ticket"]);
    let pp: Vec<_> = out.lines().filter_map(seed_line).filter(|(f, _, _)| *f == "fn_pp").collect();
    assert_eq!(pp.len(), 2, "{out}");
    for (_, _, rest) in pp {
        assert_eq!(field_after(rest, "free: "), "2.000e+03", "strict alternation: one acquisition per round: {rest}");
        let busy: f64 = field_after(rest, "busy: ").parse().unwrap();
        assert!(busy >= 1_999.0, "the holder waits for a busy try every round: {rest}");
    }
}

#[test]
fn notify_seed_test_a_verbatim() {
    let out = ok(&["notify"]);
    let snd = out.lines().filter_map(seed_line).find(|(f, _, _)| *f == "snd_body").expect("snd_body line");
    let rcv = out.lines().filter_map(seed_line).find(|(f, _, _)| *f == "rcv_body").expect("rcv_body line");
    assert!(snd.2.starts_with("sender rate ") && snd.2.ends_with(" ops") && is_c_exp(field_after(snd.2, "rate ")), "{}", snd.2);
    assert!(rcv.2.starts_with("receiver rate ") && rcv.2.contains(" ops, #wakeups "), "{}", rcv.2);
    let wakeups: u64 = field_after(rcv.2, "#wakeups ").parse().unwrap();
    assert!((1..=2_000_000).contains(&wakeups));
    assert!(out.contains("2000000 notifications sent, 2000000 received"), "{out}");
}

#[test]
fn notify_seed_test_b_and_every_mechanism() {
    let out = ok(&["notify", "-S", "-n", "1", "--gap-us", "5"]);
    let rcv = out.lines().filter_map(seed_line).find(|(f, _, _)| *f == "rcv_body").unwrap();
    assert_eq!(field_after(rcv.2, "#wakeups "), "1000", "test B: each notification wakes the receiver");
    let snd = out.lines().filter_map(seed_line).find(|(f, _, _)| *f == "snd_slow_b").expect("snd_slow_b line");
    assert!(snd.2.starts_with("sender cost ") && snd.2.ends_with(" ns") && is_c_exp(field_after(snd.2, "cost ")), "{}", snd.2);
    for m in ["eventfd", "pipe", "futex", "sem", "condvar", "unix"] {
        let out = ok(&["notify", "-n", "5", "--primitive", m]);
        assert!(out.contains(&format!("test A (receiver side): {m},")), "{out}");
        assert!(out.contains("5000 notifications sent, 5000 received"), "{m}: {out}");
    }
}

#[test]
fn semtest_help_and_seed_shape() {
    let help = ok(&["semtest", "-h"]);
    for opt in
        ["--affinity", "--no_affinity", "--iterations", "--num_cpus", "--priority", "--policy_rr", "--placement", "--primitive"]
    {
        assert!(help.contains(opt), "{opt} missing from help:\n{help}");
    }
    let out = ok(&["semtest", "-i", "2000", "--interval", "0"]);
    for head in
        ["Starting test:", "Affinity:       On", "Iterations:     2000", "Priority:       0", "Policy:         SCHED_OTHER"]
    {
        assert!(out.contains(head), "{head}\n{out}");
    }
    assert!(out.contains(&format!("num_cpus:       {}", cpus())), "{out}");
    let p: Vec<&str> = out.lines().filter(|l| l.starts_with("P: ")).collect();
    assert_eq!(p.len(), cpus(), "one pair per CPU:\n{out}");
    let mins: Vec<f64> = p.iter().map(|l| field_after(l, "Min:").parse().unwrap()).collect();
    let maxs: Vec<f64> = p.iter().map(|l| field_after(l, "Max:").parse().unwrap()).collect();
    let gmin = out.lines().find(|l| l.starts_with("(Min) Global:")).unwrap();
    let gmax = out.lines().find(|l| l.starts_with("(Max) Global:")).unwrap();
    let v: f64 = field_after(gmin, "Global:").parse().unwrap();
    assert_eq!(v, mins.iter().copied().fold(f64::INFINITY, f64::min), "(Min) Global is the smallest minimum: {gmin}");
    let v: f64 = field_after(gmax, "Global:").parse().unwrap();
    assert_eq!(v, maxs.iter().copied().fold(0.0, f64::max), "{gmax}");
    assert!(gmax.contains(" usvg: ") && gmax.contains(" us") && gmax.contains("middle: "), "{gmax}");
    assert!(out.lines().any(|l| l.starts_with("Test took 0 hours 0 mins ") && l.ends_with(" secs to complete")), "{out}");
    assert!(out.contains("# (All) Global: p50 "), "{out}");
    // The seed's block, byte for byte in layout: from "Starting test:" to "Test took", only the
    // seed's lines, in the seed's order, whole microseconds, the seed's column positions.
    let block: Vec<&str> = out.lines().skip_while(|l| *l != "Starting test:").take_while(|l| !l.starts_with('#')).collect();
    let n = cpus();
    assert_eq!(block.len(), 1 + 5 + 1 + n + 2 + 1, "{block:#?}");
    assert_eq!(block[6], "Summary of 2000 iterations");
    for (i, l) in block[7..7 + n].iter().enumerate() {
        assert!(l.starts_with(&format!("P: {i:2}, ")), "{l}");
        assert_eq!(&l[16..21], "Pri: ", "{l}");
        assert_eq!(&l[24..28], "Max:", "{l}");
        assert_eq!(&l[48..52], "Min:", "{l}");
        assert_eq!(l.len(), 64, "Min is %12ld: {l}");
        assert!(l[28..40].trim().parse::<u64>().is_ok() && l[52..].trim().parse::<u64>().is_ok(), "whole us: {l}");
    }
    for l in [gmax, gmin] {
        assert!(l[13..26].trim().parse::<u64>().is_ok() && l[26..].starts_with(" usvg: "), "{l}");
        assert_eq!(l.find("middle: ").unwrap(), 48, "{l}");
    }
    // The blank line before "Starting test:" is the original's.
    assert!(out.contains("\n\nStarting test:\n"), "{out}");
}

#[test]
fn semtest_and_notify_run_for_a_duration_and_dump_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("semtest.hist");
    let t = std::time::Instant::now();
    let out = ok(&["semtest", "-D", "0.5s", "--interval", "100", "-n", "1", "--histfile", hist.to_str().unwrap()]);
    assert!(t.elapsed() < Duration::from_secs(20));
    let done: u64 =
        out.lines().find_map(|l| l.strip_prefix("Summary of ")).unwrap().trim_end_matches(" iterations").parse().unwrap();
    assert!(done > 10, "{out}");
    assert!(out.contains(&format!("Iterations:     {done}\n")), "{out}");
    let text = std::fs::read_to_string(&hist).unwrap();
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let total: u64 = rows.iter().map(|r| r.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap()).sum();
    let overflow: u64 = text.lines().find_map(|l| l.strip_prefix("# Histogram Overflows:")).unwrap().trim().parse().unwrap();
    assert_eq!(total + overflow, done, "every sample is in a bucket or an overflow:\n{text}");
    assert!(rows.iter().enumerate().all(|(i, r)| r.starts_with(&format!("{i:06} "))), "consecutive 1 us buckets");
    assert!(text.contains(&format!("# Total: {done:09}\n")), "{text}");

    // -i and -D together: whichever comes first (here -i).
    let out = ok(&["semtest", "-D", "1m", "-i", "50", "--interval", "0", "-n", "1"]);
    assert!(out.contains("Summary of 50 iterations"), "{out}");

    let nh = dir.path().join("notify.hist");
    let t = std::time::Instant::now();
    let out = ok(&["notify", "-S", "-D", "300ms", "--histfile", nh.to_str().unwrap()]);
    assert!(t.elapsed() < Duration::from_secs(20));
    assert!(out.contains("# stopped after -D 0.3 s"), "{out}");
    let text = std::fs::read_to_string(&nh).unwrap();
    assert!(text.starts_with("# Histogram: sender cost, wake-up latency\n000000 "), "{text}");
    let tot: Vec<u64> =
        text.lines().find_map(|l| l.strip_prefix("# Total:")).unwrap().split_whitespace().map(|x| x.parse().unwrap()).collect();
    assert!(tot[0] > 0 && tot.len() == 2, "{text}");
    let out = ok(&["notify", "-D", "200ms"]);
    assert!(out.contains("notifications for 0.2 s"), "{out}");
    fails_with(&["notify", "--histfile", "x.hist"], "needs test B (-S)");
    fails_with(&["semtest", "-D", "soon"], "is not a duration");
}

#[test]
fn json_to_stdout_is_only_json() {
    for args in [
        vec!["trylock", "-n", "2", "-F", "-t", "0.01", "--json", "-"],
        vec!["trylock", "-n", "1", "-t", "0.1", "--json", "-"],
        vec!["notify", "-n", "2", "--json", "-"],
        vec!["notify", "-S", "-n", "0.1", "--json", "-"],
        vec!["semtest", "-i", "100", "--interval", "0", "-n", "1", "--json", "-"],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: stdout is not only JSON ({e}):\n{}", stdout(&o)));
        assert_eq!(v["command"], args[0]);
        assert!(stderr(&o).lines().count() > 3, "the human lines go to stderr: {}", stderr(&o));
    }
}

#[test]
fn unwritable_outputs_are_refused_before_measuring() {
    for (args, what) in [
        (vec!["trylock", "-F", "-t", "1000", "-o", "/nonexistent-dir/dump.txt"], "-o file /nonexistent-dir/dump.txt"),
        (vec!["trylock", "-t", "1000", "--json", "/nonexistent-dir/t.json"], "--json file"),
        (vec!["semtest", "-i", "100000", "--histfile", "/nonexistent-dir/h"], "--histfile file"),
        (vec!["notify", "-S", "-n", "1000", "--histfile", "/nonexistent-dir/h"], "--histfile file"),
    ] {
        let t = std::time::Instant::now();
        fails_with(&args, what);
        assert!(t.elapsed() < Duration::from_secs(5), "{args:?} measured before failing ({:?})", t.elapsed());
    }
}

#[test]
fn semtest_placement_is_printed_per_pair_and_read_back() {
    let out = ok(&["semtest", "-i", "500", "--interval", "0", "--mode", "one-way", "--placement", "same-core", "-n", "1"]);
    let p = out.lines().find(|l| l.starts_with("# P: ")).unwrap();
    let c = allowed_cpus();
    assert!(p.contains(&format!("marco CPU {0} (ran on {0}), polo CPU {0} (ran on {0})", c[0])), "{p}");
    assert!(out.contains("one-way"), "{out}");
    if c.len() < 2 {
        schedlab_report::skip!("cross-core placement needs 2 CPUs, this machine has {}", c.len());
    }
    let fixed = format!("{}:{}", c[0], c[1]);
    let out = ok(&["semtest", "-i", "300", "--interval", "0", "--placement", &fixed, "--primitive", "futex"]);
    let p = out.lines().find(|l| l.starts_with("P: ")).unwrap();
    assert!(p.starts_with(&format!("P:  0, {} ", c[1])), "{p}");
    let p = out.lines().find(|l| l.starts_with("# P: ")).unwrap();
    assert!(p.contains(&format!("marco CPU {0} (ran on {0}), polo CPU {1} (ran on {1})", c[0], c[1])), "{p}");
    let out = ok(&["semtest", "-i", "300", "--interval", "0", "-A", "-n", "1"]);
    assert!(out.contains("Affinity:       Off") && out.contains("marco unpinned"), "{out}");
}

#[test]
fn json_results_record_the_machine_and_what_threads_got() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<&str>); 3] = [
        ("trylock", vec!["trylock", "-n", "2", "-F", "-t", "0.01"]),
        ("notify", vec!["notify", "-n", "2"]),
        ("semtest", vec!["semtest", "-i", "200", "--interval", "0", "-n", "1"]),
    ];
    for (name, mut args) in cases {
        let path = dir.path().join(format!("{name}.json"));
        args.extend(["--json", path.to_str().unwrap()]);
        ok(&args);
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["command"], name);
        let m = &v["machine"];
        for key in ["kernel", "cpu_model", "virtualization"] {
            assert!(m[key].as_str().is_some_and(|s| !s.is_empty()), "{name}: machine.{key}: {m}");
        }
        assert!(m.get("cpuidle_driver").is_some() && m.get("cpuidle_governor").is_some(), "{name}: idle settings");
        assert!(v["clock"]["read_cost_amortized_ns"].as_f64().unwrap() > 0.0);
        let threads = v["run"]["threads"].as_array().unwrap();
        assert!(!threads.is_empty());
        for t in threads {
            assert!(t["got"]["cpu"].as_i64().unwrap() >= 0, "{t}");
            assert!(t["got"]["policy"].is_string() && t["got"]["priority"].is_i64());
        }
    }
}

fn fails_with(args: &[&str], needle: &str) {
    let o = run(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} should fail");
    assert!(err.contains(needle), "{args:?}: expected '{needle}' in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_gives_a_clear_error() {
    fails_with(&["trylock", "-n", "0"], "-n 0");
    fails_with(&["trylock", "--lock", "rwlock"], "unknown lock 'rwlock'");
    fails_with(&["trylock", "-o", "x.txt"], "add -F");
    fails_with(&["trylock", "--pingpong", "-n", "3"], "exactly 2 threads");
    let too_many = (cpus() + 1).to_string();
    fails_with(&["trylock", "-n", &too_many, "--pin"], "CPUs are available");
    fails_with(&["notify", "--primitive", "mqueue"], "unknown primitive 'mqueue'");
    fails_with(&["notify", "-n", "0"], "-n 0");
    fails_with(&["notify", "-s", "4000"], "CPU 4000 is not available");
    fails_with(&["semtest", "-n", "0"], "-n 0");
    fails_with(&["semtest", "-n", &too_many], "CPUs are available");
    fails_with(&["semtest", "--primitive", "smoke-signal"], "unknown primitive");
    fails_with(&["semtest", "--placement", "0:zz"], "--placement");
    fails_with(&["semtest", "-p", "120"], "1 to 99");
    fails_with(&["semtest", "--frobnicate"], "--frobnicate");
}

#[test]
fn more_threads_than_cpus_without_pin_runs_unpinned_and_says_so() {
    let n = (cpus() + 1).to_string();
    let o = run(&["trylock", "-n", &n, "-t", "0.01"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("NOT pinned"), "{}", stderr(&o));
}

/// Runs schedlab with no privileges: as `nobody` through setpriv when we are root, or as we are.
/// `Err` says why privileges cannot be dropped here.
fn unprivileged(args: &[&str]) -> Result<Output, String> {
    let bin = assert_cmd::cargo::cargo_bin("schedlab");
    if !is_root() {
        return Ok(run(args));
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("no way to drop privileges here (no setpriv; apt-get install util-linux)")?;
    let as_nobody = |extra: &[&str]| {
        std::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
            .arg(&bin)
            .args(extra)
            .current_dir(std::env::temp_dir())
            .output()
            .map_err(|e| format!("cannot run {setpriv}: {e}"))
    };
    let probe = as_nobody(&["--version"])?;
    if !probe.status.success() {
        return Err(format!("user nobody cannot run {}: {}", bin.display(), String::from_utf8_lossy(&probe.stderr).trim()));
    }
    as_nobody(args)
}

/// Effective uid 0, read from /proc (no libc in this crate's dev-dependencies).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

#[test]
fn unprivileged_rt_request_is_refused_or_reported() {
    let args = ["semtest", "-i", "100", "--interval", "0", "-n", "1", "-p", "50"];
    let o = match unprivileged(&args) {
        Ok(o) => o,
        Err(why) => schedlab_report::skip!("{why}"),
    };
    let (out, err) = (stdout(&o), stderr(&o));
    if o.status.success() {
        // Only possible if this unprivileged user may use RT priorities (RLIMIT_RTPRIO).
        assert!(out.contains("Policy:         SCHED_FIFO\n") && out.contains("Priority:       50\n"), "{out}");
        schedlab_report::skip!("this unprivileged user is allowed RT priority 50; the refusal path was not exercised");
    }
    assert!(err.contains("not granted") && err.contains("--allow-degraded"), "{err}");
    let mut degraded = args.to_vec();
    degraded.push("--allow-degraded");
    let o = unprivileged(&degraded).unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Policy:         SCHED_OTHER (asked for SCHED_FIFO: not granted)"), "{out}");
    assert!(out.contains("Priority:       0 (asked for 50: not granted)"), "{out}");
    assert!(stderr(&o).contains("warning: degraded"), "{}", stderr(&o));
}

#[test]
fn rt_priority_result_agrees_with_the_exit_code() {
    // As root this normally gets SCHED_FIFO; in a container without RT budget it is refused. The
    // output must say which, and the exit code must match.
    let o = run(&["semtest", "-i", "200", "--interval", "0", "-n", "1", "-p", "10"]);
    let out = stdout(&o);
    if o.status.success() {
        assert!(out.contains("Policy:         SCHED_FIFO\n") && out.contains("Pri: 10"), "{out}");
    } else {
        assert!(stderr(&o).contains("not granted"), "{}", stderr(&o));
    }
    // -r selects SCHED_RR whatever its position (the original forced SCHED_FIFO with -p).
    for args in [["-r", "-p", "10"], ["-p", "10", "-r"]] {
        let mut v = vec!["semtest", "-i", "100", "--interval", "0", "-n", "1"];
        v.extend(args);
        let o = run(&v);
        if o.status.success() {
            assert!(stdout(&o).contains("Policy:         SCHED_RR\n"), "{}", stdout(&o));
        } else {
            assert!(stderr(&o).contains("SCHED_RR priority 10 not granted"), "{}", stderr(&o));
        }
    }
}
