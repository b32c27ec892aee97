//! The front-end contract every command shares: output to a closed pipe never panics (the
//! process ends quietly with 141, as a C tool killed by SIGPIPE), and usage errors exit 2.
use std::io::Read;
use std::process::{Command, Stdio};

fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// Runs `args` with stdout and stderr on pipes whose reader closes at once; returns the status
/// code and nothing else (no panic message can be read: the reader is gone).
fn with_closed_pipes(args: &[&str]) -> i32 {
    // In a directory of its own: `sched` writes its timestamp files (queue-i.txt) where it runs.
    let d = tempfile::tempdir().unwrap();
    let mut child = schedlab()
        .args(args)
        .current_dir(d.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    child.wait().unwrap().code().expect("exited, not killed")
}

#[test]
fn output_to_a_closed_pipe_ends_quietly_not_with_a_panic() {
    for args in [&["sched", "-d", "0.3"][..], &["sim", "--packets", "2M"][..], &["hist"][..]] {
        let code = with_closed_pipes(args);
        assert_ne!(code, 101, "{args:?} panicked");
        assert!(code == 141 || code == 1, "{args:?}: exit {code}");
    }
}

#[test]
fn a_closed_stdout_alone_does_not_lose_the_error_report() {
    // hist with no numbers is an error: its message goes to stderr, which is still open.
    let mut child = schedlab().arg("hist").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let code = child.wait().unwrap().code().unwrap();
    assert_eq!(code, 1, "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unknown_commands_are_usage_errors() {
    let out = schedlab().arg("no-such-command").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown command"));
}
