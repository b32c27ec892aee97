//! A real-time policy that is refused is recorded as what the thread kept, with the reason, and
//! makes the run degraded (refused without --allow-degraded).

use schedlab_prims::place::{apply, Gate, RtRequest, ThreadRequest};
use schedlab_report::machine::SchedPolicy;
use schedlab_report::testkit::{drop_root_in_this_thread, rtprio_limit};

fn fifo(priority: i32) -> ThreadRequest {
    ThreadRequest { role: "marco 0".into(), cpu: None, rt: Some(RtRequest { round_robin: false, priority }) }
}

#[test]
fn refused_sched_fifo_is_recorded_as_sched_other_with_the_reason() {
    if rtprio_limit() != 0 {
        schedlab_report::skip!("RLIMIT_RTPRIO is {}: an unprivileged thread may get SCHED_FIFO", rtprio_limit());
    }
    let got = std::thread::spawn(|| {
        drop_root_in_this_thread();
        apply(&fifo(10))
    })
    .join()
    .unwrap();
    assert_eq!((got.got.policy, got.got.priority), (SchedPolicy::SchedOther, 0), "{got:?}");
    assert_eq!(got.degraded.len(), 1, "{:?}", got.degraded);
    let why = &got.degraded[0];
    assert!(why.contains("SCHED_FIFO priority 10 not granted") && why.contains("CAP_SYS_NICE"), "{why}");
    // Without --allow-degraded nobody measures.
    let gate = std::sync::Arc::new(Gate::new(1, false));
    let g = gate.clone();
    let h = std::thread::spawn(move || {
        drop_root_in_this_thread();
        g.enter(0, &fifo(10)).is_some()
    });
    let verdict = gate.verdict(&[]);
    assert!(!h.join().unwrap(), "the refused thread must not measure");
    assert!(format!("{}", verdict.unwrap_err()).contains("not granted"));
}

#[test]
fn an_out_of_range_priority_is_recorded_as_not_granted() {
    let got = std::thread::spawn(|| apply(&fifo(100))).join().unwrap();
    assert_eq!(got.got.policy, SchedPolicy::SchedOther, "{got:?}");
    assert!(got.degraded.iter().any(|d| d.contains("priority 100 not granted")), "{:?}", got.degraded);
}
