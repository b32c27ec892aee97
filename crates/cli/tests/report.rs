//! `schedlab report`: a page from real results of every kind, opened in headless Chromium.
//!
//! The browser is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: the
//! test writes NUL-terminated JSON commands to the browser's fd 3 and reads replies and events
//! from its fd 4). That gives, unlike `--dump-dom` / `--enable-logging`, the level of every
//! console message, uncaught exceptions and the browser's own log (failed loads, blocked
//! requests), the laid-out size of every figure and a screenshot, all from one page load.
//! Without Chromium the browser test skips visibly (`schedlab_report::skip!`: named in CI's summary).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{json, Value};

fn schedlab(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("schedlab").unwrap();
    c.current_dir(dir).timeout(Duration::from_secs(120));
    c
}

fn load(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Waits for a child we started, killing it if it outlives `limit`.
fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two emulated RDMA flows and their share analysis (as in the README).
fn rdma_share(dir: &Path) -> PathBuf {
    let start_server = |args: &[&str]| {
        let mut child = StdCommand::cargo_bin("schedlab")
            .unwrap()
            .args(["rdma", "--backend", "emulated", "--bind", "127.0.0.1", "-p", "0", "--timeout", "60"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let port: u16 = line.trim().trim_end_matches(" ...").rsplit(':').next().unwrap().parse().unwrap();
        // Drain the server's output so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        (child, port)
    };
    let (a, b) = (["-F", "-e", "-s", "65536", "-n", "300", "-O", "0"], ["-F", "-e", "-s", "4096", "-n", "3000", "-O", "0"]);
    let (mut sa, pa) = start_server(&a);
    let (mut sb, pb) = start_server(&b);
    let client = |port: u16, args: &[&str], file: &str| {
        StdCommand::cargo_bin("schedlab")
            .unwrap()
            .current_dir(dir)
            .args(["rdma", "127.0.0.1", "--backend", "emulated", "-p", &port.to_string(), "--timeout", "60", "-o", file])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut ca = client(pa, &a, "out_A.txt");
    let mut cb = client(pb, &b, "out_B.txt");
    for (c, what) in [(&mut ca, "client A"), (&mut cb, "client B"), (&mut sa, "server A"), (&mut sb, "server B")] {
        assert!(wait_bounded(c, Duration::from_secs(60), what).success(), "{what} failed");
    }
    schedlab(dir).args(["rdma", "share", "out_A.txt", "out_B.txt", "--window", "5ms", "--json", "share.json"]).assert().success();
    dir.join("share.json")
}

/// Real results of every kind, from short runs; returns the files in page order.
fn results(dir: &Path) -> Vec<PathBuf> {
    let ok = |args: &[&str]| {
        schedlab(dir).args(args).assert().success();
    };
    ok(&["sim", "-t", "50,95", "--packets", "100k", "--quiet", "--threads", "1", "--json", "sim.json"]);
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sweeps/quick.toml");
    ok(&["sweep", spec.to_str().unwrap(), "--out", "sweep.csv", "-q", "-j", "1"]);
    ok(&[
        "sched",
        "-t",
        "2",
        "-d",
        "0.3",
        "-b",
        "100M",
        "--no-timestamps",
        "--json",
        "sched.json",
        "--",
        "-flowsets",
        "1:1500:2",
        "-alg",
        "rr",
    ]);
    std::fs::write(dir.join("w.txt"), "thread all\n150ms 6M 1500 dist:report poisson\n").unwrap();
    ok(&[
        "predict",
        "-t",
        "3",
        "-f",
        "w.txt",
        "-b",
        "20M",
        "-q",
        "200",
        "-i",
        "0",
        "-c",
        "0",
        "--seed",
        "5",
        "--algs",
        "fifo,alpha:10,sf",
        "--drain",
        "100ms",
        "--json",
        "predict.json",
    ]);
    ok(&["trylock", "-n", "2", "-t", "0.05", "-F", "--json", "trylock.json"]);
    ok(&["notify", "-S", "-n", "1", "--json", "notify.json"]);
    ok(&["semtest", "-i", "200", "--interval", "100", "--json", "semtest.json"]);
    ok(&[
        "echo-bench",
        "--modes",
        "naive,splice",
        "--sizes",
        "1B,4K",
        "--rounds",
        "100",
        "--warmup",
        "10",
        "--peer",
        "none",
        "--out",
        "eb",
    ]);
    let share = rdma_share(dir);
    ["sim.json", "sweep.csv", "sched.json", "predict.json", "trylock.json", "notify.json", "semtest.json", "eb"]
        .iter()
        .map(|f| dir.join(f))
        .chain([share])
        .collect()
}

// ----- a minimal DevTools-protocol client over --remote-debugging-pipe -----

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser"] {
        for d in std::env::split_paths(&path) {
            let p = d.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A pipe whose ends are above the standard and the browser's 3 / 4, close-on-exec.
fn pipe_high() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let high = |fd: RawFd| {
        // SAFETY: fd is a descriptor we own; F_DUPFD_CLOEXEC returns a new one >= 10.
        let h = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        assert!(h >= 10);
        // SAFETY: closing the original we own and no longer use.
        unsafe { libc::close(fd) };
        h
    };
    (high(fds[0]), high(fds[1]))
}

struct Browser {
    child: Child,
    to: File,
    from: mpsc::Receiver<Value>,
    next_id: u64,
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(exe: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = pipe_high(); // we write commands, the browser reads fd 3
        let (ev_r, ev_w) = pipe_high(); // the browser writes fd 4, we read
        let mut c = StdCommand::new(exe);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--remote-debugging-pipe",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--mute-audio",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (dup2) on descriptors that
        // exist in the child; dup2 clears close-on-exec on the new 3 and 4.
        unsafe {
            c.pre_exec(move || {
                if libc::dup2(cmd_r, 3) < 0 || libc::dup2(ev_w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().expect("start chromium");
        // SAFETY: the child has its copies; close ours of the browser's ends.
        unsafe {
            libc::close(cmd_r);
            libc::close(ev_w);
        }
        // SAFETY: we own these descriptors and hand each to exactly one File.
        let (to, mut from_f) = unsafe { (File::from_raw_fd(cmd_w), File::from_raw_fd(ev_r)) };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                let n = match from_f.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(i) = buf.iter().position(|&b| b == 0) {
                    let msg: Vec<u8> = buf.drain(..=i).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Browser { child, to, from: rx, next_id: 0, events: Vec::new(), _profile: profile }
    }

    /// Sends a command (to the page session when given) and waits for its reply; events that
    /// arrive meanwhile are kept.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.from.recv_timeout(left).unwrap_or_else(|_| panic!("no reply to {method} within 60 s"));
            if v["id"].as_u64() == Some(id) {
                assert!(v.get("error").is_none(), "{method} failed: {}", v["error"]);
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    fn wait_event(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.from.recv_timeout(left).unwrap_or_else(|_| panic!("no {method} within 60 s"));
            let done = v["method"] == method;
            self.events.push(v);
            if done {
                return;
            }
        }
    }

    /// Console errors, uncaught exceptions and the browser's error log entries seen so far.
    fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| match e["method"].as_str() {
                Some("Runtime.consoleAPICalled") => matches!(e["params"]["type"].as_str(), Some("error" | "assert")),
                Some("Runtime.exceptionThrown") => true,
                Some("Log.entryAdded") => e["params"]["entry"]["level"] == "error",
                _ => false,
            })
            .map(|e| e["params"].to_string())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=' && !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let v: Vec<u32> = chunk.iter().map(|&c| u32::from(val(c))).collect();
        let n = v.iter().enumerate().fold(0u32, |acc, (i, x)| acc | (x << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// Luminance statistics of a PNG: (pixels, fraction not near-white, variance).
fn png_stats(bytes: &[u8]) -> (usize, f64, f64) {
    let mut dec = png::Decoder::new(bytes);
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let px: Vec<f64> =
        buf[..info.buffer_size()]
            .chunks(ch)
            .map(|p| {
                if ch >= 3 {
                    0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])
                } else {
                    f64::from(p[0])
                }
            })
            .collect();
    let n = px.len();
    let mean = px.iter().sum::<f64>() / n as f64;
    let var = px.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
    let dark = px.iter().filter(|&&x| x < 200.0).count() as f64 / n as f64;
    (n, dark, var)
}

const PROBE: &str = r#"JSON.stringify({
  figures: Array.from(document.querySelectorAll('figure.fig')).map(f => {
    const svg = f.querySelector('svg');
    const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const lines = svg ? Array.from(svg.querySelectorAll('polyline.series')).filter(p => Number(p.getAttribute('data-points')) > 0).length : 0;
    const marks = svg ? svg.querySelectorAll('rect.bar, g.candle').length : 0;
    return {id: f.id, w: r.width, h: r.height, marks: lines + marks, caption: (f.querySelector('figcaption') || {}).textContent || ''};
  }),
  svgs: document.querySelectorAll('svg').length,
  scripts: document.querySelectorAll('script').length,
  sections: Array.from(document.querySelectorAll('section')).map(s => s.dataset.kind),
  cells: Array.from(document.querySelectorAll('td, dd')).map(c => c.textContent),
  text: document.body.innerText
})"#;

#[test]
fn page_of_every_kind_renders_in_chromium() {
    let t0 = Instant::now();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let files = results(dir);
    let page = dir.join("report.html");
    schedlab(dir)
        .arg("report")
        .args(&files)
        .args(["-o", page.to_str().unwrap(), "--title", "schedlab test page"])
        .assert()
        .success()
        .stderr(predicate::str::contains("9 results"));
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no script, nothing fetched (the only URL is the SVG namespace).
    assert!(!html.contains("<script"), "no scripts");
    let urls = html.matches("http://").count() + html.matches("https://").count();
    assert_eq!(urls, html.matches("http://www.w3.org/2000/svg").count(), "no network references");
    assert!(!html.contains("@import") && !html.contains("url("), "no fetched fonts or images");
    let mb = html.len() as f64 / 1e6;
    eprintln!("page: {} bytes, results generated in {:.1} s", html.len(), t0.elapsed().as_secs_f64());
    assert!(mb < 5.0, "page of {mb} MB");

    // What the page must show, from the results themselves.
    let sim = load(&dir.join("sim.json"));
    let sched = load(&dir.join("sched.json"));
    let predict = load(&dir.join("predict.json"));
    let share = load(&dir.join("share.json"));
    let sweep_id =
        std::fs::read_to_string(dir.join("sweep.csv")).unwrap().lines().nth(1).unwrap().split(',').next().unwrap().to_string();
    let mut cells_expected: Vec<String> = vec![
        sweep_id,
        sim["machine"]["hostname"].as_str().unwrap().to_string(),
        sched["total_pkts"].to_string(),
        share["flows"][0]["completed_at_cut"].to_string(),
        "naive".into(),
        "splice".into(),
    ];
    cells_expected
        .extend(sim["runs"][0]["strategies"].as_array().unwrap().iter().map(|s| s["label"].as_str().unwrap().to_string()));
    cells_expected.extend(predict["runs"].as_array().unwrap().iter().map(|r| format!("{} of {}", r["delivered"], r["messages"])));
    let sched_cmd = sched["command"].as_array().unwrap()[1..].iter().map(|w| w.as_str().unwrap()).collect::<Vec<_>>().join(" ");
    cells_expected.push(format!("schedlab {sched_cmd}"));

    let Some(exe) = chromium() else {
        schedlab_report::skip!("chromium not installed (apt-get install chromium); the page was checked without a browser");
    };
    let mut b = Browser::start(&exe);
    let target = b.call(None, "Target.createTarget", json!({"url": "about:blank"}));
    let tid = target["targetId"].as_str().unwrap().to_string();
    let att = b.call(None, "Target.attachToTarget", json!({"targetId": tid, "flatten": true}));
    let s = att["sessionId"].as_str().unwrap().to_string();
    let s = Some(s.as_str());
    for m in ["Runtime.enable", "Log.enable", "Page.enable"] {
        b.call(s, m, json!({}));
    }
    b.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1100, "height": 1400, "deviceScaleFactor": 1, "mobile": false}),
    );
    b.call(s, "Page.navigate", json!({"url": format!("file://{}", page.display())}));
    b.wait_event("Page.loadEventFired");
    let probe = b.call(s, "Runtime.evaluate", json!({"expression": PROBE, "returnByValue": true}));
    let probe: Value = serde_json::from_str(probe["result"]["value"].as_str().expect("probe result")).unwrap();
    let shot = b.call(s, "Page.captureScreenshot", json!({"format": "png"}));
    let png_bytes = base64_decode(shot["data"].as_str().unwrap());
    // Late messages (a failed load is logged after the load event) get a moment to arrive.
    std::thread::sleep(Duration::from_millis(300));
    while let Ok(v) = b.from.try_recv() {
        b.events.push(v);
    }
    let errors = b.errors();
    let _ = b.call(None, "Browser.close", json!({}));
    drop(b);

    assert!(errors.is_empty(), "console errors: {errors:#?}");
    assert_eq!(probe["scripts"], 0);
    let kinds: Vec<&str> = probe["sections"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(kinds, ["sim", "sweep", "sched", "predict", "trylock", "notify", "semtest", "echo-bench", "rdma share"]);
    let figures = probe["figures"].as_array().unwrap();
    assert_eq!(probe["svgs"].as_u64().unwrap() as usize, figures.len(), "every svg is a figure");
    for f in figures {
        assert!(f["w"].as_f64().unwrap() > 200.0 && f["h"].as_f64().unwrap() > 150.0, "figure laid out small or empty: {f}");
        assert!(f["marks"].as_u64().unwrap() > 0, "figure without data marks: {f}");
    }
    let captions: Vec<&str> = figures.iter().map(|f| f["caption"].as_str().unwrap()).collect();
    let has = |needle: &str| captions.iter().filter(|c| c.contains(needle)).count();
    // sim (50 and 95%) and the sweep (50 and 95 of ten levels): Figures 1-4 each.
    for fig in ["(report Figure 1)", "(report Figure 2)", "(report Figure 3)", "(report Figure 4)"] {
        assert_eq!(has(fig), 2, "{fig}: {captions:#?}");
    }
    assert_eq!(has("measured on the harness and predicted"), 1);
    assert_eq!(has("Delay CDF per client"), 1);
    assert_eq!(has("share of the transmitted bits"), 1);
    assert_eq!(has("candlesticks per mode"), 2, "one per echo size");
    assert_eq!(has("round-trip CDF"), 2);
    assert_eq!(has("Throughput of each flow over time"), 1);
    assert!(has("recorded percentiles") >= 3, "prims distributions");
    let cells: HashMap<&str, ()> = probe["cells"].as_array().unwrap().iter().map(|c| (c.as_str().unwrap(), ())).collect();
    for want in &cells_expected {
        assert!(cells.contains_key(want.as_str()), "cell {want:?} missing from the rendered page");
    }
    let text = probe["text"].as_str().unwrap();
    assert!(text.contains("Machine and placement granted") && text.contains("SCHED_OTHER"));

    let (n, dark, var) = png_stats(&png_bytes);
    assert_eq!(n, 1100 * 1400, "screenshot size");
    assert!(dark > 0.01 && var > 100.0, "blank screenshot: {:.3} dark, variance {var:.0}", dark);
    if let Some(out) = std::env::var_os("SCHEDLAB_REPORT_SCREENSHOT") {
        std::fs::write(&out, &png_bytes).unwrap();
        std::fs::copy(&page, Path::new(&out).with_extension("html")).unwrap();
    }
    eprintln!(
        "browser test: {} figures, {} bytes of page, {:.1} s in all",
        figures.len(),
        html.len(),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn bad_inputs_name_the_file_and_leave_no_page() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("other.json"), r#"{"hello": "world"}"#).unwrap();
    std::fs::write(dir.join("broken.json"), r#"{"command": "sim", "runs": ["#).unwrap();
    std::fs::write(dir.join("table.csv"), "a,b\n1,2\n").unwrap();
    std::fs::write(dir.join("t.parquet"), b"PAR1\x00\x00").unwrap();
    // A real, recognised result next to the bad one: still no page.
    schedlab(dir).args(["sim", "-t", "50", "--packets", "20k", "--quiet", "--json", "sim.json"]).assert().success();
    for (file, says) in [
        ("missing.json", "cannot read missing.json"),
        ("other.json", "other.json: unsupported result"),
        ("broken.json", "broken.json: not valid JSON"),
        ("table.csv", "table.csv: unsupported result"),
        ("t.parquet", "schedlab sweep merge"),
    ] {
        schedlab(dir)
            .args(["report", "sim.json", file, "-o", "out.html"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains(says));
        let left: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("out.html"))
            .collect();
        assert!(left.is_empty(), "{file}: left {left:?}");
    }
    // Usage errors exit 2.
    schedlab(dir).args(["report", "sim.json"]).assert().code(2).stderr(predicate::str::contains("-o FILE"));
    schedlab(dir).args(["report", "-o", "out.html"]).assert().code(2);
    // An unwritable destination: error, nothing left.
    schedlab(dir)
        .args(["report", "sim.json", "-o", "no/such/dir/out.html"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot write"));
    // With --allow-unsupported the unknown result is a visible section; the page is written.
    schedlab(dir).args(["report", "sim.json", "other.json", "-o", "out.html", "--allow-unsupported"]).assert().success();
    let html = std::fs::read_to_string(dir.join("out.html")).unwrap();
    assert!(html.contains("class=\"result unsupported\"") && html.contains("unsupported result: JSON with fields [hello]"));
    assert!(html.contains("(report Figure 1)"));
}
