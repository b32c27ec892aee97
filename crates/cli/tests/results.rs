//! Every typed result kind, written by the real command (short runs) and read back through the
//! page's reader (`schedlab_report::results::read`, and `schedlab report` rendering the section)
//! and checked against its committed JSON Schema's tag. The Python side of the round trip is
//! python/tests/test_readers.py (jsonschema against the same committed files).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use schedlab_report::results::echo_bench::EchoBench;
use schedlab_report::results::predict::Predict;
use schedlab_report::results::rdma::Rdma;
use schedlab_report::results::rdma_share::RdmaShare;
use schedlab_report::results::sweep_row::{SweepRow, SweepRowSchema};
use schedlab_report::results::{kind_named, read, Kind, ResultError, KINDS};
use serde_json::Value;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The committed schema's tag for a kind (schemas/FILE).
fn committed_tag<K: Kind>() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(root.join("schemas").join(K::FILE)).unwrap()).unwrap();
    let r = s.pointer("/properties/schema/$ref").and_then(Value::as_str).unwrap().rsplit('/').next().unwrap().to_string();
    s.pointer(&format!("/$defs/{r}/const")).and_then(Value::as_str).unwrap().to_string()
}

/// `schedlab report FILE` renders the kind's section from the typed result, without the
/// "cannot be read" warning.
fn page_reads(file: &Path, title: &str) {
    let dir = file.parent().unwrap();
    let html = dir.join("page.html");
    schedlab().arg("report").arg(file).arg("-o").arg(&html).timeout(Duration::from_secs(60)).assert().success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(title), "the page has no {title:?} section");
    assert!(!page.contains("cannot be read as its kind"), "the page could not read {}", file.display());
}

const SIM_TITLE: &str = "Simulation (alpha scheduling report)";

/// One way to write a result kind: the kind's name, the page section's title, and a function
/// that runs the real command in a folder and returns the file it wrote.
struct Producer {
    kind: &'static str,
    title: &'static str,
    write: fn(&Path) -> PathBuf,
    /// What this producer's result must hold beyond its type (`|_| {}`: nothing more).
    check: fn(&Value),
}

/// Two emulated flows of three 64 KiB messages, A every 10 µs and B every 15 µs: A finishes first
/// at 30 µs, when it has moved 3 × 65536 × 8 bits, 52.4288 Gbit/s.
fn rdma_share_check(v: &Value) {
    let r: RdmaShare = read(v).unwrap();
    assert_eq!([r.flows[0].name.as_str(), r.flows[1].name.as_str()], ["A", "B"]);
    assert!((r.flows[0].gbps - 52.4288).abs() < 1e-9, "{}", r.flows[0].gbps);
    // Another version is said plainly, and a missing field by name.
    let mut v2 = v.clone();
    v2["schema"] = "schedlab.rdma-share/2".into();
    assert!(matches!(read::<RdmaShare>(&v2), Err(ResultError::OtherVersion { version: 1, .. })));
    let mut v3 = v.clone();
    v3.as_object_mut().unwrap().remove("windows");
    let e = read::<RdmaShare>(&v3).unwrap_err();
    assert!(e.to_string().contains("windows"), "{e}");
}

fn echo_bench_check(v: &Value) {
    let r: EchoBench = read(v).unwrap();
    assert_eq!(r.rows.len(), 1);
    assert_eq!((r.rows[0].mode.as_str(), r.rows[0].size_bytes, r.rows[0].rtt_us.count), ("naive", 1, 20));
}

fn predict_check(v: &Value) {
    let r: Predict = read(v).unwrap();
    assert_eq!(r.seed, 3);
    assert_eq!(r.runs.iter().map(|x| x.alg.as_str()).collect::<Vec<_>>(), ["fifo", "sf"]);
    for run in &r.runs {
        assert_eq!(run.rows.last().map(|x| x.len_pkts), Some(0), "{}: the last row is all lengths", run.alg);
        assert!(run.order_check.is_some_and(|o| o.harness_pkts > 0), "{}", run.alg);
    }
}

/// Runs `schedlab ARGS --json FILE` in `dir` and returns FILE.
fn json_of(dir: &Path, file: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(file);
    schedlab().current_dir(dir).args(args).arg("--json").arg(&out).timeout(Duration::from_secs(120)).assert().success();
    out
}

/// An echo server of the CLI on a free port, killed when dropped.
struct EchoServer(Child, u16);

impl EchoServer {
    fn start() -> EchoServer {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("schedlab"))
            .args(["echo", "--mode", "naive", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The first line says where it listens: the server is ready once it is printed.
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let port = first
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split(';').next())
            .and_then(|a| a.trim().rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        EchoServer(child, port)
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rdma_share_file(dir: &Path) -> PathBuf {
    let head = "# schedlab-rdma backend=EMULATED op=WRITE bytes=65536 count=3 poll=event\nTask_cnt\tTime(us)\t\tLatency\n";
    std::fs::write(dir.join("a.txt"), format!("{head}1\t\t10.00\t\t9.50\n2\t\t20.00\t\t9.60\n3\t\t30.00\t\t9.70\n")).unwrap();
    std::fs::write(dir.join("b.txt"), format!("{head}1\t\t15.00\t\t14.50\n2\t\t30.00\t\t14.60\n3\t\t45.00\t\t14.70\n")).unwrap();
    json_of(dir, "share.json", &["rdma", "share", "a.txt", "b.txt"])
}

fn echo_bench_file(dir: &Path) -> PathBuf {
    let out = dir.join("bench");
    schedlab()
        .args(["echo-bench", "--modes", "naive", "--sizes", "1B", "--rounds", "20", "--warmup", "2", "--peer", "none"])
        .arg("--no-busy-poll")
        .arg("--out")
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    out.join("results.json")
}

fn burst_file(dir: &Path) -> PathBuf {
    let srv = EchoServer::start();
    let addr = format!("127.0.0.1:{}", srv.1);
    json_of(dir, "burst.json", &["burst", &addr, "4K", "10", "--settle", "0", "--warmup", "1", "-q"])
}

fn burst_targets_file(dir: &Path) -> PathBuf {
    let (a, b) = (EchoServer::start(), EchoServer::start());
    let (aa, ba) = (format!("127.0.0.1:{}", a.1), format!("127.0.0.1:{}", b.1));
    json_of(dir, "burst2.json", &["burst", &aa, "--target", &ba, "4K", "5", "--settle", "0", "--warmup", "1", "-q"])
}

fn predict_file(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("w.txt"), "thread all\n100ms 6M 1500 dist:report poisson\n").unwrap();
    let a = ["predict", "-t", "2", "-f", "w.txt", "-b", "20M", "-q", "200", "-i", "0", "-c", "0", "--seed", "3"];
    json_of(dir, "p.json", &[&a[..], &["--algs", "fifo,sf", "--drain", "50ms"]].concat())
}

/// One emulated `schedlab rdma` flow on a free port: the server's and the client's `--json`
/// files. The server says where it listens on its first line; its file is complete once it exits.
fn rdma_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let (srv_json, cli_json) = (dir.join("rdma-server.json"), dir.join("rdma-client.json"));
    let common = ["--backend", "emulated", "-n", "20", "-s", "4096", "-e"];
    let mut server = std::process::Command::new(assert_cmd::cargo::cargo_bin("schedlab"))
        .args(["rdma", "-p", "0", "--bind", "127.0.0.1"])
        .args(common)
        .arg("--json")
        .arg(&srv_json)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let port = first
        .split("connect on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    schedlab()
        .current_dir(dir)
        .args(["rdma", "127.0.0.1", "-p", &port.to_string(), "-o", "flow.txt"])
        .args(common)
        .arg("--json")
        .arg(&cli_json)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    // Drain the server's output so it never blocks on a full pipe, then wait for it to exit.
    std::io::copy(&mut out, &mut std::io::sink()).unwrap();
    assert!(server.wait().unwrap().success(), "the rdma server failed");
    (srv_json, cli_json)
}

/// The rdma JSON spells the operation and the polling mode as the `-o` sidecar (and the seed) do.
#[test]
fn rdma_json_spells_op_and_poll_as_the_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = rdma_pair(dir.path());
    let side = load(&dir.path().join("flow.txt.json"));
    for file in [&server, &client] {
        let v = load(file);
        assert_eq!((&v["op"], &v["poll"]), (&Value::from("WRITE"), &Value::from("event")), "{}", file.display());
        assert_eq!((&v["op"], &v["poll"]), (&side["op"], &side["poll"]), "{}: the sidecar says {side}", file.display());
    }
    let r: Rdma = read(&load(&client)).expect("the typed reader reads the client's result");
    assert_eq!((r.role.as_str(), r.completed, r.bytes), ("client", 20, 4096));
    assert!(r.bw_avg_gbps > 0.0 && r.lat_us.count == 20, "{} Gbit/s, {} latencies", r.bw_avg_gbps, r.lat_us.count);
}

/// The first row of a one-cell sweep's `.jsonl` table, as a file of its own.
fn sweep_row_file(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("s.toml"), "traffic = [50]\nstrategies = [\"FIFO\"]\npackets = \"10k\"\n").unwrap();
    schedlab()
        .current_dir(dir)
        .args(["sweep", "s.toml", "--out", "t.jsonl", "-q", "-j", "1"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let text = std::fs::read_to_string(dir.join("t.jsonl")).unwrap();
    let out = dir.join("row.json");
    std::fs::write(&out, text.lines().next().expect("the sweep wrote a row")).unwrap();
    out
}

/// Every way each kind is written here; a kind of `results::KINDS` missing from this list fails
/// `every_kind_has_a_producer`.
fn producers() -> Vec<Producer> {
    vec![
        Producer { kind: "schedlab.rdma-share", title: "RDMA two-flow share", write: rdma_share_file, check: rdma_share_check },
        Producer {
            kind: "schedlab.echo-bench",
            title: "TCP echo latency matrix",
            write: echo_bench_file,
            check: echo_bench_check,
        },
        Producer {
            kind: "schedlab.sched",
            title: "Scheduler harness",
            write: |d| json_of(d, "sched.json", &["sched", "-t", "2", "-d", "0.2", "-p", "ts-"]),
            check: |_| {},
        },
        Producer {
            kind: "schedlab.sched",
            title: "Scheduler harness",
            write: |d| json_of(d, "sched-d.json", &["sched", "-t", "2", "-d", "0.2", "-b", "20M", "-D", "-p", "tsd-"]),
            check: |_| {},
        },
        Producer {
            kind: "schedlab.sched-repeat",
            title: "",
            write: |d| json_of(d, "sched-r.json", &["sched", "-t", "2", "-d", "0.1", "--repeat", "2", "-p", "tsr-"]),
            check: |v| {
                assert_eq!(v["runs"].as_array().map(Vec::len), Some(2), "{v}");
                assert_eq!(v["runs"][0]["schema"], "schedlab.sched/1");
            },
        },
        Producer {
            kind: "schedlab.trylock",
            title: "trylock: ",
            write: |d| json_of(d, "trylock.json", &["trylock", "-n", "2", "-F", "-t", "0.02"]),
            check: |_| {},
        },
        Producer {
            kind: "schedlab.trylock",
            title: "trylock: ",
            write: |d| json_of(d, "trylock-a.json", &["trylock", "-n", "2", "-t", "0.02"]),
            check: |_| {},
        },
        Producer {
            kind: "schedlab.notify",
            title: "notify: ",
            write: |d| json_of(d, "notify.json", &["notify", "-S", "-n", "1", "--gap-us", "5"]),
            check: |_| {},
        },
        Producer {
            kind: "schedlab.notify",
            title: "notify: ",
            write: |d| json_of(d, "notify-a.json", &["notify", "-n", "5"]),
            check: |_| {},
        },
        Producer {
            kind: "schedlab.semtest",
            title: "semtest: ",
            write: |d| json_of(d, "semtest.json", &["semtest", "-i", "200", "--interval", "0"]),
            check: |_| {},
        },
        Producer { kind: "schedlab.burst", title: "TCP echo bursts", write: burst_file, check: |_| {} },
        Producer { kind: "schedlab.burst", title: "TCP echo bursts", write: burst_targets_file, check: |_| {} },
        Producer {
            kind: "schedlab.predict",
            title: "Measured vs predicted: fifo, sf",
            write: predict_file,
            check: predict_check,
        },
        Producer {
            kind: "schedlab.sim",
            title: SIM_TITLE,
            write: |d| json_of(d, "sim.json", &["sim", "-t", "50,80", "--packets", "20k", "-a", "RR',FIFO,10,SF", "--quiet"]),
            check: |_| {},
        },
        Producer {
            kind: "schedlab.sim",
            title: SIM_TITLE,
            write: |d| {
                let a = ["sim", "-t", "60", "--packets", "20k", "-a", "FIFO,SF", "--replications", "2", "--compare", "SF"];
                json_of(d, "sim-reps.json", &[&a[..], &["--warmup", "auto", "--classic", "--quiet"]].concat())
            },
            check: |_| {},
        },
        Producer {
            kind: "schedlab.sim",
            title: SIM_TITLE,
            write: |d| {
                json_of(
                    d,
                    "sim-w4.json",
                    &["sim", "-t", "60", "--packets", "20k", "--workload", "w4", "-a", "FIFO,SF", "--quiet"],
                )
            },
            check: |_| {},
        },
        Producer {
            kind: "schedlab.sim",
            title: SIM_TITLE,
            write: |d| {
                let a = ["sim", "-t", "70", "--packets", "20k", "--closed", "4", "-a", "prio,track:1:100,drr", "--quiet"];
                json_of(d, "sim-closed.json", &[&a[..], &["--msg-alpha", "1:50,100:50", "--in-order"]].concat())
            },
            check: |_| {},
        },
        // One end of an rdma flow: the page shows two flows' share (rdma share), not one end.
        Producer { kind: "schedlab.rdma", title: "", write: |d| rdma_pair(d).0, check: |_| {} },
        Producer { kind: "schedlab.rdma", title: "", write: |d| rdma_pair(d).1, check: |_| {} },
        // A sweep row is one line of a .jsonl table; the page reads sweep tables, not single rows.
        Producer { kind: "schedlab.sweep-row", title: "", write: sweep_row_file, check: |_| {} },
        // A listing of the named tables, not a run: the page has no section for it.
        Producer {
            kind: "schedlab.workloads",
            title: "",
            write: |d| json_of(d, "workloads.json", &["workloads"]),
            check: |v| {
                let w: schedlab_report::results::workloads::Workloads = read(v).unwrap();
                assert_eq!(w.workloads.len(), 8, "{v}");
                assert_eq!((w.workloads[7].name.as_str(), w.workloads[7].stated_mean_size), ("w1-sampled", Some(187.77)));
            },
        },
    ]
}

#[test]
fn every_kind_has_a_producer() {
    let ps = producers();
    for k in KINDS {
        assert!(ps.iter().any(|p| p.kind == k.name), "{}: no producer in crates/cli/tests/results.rs", k.name);
    }
    for p in &ps {
        assert!(kind_named(p.kind).is_some(), "{}: not in results::KINDS", p.kind);
    }
}

/// A required field of the kind's committed schema, other than `schema`.
fn a_required_field(file: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(root.join("schemas").join(file)).unwrap()).unwrap();
    s["required"].as_array().unwrap().iter().filter_map(Value::as_str).find(|f| *f != "schema").unwrap().to_string()
}

/// Every kind, written by its command, reads back as its type unchanged (the typed reader keeps
/// every field), carries the tag of its committed schema, renders on the page without the
/// "cannot be read" warning, and a copy without a required field is refused by name.
#[test]
fn every_kind_round_trips_through_the_typed_reader_and_the_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for p in producers() {
        let dir = tempfile::tempdir().unwrap();
        let file = (p.write)(dir.path());
        let k = kind_named(p.kind).unwrap();
        let v = load(&file);
        assert_eq!(v["schema"], k.tag(), "{}", file.display());
        let committed: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("schemas").join(k.file)).unwrap()).unwrap();
        assert_eq!(committed, serde_json::from_str::<Value>(&(k.schema)()).unwrap(), "{}: committed schema is stale", k.file);
        let again = (k.reread)(&v).unwrap_or_else(|e| panic!("{}: the typed reader refuses what the command wrote: {e}", p.kind));
        assert_eq!(again, v, "{}: reading and writing again changes the result", p.kind);
        (p.check)(&v);
        if !p.title.is_empty() {
            page_reads(&file, p.title);
        }

        let field = a_required_field(k.file);
        let mut broken = v.clone();
        broken.as_object_mut().unwrap().remove(&field);
        let e = (k.reread)(&broken).expect_err("a result without a required field reads");
        assert!(e.to_string().contains(&field), "{}: {e} does not name {field}", p.kind);
        for other in KINDS.iter().filter(|o| o.name != k.name) {
            assert!(matches!((other.reread)(&v), Err(ResultError::OtherKind { .. })), "{} reads as {}", p.kind, other.name);
        }
    }
}

#[test]
fn sweep_row_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    // The report's mix and a named workload: the workload columns empty (null) and filled.
    let spec = "traffic = [50]\nstrategies = [\"FIFO\", 10]\npackets = \"10k\"\nlengths = [\"report\", \"w3\"]\n";
    std::fs::write(dir.path().join("s.toml"), spec).unwrap();
    schedlab()
        .current_dir(dir.path())
        .args(["sweep", "s.toml", "--out", "t.jsonl", "-q", "-j", "1"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    // `sweep merge` reads JSON-lines parts back through the typed reader and writes the CSV table.
    schedlab()
        .current_dir(dir.path())
        .args(["sweep", "merge", "t.jsonl", "--out", "t.csv"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    assert_eq!(committed_tag::<SweepRow>(), SweepRowSchema::TAG);
    let text = std::fs::read_to_string(dir.path().join("t.jsonl")).unwrap();
    let rows: Vec<SweepRow> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["schema"], SweepRowSchema::TAG);
            let r: SweepRow = read(&v).expect("the typed reader reads what sweep wrote");
            assert_eq!(serde_json::to_value(&r).unwrap(), v, "reading and writing again changes nothing");
            r
        })
        .collect();
    // The same rows as the CSV table, column for column.
    let csv = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap().split(',').collect::<Vec<_>>(), SweepRow::COLUMNS.to_vec());
    let csv_rows: Vec<&str> = lines.collect();
    assert_eq!(csv_rows.len(), rows.len());
    assert!(rows.iter().any(|r| r.strategy == "FIFO" && r.len_pkts == 0 && r.mean_lat_tu > 0.0));
    assert!(rows.iter().any(|r| r.lengths == "report" && r.workload_bytes_per_pkt.is_none() && r.workload_checksum.is_empty()));
    assert!(rows.iter().any(|r| r.lengths == "w3" && r.workload_bytes_per_pkt == Some(1460) && !r.workload_checksum.is_empty()));
    for (r, line) in rows.iter().zip(&csv_rows) {
        let cells: Vec<&str> = line.split(',').collect();
        let v = serde_json::to_value(r).unwrap();
        for (name, cell) in SweepRow::COLUMNS.iter().zip(&cells) {
            let j = &v[*name];
            let same = match j {
                Value::String(s) => s == cell,
                // No bytes per packet is an empty field; a NaN float is written as NaN.
                Value::Null if *name == "workload_bytes_per_pkt" => cell.is_empty(),
                Value::Null => cell.parse::<f64>().is_ok_and(|x| !x.is_finite()),
                Value::Number(n) => n.as_f64() == cell.parse::<f64>().ok(),
                Value::Bool(b) => b.to_string() == *cell,
                _ => false,
            };
            assert!(same, "column {name}: JSON {j} vs CSV {cell}");
        }
    }
}
