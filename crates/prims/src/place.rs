//! Where each measuring thread was asked to run and what it actually got.
//!
//! A thread calls [`apply`] first thing: it pins itself and/or asks for a
//! real-time policy, then reads back (from the kernel) its CPU, allowed CPUs, policy and
//! priority. Anything asked for and not granted becomes a line in [`ThreadGot::degraded`]; the
//! commands refuse to report such a run as if it were what was asked unless `--allow-degraded`.

use crate::PrimsError;
use schedlab_report::machine::{self, SchedPolicy, ThreadInfo};

/// A real-time policy request, what a thread asks for, and what it got: the types the results
/// record (`schedlab_report::results::prims`), used here directly.
pub use schedlab_report::results::prims::{RtRequest, ThreadGot, ThreadRequest};

/// The policy name a real-time request asks for.
pub fn policy_name(rt: &RtRequest) -> &'static str {
    if rt.round_robin {
        "SCHED_RR"
    } else {
        "SCHED_FIFO"
    }
}

/// Applies the request to the calling thread and reads back what it got.
pub fn apply(req: &ThreadRequest) -> ThreadGot {
    let mut degraded = Vec::new();
    if let Some(cpu) = req.cpu {
        if let Err(e) = machine::pin_current_thread(cpu) {
            degraded.push(format!("{}: pinning to CPU {cpu} failed: {e}", req.role));
        }
    }
    if let Some(rt) = req.rt {
        if let Err(e) = machine::set_realtime(rt.round_robin, rt.priority) {
            let hint = if e.raw_os_error() == Some(libc::EPERM) {
                " (needs root or CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least the priority)"
            } else {
                ""
            };
            degraded.push(format!("{}: {} priority {} not granted: {e}{hint}", req.role, policy_name(&rt), rt.priority));
        }
    }
    let got = ThreadInfo::current();
    // Read back: trust what the kernel says, not what the calls returned.
    if let Some(cpu) = req.cpu {
        if got.allowed_cpus != [cpu] && degraded.iter().all(|d| !d.contains("pinning")) {
            degraded.push(format!("{}: asked for CPU {cpu}, may run on {:?}", req.role, got.allowed_cpus));
        }
    }
    if let Some(rt) = req.rt {
        let want = if rt.round_robin { SchedPolicy::SchedRr } else { SchedPolicy::SchedFifo };
        if (got.policy != want || got.priority != rt.priority) && degraded.iter().all(|d| !d.contains("granted")) {
            degraded.push(format!(
                "{}: asked for {} priority {}, got {} priority {}",
                req.role,
                policy_name(&rt),
                rt.priority,
                got.policy.name(),
                got.priority
            ));
        }
    }
    ThreadGot { requested: req.clone(), got, degraded }
}

/// Checks that every CPU asked for may be used by this process.
pub fn check_cpus<'a>(cpus: impl IntoIterator<Item = (&'a str, usize)>) -> Result<(), PrimsError> {
    let allowed = machine::online_cpus();
    for (what, cpu) in cpus {
        if !allowed.contains(&cpu) {
            return Err(PrimsError::BadCpu { what: what.to_string(), cpu, allowed: format!("{allowed:?}") });
        }
    }
    Ok(())
}

/// Result of asking for `mlockall(MCL_CURRENT | MCL_FUTURE)`: the type `schedlab.semtest` records.
pub use schedlab_report::results::semtest::MlockResult;

/// Locks the process's memory when asked (so page faults do not land in the measurement).
pub fn mlockall(requested: bool) -> MlockResult {
    if !requested {
        return MlockResult { requested, locked: false, error: None };
    }
    // SAFETY: plain syscall with constant flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        MlockResult { requested, locked: true, error: None }
    } else {
        let e = std::io::Error::last_os_error();
        MlockResult {
            requested,
            locked: false,
            error: Some(format!("mlockall failed: {e} (needs root/CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK)")),
        }
    }
}

/// Undoes [`mlockall`] (a run must not leave the process locked for a following one).
pub fn munlockall(r: &MlockResult) {
    if r.locked {
        // SAFETY: plain syscall.
        unsafe { libc::munlockall() };
    }
}

/// True once SIGINT or SIGTERM arrived (the front-end kit's handler, installed by the commands
/// through `schedlab_report::frontend::interrupt()`): loops stop early and partial results are
/// reported.
#[inline]
pub fn stop_requested() -> bool {
    schedlab_report::frontend::interrupt().requested()
}

/// Start line shared by the measuring threads and the thread that launched them: every worker
/// applies its request and reports; the launcher looks at all reports and either lets everyone
/// start measuring or, when something asked for was refused and degraded runs are not allowed,
/// sends everyone home before a single sample is taken. If the launcher cannot start all
/// workers, [`Gate::cancel`] sends home those already waiting, so no thread is left behind.
pub struct Gate {
    state: std::sync::Mutex<GateState>,
    cv: std::sync::Condvar,
    allow_degraded: bool,
}

struct GateState {
    gots: Vec<Option<ThreadGot>>,
    arrived: usize,
    /// `Some(true)`: measure; `Some(false)`: go home.
    go: Option<bool>,
}

impl Gate {
    /// A gate for `workers` threads plus the launcher.
    pub fn new(workers: usize, allow_degraded: bool) -> Gate {
        Gate {
            state: std::sync::Mutex::new(GateState { gots: vec![None; workers], arrived: 0, go: None }),
            cv: std::sync::Condvar::new(),
            allow_degraded,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by worker `index`: applies `req`, waits for the verdict. `None` means: do not measure.
    pub fn enter(&self, index: usize, req: &ThreadRequest) -> Option<ThreadGot> {
        let got = apply(req);
        let mut st = self.lock();
        st.gots[index] = Some(got.clone());
        st.arrived += 1;
        self.cv.notify_all();
        while st.go.is_none() {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        (st.go == Some(true)).then_some(got)
    }

    /// Called by the launcher once all workers are started: waits for every worker's report and
    /// gives the verdict. `extra` are degradations found outside the workers (e.g. mlockall).
    pub fn verdict(&self, extra: &[String]) -> Result<Vec<ThreadGot>, PrimsError> {
        let mut st = self.lock();
        while st.arrived < st.gots.len() {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        let gots: Vec<ThreadGot> = st.gots.iter().flatten().cloned().collect();
        let degraded = degraded_lines(&gots, extra);
        let refuse = !degraded.is_empty() && !self.allow_degraded;
        st.go = Some(!refuse);
        self.cv.notify_all();
        if refuse {
            Err(PrimsError::Degraded(degraded))
        } else {
            Ok(gots)
        }
    }

    /// Sends every worker that has entered (or will enter) home without measuring.
    pub fn cancel(&self) {
        self.lock().go = Some(false);
        self.cv.notify_all();
    }
}

/// All degradation lines of a run.
pub fn degraded_lines(gots: &[ThreadGot], extra: &[String]) -> Vec<String> {
    extra.iter().cloned().chain(gots.iter().flat_map(|g| g.degraded.iter().cloned())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_is_read_back() {
        let cpu = *machine::online_cpus().last().unwrap();
        let got =
            std::thread::spawn(move || apply(&ThreadRequest { role: "t".into(), cpu: Some(cpu), rt: None })).join().unwrap();
        assert!(got.degraded.is_empty(), "{:?}", got.degraded);
        assert_eq!(got.got.allowed_cpus, vec![cpu]);
        assert_eq!(got.got.cpu as usize, cpu);
    }

    #[test]
    fn impossible_cpu_is_reported_as_degraded() {
        let got = std::thread::spawn(|| apply(&ThreadRequest { role: "t".into(), cpu: Some(4000), rt: None })).join().unwrap();
        assert_eq!(got.degraded.len(), 1, "{:?}", got.degraded);
        assert!(check_cpus([("-s", 4000)]).unwrap_err().to_string().contains("4000"));
    }

    #[test]
    fn gate_lets_through_or_sends_home() {
        use std::sync::Arc;
        let gate = Arc::new(Gate::new(2, false));
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let g = gate.clone();
                std::thread::spawn(move || g.enter(i, &ThreadRequest { role: format!("w{i}"), cpu: None, rt: None }).is_some())
            })
            .collect();
        assert_eq!(gate.verdict(&[]).unwrap().len(), 2);
        assert!(hs.into_iter().all(|h| h.join().unwrap()));
        // A refused mlockall (extra) without --allow-degraded: nobody measures.
        let gate = Arc::new(Gate::new(1, false));
        let g = gate.clone();
        let h = std::thread::spawn(move || g.enter(0, &ThreadRequest::default()).is_some());
        assert!(matches!(gate.verdict(&["mlockall refused".into()]), Err(PrimsError::Degraded(_))));
        assert!(!h.join().unwrap());
        // Cancel releases a worker even though the gate never filled up.
        let gate = Arc::new(Gate::new(3, true));
        let g = gate.clone();
        let h = std::thread::spawn(move || g.enter(0, &ThreadRequest::default()).is_some());
        gate.cancel();
        assert!(!h.join().unwrap());
    }

    #[test]
    fn rt_request_matches_what_was_read_back() {
        // Granted or not depends on privileges; either way the report must agree with the kernel.
        let got = std::thread::spawn(|| {
            apply(&ThreadRequest { role: "t".into(), cpu: None, rt: Some(RtRequest { round_robin: true, priority: 1 }) })
        })
        .join()
        .unwrap();
        let granted = got.got.policy == SchedPolicy::SchedRr && got.got.priority == 1;
        assert_eq!(granted, got.degraded.is_empty(), "{got:?}");
    }
}
