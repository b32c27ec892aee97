//! `predict` runs the harness with `schedlab sched`'s placement options (`-a`, `--client-cpus`).
//! Its result records no placement of its own, so a pin that failed must stop the comparison
//! with a message, not yield a comparison made unpinned that reads as pinned.

use schedlab_predict::cli::parse;
use schedlab_predict::run::{run, Finished};

fn opts(extra: &[&str]) -> schedlab_predict::cli::Opts {
    let dir = std::env::temp_dir().join(format!("schedlab-predict-placement-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("p.txt");
    std::fs::write(&program, "20ms 1M 1500 1\n").unwrap();
    let mut argv: Vec<String> =
        ["-f", &program.display().to_string(), "-b", "100M", "-q", "1000", "-i", "0", "-c", "0", "--drain", "5ms"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    argv.extend(extra.iter().map(|s| s.to_string()));
    parse(&argv).unwrap().expect("a run")
}

#[test]
fn a_scheduler_pin_that_failed_stops_the_comparison_and_names_the_cpu() {
    let o = opts(&["-a", "4000"]);
    match run(&o.config) {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("CPU 4000") && msg.contains("pin"), "{msg}");
        }
        Ok(Finished::Done { result, .. }) => {
            panic!("predict compared {} run(s) with the scheduler unpinned, and its result does not say so", result.runs.len())
        }
        Ok(Finished::Interrupted) => panic!("nothing interrupted the run"),
    }
}

#[test]
fn a_client_pin_that_failed_stops_the_comparison() {
    let o = opts(&["--client-cpus", "1000"]);
    let e = match run(&o.config) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("predict compared with client 0 unpinned, and its result does not say so"),
    };
    assert!(e.contains("CPU 1000") && e.contains("client 0"), "{e}");
}

#[test]
fn pins_that_held_let_the_comparison_run() {
    let cpus = schedlab_report::machine::online_cpus();
    let last = cpus.last().unwrap().to_string();
    let o = opts(&["--client-cpus", &last]);
    assert!(matches!(run(&o.config), Ok(Finished::Done { .. })));
}
