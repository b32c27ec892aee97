//! `schedlab predict` and the message workload options of `schedlab sched`, end to end: the exact
//! release order for every policy (harness vs simulator), the message and trace files, the
//! "cannot keep up" verdict, and bad input. Every run is a fraction of a second.

use assert_cmd::Command;
use predicates::prelude::*;

/// Each run spins on every core: one at a time, so that the tests do not starve each other.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn schedlab(dir: &std::path::Path, cmd: &str) -> Command {
    let mut c = Command::cargo_bin("schedlab").unwrap();
    c.current_dir(dir).arg(cmd).timeout(std::time::Duration::from_secs(120));
    c
}

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// For every policy both sides run, the packets the harness released are exactly those the
/// simulator releases from the recorded arrivals, in the same order. This holds however loaded
/// the machine is (late passes are replayed as late), so the test cannot flake on timing.
#[test]
fn release_order_equals_the_simulators_for_every_policy() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    // 3 clients at 90% of 20 Mb/s with the report's length mix: queues build up, so the order
    // matters.
    write(d.path(), "w.txt", "thread all\n150ms 6M 1500 dist:report poisson\n");
    let algs = "fifo,rr,wf2qp,qfq,alpha:10,alpha:0.5,sf";
    schedlab(d.path(), "predict")
        .args(["-t", "3", "-f", "w.txt", "-b", "20M", "-q", "200", "-i", "0", "-c", "0", "--seed", "5"])
        .args(["--algs", algs, "--drain", "100ms", "--json", "p.json", "--plot", "p.svg"])
        .assert()
        .success()
        .stdout(predicate::str::contains("release order:"));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.path().join("p.json")).unwrap()).unwrap();
    assert_eq!(v["seed"], 5);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 7);
    for r in runs {
        let o = &r["order_check"];
        let n = o["harness_pkts"].as_u64().unwrap();
        assert!(n > 50, "{}: only {n} packets", r["alg"]);
        assert!(o["first_mismatch"].is_null(), "{}: harness and simulator differ: {o}", r["alg"]);
        assert!(o["simulator_pkts"].as_u64().unwrap() >= n);
        assert!(!r["rows"].as_array().unwrap().is_empty());
    }
    let svg = std::fs::read_to_string(d.path().join("p.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"), "plot written");
    assert!(svg.contains("fifo measured"));
}

#[test]
fn sched_writes_messages_and_a_replayable_trace() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "w.txt", "thread all\n100ms 2M 1000 dist:1-3:50,8:50 poisson\n");
    schedlab(d.path(), "sched")
        .args("-t 2 -f w.txt -b 10M -q 100 -i 0 -c 0 --no-timestamps --seed 9 --messages m.txt --trace-out t.txt --json r.json -- -alg sf".split(' '))
        .assert()
        .success()
        .stdout(predicate::str::contains("seed 9"));
    let m = std::fs::read_to_string(d.path().join("m.txt")).unwrap();
    let rows: Vec<Vec<u64>> =
        m.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').map(|f| f.parse().unwrap()).collect()).collect();
    assert!(rows.len() >= 2, "{m}");
    for r in &rows {
        assert_eq!(r.len(), 8);
        assert!(r[0] < 2 && [1, 2, 3, 8].contains(&r[1]) && r[2] == 1000, "{r:?}");
        if r[7] == 0 {
            // (sch_enq is the pass's clock, read once per pass: it may precede cli_enq slightly.)
            assert!(r[4] <= r[5] && r[3] <= r[6], "sch_enq <= sch_deq, cli_enq <= cli_deq: {r:?}");
        }
    }
    assert!(m.starts_with("# schedlab sched messages, seed 9"));
    let t = std::fs::read_to_string(d.path().join("t.txt")).unwrap();
    assert!(t.contains("seed 9") && t.contains("takes 800000 ns"), "{t}");
    let arrivals: Vec<&str> = t.lines().filter(|l| !l.starts_with('#')).collect();
    let delivered = rows.iter().filter(|r| r[7] == 0).count();
    assert!(delivered <= arrivals.len() && arrivals.len() <= rows.len(), "every delivered message arrived");
    let mut prev = 0.0;
    for a in arrivals {
        let f: Vec<f64> = a.split(' ').map(|x| x.parse().unwrap()).collect();
        assert!(f.len() == 3 && f[0] >= prev, "{a}");
        prev = f[0];
    }
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(j["seed"], 9);
}

#[test]
fn an_unreachable_link_rate_gives_the_verdict_and_exit_0() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    // 64-byte packets at 90% of 100 Gb/s: 175 Mpps, far beyond any harness.
    write(d.path(), "w.txt", "thread all\n100ms 45G 64 dist:report poisson\n");
    schedlab(d.path(), "predict")
        .args("-t 2 -f w.txt -b 100G -q 64 -i 0 -c 0 --drain 20ms --json p.json".split(' '))
        .assert()
        .success()
        .stdout(predicate::str::contains("CANNOT KEEP UP").and(predicate::str::contains("pred mean").not()));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.path().join("p.json")).unwrap()).unwrap();
    assert_eq!(v["runs"][0]["verdict"]["kept_up"], false);
    assert_eq!(v["runs"][0]["predicted"], false);
    assert!(!v["runs"][0]["verdict"]["reasons"].as_array().unwrap().is_empty());
}

#[test]
fn bad_input_is_refused_clearly() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "bad.txt", "thread all\n# fine\n1s 10M 1500 dist:1-5:90,20:x poisson\n");
    schedlab(d.path(), "predict")
        .args("-f bad.txt -b 1G".split(' '))
        .assert()
        .failure()
        .stderr(predicate::str::contains("bad.txt:3: field 4 (length distribution): part 2 '20:x': WEIGHT 'x'"));
    write(d.path(), "bad2.txt", "1s 10M 1500 4 poissn\n");
    schedlab(d.path(), "sched")
        .args("-f bad2.txt -b 1G".split(' '))
        .assert()
        .failure()
        .stderr(predicate::str::contains("bad2.txt:1: field 5"));
    write(d.path(), "ok.txt", "20ms 1M 1500 dist:report\n");
    schedlab(d.path(), "predict")
        .args("-f ok.txt -b 1G --algs fifo,bogus".split(' '))
        .assert()
        .failure()
        .stderr(predicate::str::contains("unknown -alg 'bogus'"));
    schedlab(d.path(), "predict")
        .args("-f ok.txt".split(' '))
        .assert()
        .failure()
        .stderr(predicate::str::contains("needs a link rate (-b"));
    write(d.path(), "silent.txt", "20ms 0\n");
    schedlab(d.path(), "predict")
        .args("-f silent.txt -b 1G --drain 1ms".split(' '))
        .assert()
        .failure()
        .stderr(predicate::str::contains("delivered no messages"));
    schedlab(d.path(), "sched").args(["--seed", "x"]).assert().failure().stderr(predicate::str::contains("--seed 'x'"));
}

/// `dist:NAME` in a traffic file: sched and predict draw message lengths from a named workload of
/// `schedlab workloads` (W2: 155 sizes, one packet to 2418; W3: 842 sizes), print and record the
/// table's name, reading, checksum, source and commit, and predict replays the very messages drawn
/// (the release order check holds as for any traffic). A bad name is refused naming the file, the
/// line and the field.
#[test]
fn named_workloads_in_traffic_files() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    let w2 = schedlab_workload::named("w2").unwrap();
    // W2 at 60% of 200 Mb/s over two clients; -q holds W2's longest message (2418 packets).
    write(d.path(), "w2.txt", "thread all\n150ms 60M 1500 dist:w2 poisson\n");
    schedlab(d.path(), "predict")
        .args("-t 2 -f w2.txt -b 200M -q 4096 -i 0 -c 0 --seed 3 --algs fifo,sf --drain 200ms --json p.json".split(' '))
        .assert()
        .success()
        .stdout(
            predicate::str::contains("workload w2 (step CDF, 1460 B/packet, mean ")
                .and(predicate::str::contains(w2.checksum_hex())),
        );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.path().join("p.json")).unwrap()).unwrap();
    let used = &v["workloads"][0];
    assert_eq!(used["name"], "w2");
    assert_eq!(used["reading"], "step");
    assert_eq!(used["checksum"], w2.checksum_hex().as_str());
    assert_eq!(used["commit"], w2.provenance.commit.as_str());
    assert!(used["source"].as_str().unwrap().contains("Google_SearchRPC"), "{used}");
    for r in v["runs"].as_array().unwrap() {
        let o = &r["order_check"];
        assert!(o["harness_pkts"].as_u64().unwrap() > 0, "{}: {o}", r["alg"]);
        assert!(o["first_mismatch"].is_null(), "{}: harness and simulator differ: {o}", r["alg"]);
    }

    // sched with W3 read interpolated at 1442 B per packet: the message file's lengths are W3's.
    write(d.path(), "w3.txt", "thread all\n100ms 50M 1500 dist:w3:interp:1442 poisson\n");
    schedlab(d.path(), "sched")
        .args(
            "-t 2 -f w3.txt -b 200M -q 16384 -i 0 -c 0 --no-timestamps --seed 4 --messages m.txt --json r.json -- -alg fifo"
                .split(' '),
        )
        .assert()
        .success()
        .stdout(predicate::str::contains("workload w3 (interp CDF, 1442 B/packet"));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(j["workloads"][0]["written"], "w3:interp:1442");
    assert_eq!(j["workloads"][0]["bytes_per_packet"], 1442);
    let w3 = schedlab_workload::PacketDist::named("w3:interp:1442").unwrap();
    let m = std::fs::read_to_string(d.path().join("m.txt")).unwrap();
    let lens: Vec<u32> =
        m.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').nth(1).unwrap().parse().unwrap()).collect();
    assert!(lens.len() > 100, "{} messages", lens.len());
    assert!(lens.iter().all(|l| (1..=w3.max_len()).contains(l)));

    write(d.path(), "bad.txt", "thread all\n# W9 does not exist\n1s 10M 1500 dist:w9 poisson\n");
    for cmd in ["sched", "predict"] {
        schedlab(d.path(), cmd)
            .args("-f bad.txt -b 1G".split(' '))
            .assert()
            .failure()
            .stderr(predicate::str::contains("bad.txt:3: field 4 (length distribution): unknown workload 'w9'"));
    }
}

/// `dist:w3` (842 sizes): predict's table, JSON and CSV give one row per size bucket (by the
/// compared messages' size percentiles, as sim buckets), not one per distinct length: a bounded
/// number of rows whatever the workload. Read at 64 B per packet, W3's sizes stay distinct in
/// packets, so a fifth of a second draws well over 64 lengths (151 on the development VM).
#[test]
fn many_lengths_give_a_bounded_number_of_rows() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "w3.txt", "thread all\n200ms 100M 64 dist:w3:interp:64 poisson\n");
    let out = schedlab(d.path(), "predict")
        .args("-t 2 -f w3.txt -b 400M -q 65536 -i 0 -c 0 --seed 4 --algs fifo --drain 300ms".split(' '))
        .args(["--json", "p.json", "--csv", "p.csv", "--messages", "m.txt"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let m = std::fs::read_to_string(d.path().join("m.txt")).unwrap();
    let mut lens: Vec<u32> =
        m.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').nth(1).unwrap().parse().unwrap()).collect();
    lens.sort_unstable();
    lens.dedup();
    assert!(lens.len() > 64, "the run drew only {} distinct lengths: not enough to test the buckets", lens.len());
    let most = schedlab_sim::engine::BUCKET_EDGES.len() + 1;
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.path().join("p.json")).unwrap()).unwrap();
    let rows = v["runs"][0]["rows"].as_array().unwrap();
    assert!(rows.len() <= most && rows.len() >= 3, "{} rows for {} lengths", rows.len(), lens.len());
    assert!(rows[..rows.len() - 1].iter().all(|r| r["bucket"]["high"] == r["len_pkts"]), "{rows:?}");
    assert_eq!(rows.last().unwrap()["len_pkts"], 0);
    let csv = std::fs::read_to_string(d.path().join("p.csv")).unwrap();
    assert!(csv.starts_with("alg,label,repeat_run,kept_up,predicted,len_pkts,bucket_low,"), "{csv}");
    assert_eq!(csv.lines().count(), rows.len() + 1, "{csv}");
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("one row per size bucket"), "{text}");
    let table = text.lines().filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()));
    assert!(table.count() <= most, "{text}");
}
