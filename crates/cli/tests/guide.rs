//! The guide's examples cannot rot: every ```` ```sh test ```` block of README.md and
//! docs/guide/*.md runs here, as a bash script (`-e -o pipefail`), with `target/release/schedlab`'s
//! directory first on PATH.
//!
//! A block runs "from the repository root" without writing into it: its working directory is a
//! fresh temporary directory holding a symbolic link to every top-level entry of the repository,
//! so `sweeps/quick.toml` or `scripts/...` resolve as in the repository while the files the
//! example writes (`sim.json`, `report.html`, ...) land in the temporary directory. Each block is
//! bounded by [`BLOCK_TIMEOUT`] (the blocks are chosen to take under 5 s; the bound only stops a
//! hung example), and whatever it started in the background is killed with its process group
//! when it ends. A block that exits non-zero fails the test with its file and line, its exit
//! status and the tail of its output. Plain ```` ```sh ```` blocks are shown only.
//!
//! Every guide must have at least one runnable block, except the ones in [`NOT_RUNNABLE`], each
//! with the reason it cannot run on an ordinary machine in a few seconds.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long one block may run before it is killed and reported as hung.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(120);

/// Guides (file names under docs/guide/) without a runnable example, and why.
const NOT_RUNNABLE: &[(&str, &str)] = &[
    ("index.md", "the table of contents: it links the guides and runs nothing"),
    (
        "python.md",
        "needs the Python package built by maturin into a virtualenv (minutes, and pip needs the network); .ci/python.sh runs its install and test commands",
    ),
    (
        "testing.md",
        "its examples run the test suite itself (minutes, or an hour for scripts/suite-runs.sh), the paper check (about two minutes on one core) or CI",
    ),
    (
        "qdisc.md",
        "runs inside the QEMU guest (needs QEMU and a Debian guest kernel; a boot takes longer than a few seconds)",
    ),
];

/// One fenced code block of a Markdown file.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    /// The Markdown file, relative to the repository root.
    file: String,
    /// 1-based line of the opening fence.
    line: usize,
    /// The info string after the backticks (`sh test`, `sh`, `toml`, ...).
    info: String,
    /// The lines between the fences.
    body: String,
}

impl Block {
    /// Marked to be run: the info string is exactly the words `sh test`.
    fn runnable(&self) -> bool {
        self.info.split_whitespace().collect::<Vec<_>>() == ["sh", "test"]
    }
}

/// The fenced blocks of `text` (fences of three or more backticks, possibly indented; a block
/// closes at the first line that is only a fence at least as long as its opening one).
fn blocks(file: &str, text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, String, Vec<&str>)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match &mut open {
            None if ticks >= 3 => open = Some((i + 1, ticks, line[ticks..].trim().to_string(), Vec::new())),
            None => {}
            Some((start, n, info, body)) => {
                if ticks >= *n && line[ticks..].trim().is_empty() {
                    out.push(Block { file: file.to_string(), line: *start, info: info.clone(), body: body.join("\n") });
                    open = None;
                } else {
                    body.push(raw);
                }
            }
        }
    }
    match open {
        Some((start, ..)) => Err(format!("{file}:{start}: a fenced block is never closed")),
        None => Ok(out),
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// The Markdown files whose blocks are run: README.md and docs/guide/*.md, sorted.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide"))
        .expect("docs/guide exists")
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guides.sort();
    let mut all = vec![root.join("README.md")];
    all.extend(guides);
    all
}

/// A temporary working directory that looks like the repository root: a link to every top-level
/// entry (but `.git`).
fn workdir(root: &Path) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("schedlab-guide-").tempdir().expect("a temporary directory");
    for entry in std::fs::read_dir(root).expect("the repository root is readable") {
        let entry = entry.expect("a readable directory entry");
        if entry.file_name() == ".git" {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), dir.path().join(entry.file_name())).expect("a symbolic link");
    }
    dir
}

/// What became of one block's run.
struct Outcome {
    /// `None` when the block hit [`BLOCK_TIMEOUT`] and was killed.
    status: Option<ExitStatus>,
    elapsed: Duration,
    output: String,
}

/// Kills every process of the group led by `pid` (the block's shell and whatever it started).
fn kill_group(pid: u32) {
    let pgid = libc::pid_t::try_from(pid).expect("a pid fits pid_t");
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid names the
    // process group the block's shell leads (it was spawned with process_group(0)). ESRCH (nothing
    // left) is the normal case and is ignored.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Runs one block's body as a bash script in a repository-like temporary directory.
fn run_block(root: &Path, bin_dir: &Path, block: &Block, timeout: Duration) -> Outcome {
    let dir = workdir(root);
    let script = dir.path().join(".guide-block.sh");
    std::fs::write(&script, format!("{}\n", block.body)).expect("the script is written");
    let log_path = dir.path().join(".guide-block.log");
    let log = std::fs::File::create(&log_path).expect("the log file");
    let path = match std::env::var_os("PATH") {
        Some(p) => {
            let mut dirs = vec![bin_dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&p));
            std::env::join_paths(dirs).expect("PATH entries without ':'")
        }
        None => bin_dir.as_os_str().to_owned(),
    };
    let started = Instant::now();
    let mut child = Command::new("bash")
        .args(["-e", "-o", "pipefail"])
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("a second handle on the log"))
        .stderr(log)
        .process_group(0)
        .spawn()
        .expect("bash runs");
    // A bound on a hung example, not a guess at how long it takes: poll the child until it exits.
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for the block") {
            break Some(s);
        }
        if started.elapsed() > timeout {
            kill_group(child.id());
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    // Background servers the block started and did not stop die with its group.
    kill_group(child.id());
    let output = String::from_utf8_lossy(&std::fs::read(&log_path).unwrap_or_default()).into_owned();
    Outcome { status, elapsed, output }
}

#[test]
fn every_sh_test_block_of_the_readme_and_the_guide_runs() {
    let root = repo_root();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_schedlab"));
    let bin_dir = bin.parent().expect("the binary's directory").to_path_buf();
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in documents(&root) {
        let rel = doc.strip_prefix(&root).expect("under the root").display().to_string();
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let all = blocks(&rel, &text).unwrap_or_else(|e| panic!("{e}"));
        let runnable: Vec<&Block> = all.iter().filter(|b| b.runnable()).collect();
        let name = doc.file_name().expect("a file name").to_string_lossy().into_owned();
        let exempt = NOT_RUNNABLE.iter().find(|(n, _)| *n == name);
        if let (Some((_, why)), false) = (exempt, runnable.is_empty()) {
            failures.push(format!("{rel}: listed in NOT_RUNNABLE ({why}) but has a runnable block: take it off the list"));
        }
        if rel.starts_with("docs/guide/") && runnable.is_empty() && exempt.is_none() {
            failures.push(format!(
                "{rel}: no runnable example (mark a quick example ```sh test, or list the guide in NOT_RUNNABLE in crates/cli/tests/guide.rs with the reason it needs root or hardware)"
            ));
        }
        for block in runnable {
            let out = run_block(&root, &bin_dir, block, BLOCK_TIMEOUT);
            ran += 1;
            eprintln!("{}:{}: {:?} in {:.1} s", block.file, block.line, out.status, out.elapsed.as_secs_f64());
            match out.status {
                Some(s) if s.success() => {}
                Some(s) => failures.push(format!(
                    "{}:{}: the block exited with {s}; its last output:\n{}",
                    block.file,
                    block.line,
                    tail(&out.output, 30)
                )),
                None => failures.push(format!(
                    "{}:{}: the block ran longer than {} s and was killed; its last output:\n{}",
                    block.file,
                    block.line,
                    BLOCK_TIMEOUT.as_secs(),
                    tail(&out.output, 30)
                )),
            }
        }
    }
    assert!(ran > 0, "no ```sh test block found in README.md or docs/guide/*.md");
    assert!(failures.is_empty(), "{} problem(s) in the guide's examples:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn fences_are_parsed_with_their_lines_and_info() {
    let text = "# t\n\n```sh test\necho a\n  echo b\n```\n\ntext\n\n````sh\n```\nnot a close\n````\n";
    let b = blocks("x.md", text).unwrap();
    assert_eq!(b.len(), 2);
    assert_eq!((b[0].line, b[0].info.as_str(), b[0].body.as_str()), (3, "sh test", "echo a\n  echo b"));
    assert!(b[0].runnable());
    assert_eq!((b[1].line, b[1].info.as_str(), b[1].body.as_str()), (10, "sh", "```\nnot a close"));
    assert!(!b[1].runnable());
    assert!(blocks("y.md", "```sh test\nfalse\n").unwrap_err().contains("y.md:1"));
}

#[test]
fn a_failing_or_hung_block_is_reported_and_its_background_jobs_die() {
    let root = repo_root();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_schedlab"));
    let bin_dir = bin.parent().unwrap();
    let block = |body: &str| Block { file: "t.md".into(), line: 1, info: "sh test".into(), body: body.into() };

    // The binary under test is first on PATH, and the repository's files are reachable.
    let ok = run_block(
        &root,
        bin_dir,
        &block(&format!("test \"$(command -v schedlab)\" = '{}'\ntest -f sweeps/quick.toml", bin.display())),
        BLOCK_TIMEOUT,
    );
    assert!(ok.status.is_some_and(|s| s.success()), "{}", ok.output);

    // A failing command in the middle stops the block (bash -e) with its status.
    let bad = run_block(&root, bin_dir, &block("echo before\nschedlab sim --no-such-option\necho after"), BLOCK_TIMEOUT);
    assert_eq!(bad.status.and_then(|s| s.code()), Some(2), "{}", bad.output);
    assert!(bad.output.contains("before") && !bad.output.contains("after"), "{}", bad.output);

    // A failure inside a pipeline counts (pipefail).
    let piped = run_block(&root, bin_dir, &block("schedlab sim --no-such-option | cat"), BLOCK_TIMEOUT);
    assert_eq!(piped.status.and_then(|s| s.code()), Some(2), "{}", piped.output);

    // A hung block is killed at the bound, and so is the job it left in the background.
    let hung = run_block(&root, bin_dir, &block("sleep 1000 &\necho \"background $!\"\nsleep 1000"), Duration::from_millis(500));
    assert!(hung.status.is_none(), "the hung block was not reported as hung: {}", hung.output);
    let pid: u32 = hung
        .output
        .lines()
        .find_map(|l| l.strip_prefix("background "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the block printed its background pid: {}", hung.output));
    // SIGKILL is delivered asynchronously: wait (bounded) until the process is gone or a zombie.
    let dead = |pid: u32| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    };
    let since = Instant::now();
    while !dead(pid) && since.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(dead(pid), "the background job {pid} outlived its block");
}

/// docs/notes/README.md's own rule, checked: every study in docs/notes has a dated name and a row
/// in the index that links it, and every link of the index names a file that exists.
#[test]
fn every_note_is_dated_and_listed_in_the_notes_index() {
    let notes = repo_root().join("docs/notes");
    let index = std::fs::read_to_string(notes.join("README.md")).expect("docs/notes/README.md");
    let mut problems = Vec::new();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&notes).expect("docs/notes") {
        let name = entry.expect("a directory entry").file_name().to_string_lossy().into_owned();
        if name == "README.md" || !name.ends_with(".md") {
            continue;
        }
        let dated = name.len() > 11
            && name.as_bytes()[..10]
                .iter()
                .enumerate()
                .all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() })
            && name.as_bytes()[10] == b'-';
        if !dated {
            problems.push(format!("docs/notes/{name}: not named YYYY-MM-DD-topic.md"));
        }
        if !index.contains(&format!("]({name})")) {
            problems.push(format!("docs/notes/{name}: no row in docs/notes/README.md links it"));
        }
        files.push(name);
    }
    for (i, _) in index.match_indices("](") {
        let target: String = index[i + 2..].chars().take_while(|c| *c != ')').collect();
        if target.starts_with("20") && target.ends_with(".md") && !files.contains(&target) {
            problems.push(format!("docs/notes/README.md links {target}, which does not exist"));
        }
    }
    assert!(!files.is_empty(), "no notes found under {}", notes.display());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
