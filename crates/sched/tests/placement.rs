//! A run's placement as recorded: what each thread got, and a failed pin said wherever the run's
//! figures are printed (one run, and every run line of `--repeat`).

use std::sync::atomic::AtomicBool;

use schedlab_report::MachineInfo;
use schedlab_sched::config::{load, parse_argv};
use schedlab_sched::output::text;
use schedlab_sched::repeat::{run, run_line};

fn args(extra: &[&str]) -> schedlab_sched::config::Args {
    let dir = std::env::temp_dir().join(format!("schedlab-sched-placement-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("p.txt");
    std::fs::write(&program, "30ms 1M 64 1\n").unwrap();
    let mut argv: Vec<String> =
        vec!["-f".into(), program.display().to_string(), "--no-timestamps".into(), "-i".into(), "1us".into()];
    argv.extend(extra.iter().map(|s| s.to_string()));
    load(parse_argv(&argv).unwrap().expect("a run")).unwrap()
}

#[test]
fn every_repeat_run_line_says_the_scheduler_was_not_pinned() {
    // CPU 4000 exists on no machine this runs on: the pin fails, the run goes on unpinned.
    let a = args(&["-a", "4000", "--repeat", "2"]);
    let mut lines = Vec::new();
    let m = run(&a, &MachineInfo::collect(), &[], &AtomicBool::new(false), |k, n, rep, why| {
        lines.push(run_line(k, n, rep, why));
        Ok(())
    })
    .unwrap();
    assert_eq!(lines.len(), 2);
    for (line, rep) in lines.iter().zip(&m.reports) {
        let e = rep.scheduler_pin_error.as_deref().expect("the pin to CPU 4000 failed and the report says so");
        assert!(e.contains("4000"), "{e}");
        assert!(line.contains("NOT pinned") && line.contains(e), "the run line hides the failed pin: {line}");
    }
}

#[test]
fn a_failed_client_pin_is_in_the_run_line_and_the_text() {
    // CPU 1000: a valid number no machine this runs on has.
    let a = args(&["--client-cpus", "1000", "--repeat", "2"]);
    let mut lines = Vec::new();
    let m = run(&a, &MachineInfo::collect(), &[], &AtomicBool::new(false), |k, n, rep, why| {
        lines.push(run_line(k, n, rep, why));
        Ok(())
    })
    .unwrap();
    let rep = m.report();
    let e = rep.clients[0].pin_error.as_deref().expect("client 0's pin to CPU 1000 failed");
    assert!(lines.iter().all(|l| l.contains("NOT pinned") && l.contains(e)), "{lines:?}");
    assert!(text(rep).contains(e), "{}", text(rep));
}

#[test]
fn a_pinned_client_records_the_mask_it_really_had() {
    let cpus = schedlab_report::machine::online_cpus();
    let last = *cpus.last().unwrap();
    let a = args(&["--client-cpus", &last.to_string()]);
    let m = run(&a, &MachineInfo::collect(), &[], &AtomicBool::new(false), |_, _, _, _| Ok(())).unwrap();
    let c = &m.report().clients[0];
    assert_eq!((c.requested_cpu, c.pin_error.as_deref()), (Some(last), None));
    assert_eq!(c.thread.allowed_cpus, vec![last], "{:?}", c.thread);
    assert_eq!(c.thread.cpu as usize, last, "{:?}", c.thread);
    let line = text(m.report());
    assert!(!line.contains("NOT pinned"), "{line}");
}
