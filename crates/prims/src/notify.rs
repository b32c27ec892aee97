//! `notify`: what waking another thread costs, on both sides.
//!
//! - Test A ([`NotifyTest::Receiver`]): the sender posts notifications as fast as it can; the
//!   receiver waits in a loop. Rates on both sides (the receiver's counted from the sender's
//!   first notification) and the receiver's number of wake-ups (one
//!   `wait` may hand over several notifications, so wake-ups ≤ notifications).
//! - Test B ([`NotifyTest::Sender`]): after each notification the sender waits until the receiver
//!   has consumed it, then leaves a gap (busy-waited, so the sender itself never sleeps) for the
//!   receiver to fall asleep again, so the receiver is asleep each time; every `notify` is
//!   timed, and the receiver also records the latency from the sender's timestamp to its own
//!   return from `wait` (the wake-up latency; same clock on both sides).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use schedlab_report::disturb::Probe;
use schedlab_report::Hist;
use serde::Serialize;

use crate::chan::{Mechanism, Notifier};
use crate::clock::{current_cpu, now_ns, spin_until};
use crate::place::{stop_requested, Gate, ThreadRequest};
use schedlab_report::results;

use crate::{serde_name, PrimsError};

/// Which test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyTest {
    Receiver,
    Sender,
}

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct NotifyConfig {
    pub test: NotifyTest,
    pub mechanism: Mechanism,
    pub notifications: u64,
    pub sender_cpu: Option<usize>,
    pub receiver_cpu: Option<usize>,
    /// Gap between two notifications in test B.
    pub gap_ns: u64,
    pub allow_degraded: bool,
    /// Stop sending after this long (`-D`), even if fewer than `notifications` were sent.
    pub duration_ns: Option<u64>,
}

/// Receiver side: the result type's.
pub use schedlab_report::results::notify::NotifyReceiver;
/// A whole run: the result type's.
pub use schedlab_report::results::notify::NotifyRun;
/// Sender side: the result type's.
pub use schedlab_report::results::notify::NotifySender;

/// What [`run`] measured: the typed run (`schedlab.notify`'s `run`) and the samples behind its
/// test B summaries (for `--histfile`), which the result does not carry.
#[derive(Clone, Debug)]
pub struct Measured {
    pub run: NotifyRun,
    /// Test B: the sender's cost of each `notify`, ns (behind `run.sender.cost_ns`).
    pub cost_hist: Hist,
    /// Test B: the wake-up latencies, ns (behind `run.receiver.wake_latency_ns`).
    pub wake_latency_hist: Hist,
}

impl NotifyConfig {
    /// The configuration as the typed result records it.
    pub fn to_result(&self) -> results::notify::NotifyConfig {
        results::notify::NotifyConfig {
            test: serde_name(&self.test),
            mechanism: serde_name(&self.mechanism),
            notifications: self.notifications,
            sender_cpu: self.sender_cpu,
            receiver_cpu: self.receiver_cpu,
            gap_ns: self.gap_ns,
            allow_degraded: self.allow_degraded,
            duration_ns: self.duration_ns,
        }
    }
}

struct Shared {
    ch: Box<dyn Notifier>,
    /// How many notifications the receiver waits for (lowered if the sender stops early).
    target: AtomicU64,
    /// Test B: the sender's timestamp of the notification in flight.
    sent_at: AtomicU64,
    /// Notifications the receiver has consumed so far.
    consumed: AtomicU64,
    /// When the sender started sending: the receiver's rate counts from there, so a receiver that
    /// was scheduled late is not credited with an impossibly short run.
    send_start: AtomicU64,
}

fn sender(sh: &Shared, cfg: &NotifyConfig) -> std::io::Result<(NotifySender, Hist)> {
    let mut cost = Hist::new();
    let mut cost_sum = 0u64;
    let start = now_ns();
    sh.send_start.store(start, Ordering::SeqCst);
    let deadline = cfg.duration_ns.map(|d| start.saturating_add(d));
    let mut by_duration = false;
    let mut sent = 0;
    let mut probe = Probe::start(start);
    while sent < cfg.notifications {
        // The clock is read for the deadline and the loop's gaps every 256 notifications in
        // test A (a few ns amortised), at every one in test B (which reads it anyway).
        let check = cfg.test == NotifyTest::Sender || sent % 256 == 0;
        if check {
            let now = now_ns();
            probe.tick(now);
            by_duration = deadline.is_some_and(|d| now >= d);
        }
        if stop_requested() || by_duration {
            sh.target.store(sent, Ordering::SeqCst);
            sh.ch.notify()?; // wakes the receiver so it can see the lowered target
            break;
        }
        match cfg.test {
            NotifyTest::Receiver => sh.ch.notify()?,
            NotifyTest::Sender => {
                let t0 = now_ns();
                sh.sent_at.store(t0, Ordering::Release);
                sh.ch.notify()?;
                let t1 = now_ns();
                cost.record(t1 - t0);
                cost_sum += t1 - t0;
                // Wait until the receiver has had this one, then give it the gap to fall asleep.
                while sh.consumed.load(Ordering::Acquire) <= sent && !stop_requested() {
                    std::hint::spin_loop();
                }
                spin_until(now_ns() + cfg.gap_ns);
            }
        }
        sent += 1;
    }
    let dt = (now_ns() - start).max(1);
    let figures = NotifySender {
        cpu_at_end: current_cpu(),
        sent,
        duration_s: dt as f64 / 1e9,
        rate_ops_per_s: sent as f64 * 1e9 / dt as f64,
        cost_avg_ns: if cost.is_empty() { 0.0 } else { cost_sum as f64 / cost.len() as f64 },
        cost_ns: cost.summary(1.0),
        stopped_by_duration: by_duration,
        disturbance: Some(probe.finish("sender")),
    };
    Ok((figures, cost))
}

fn receiver(sh: &Shared, test: NotifyTest) -> std::io::Result<(NotifyReceiver, Hist)> {
    let mut lat = Hist::new();
    let start = now_ns();
    let (mut received, mut wakeups) = (0u64, 0u64);
    let mut end = start;
    let mut probe = Probe::start(start);
    while received < sh.target.load(Ordering::SeqCst) {
        let k = sh.ch.wait()?;
        let now = now_ns();
        if received >= sh.target.load(Ordering::SeqCst) {
            // The sender's stop poke after it lowered the target: every real notification was
            // already received, so this wake-up is neither counted nor timed.
            break;
        }
        end = now;
        probe.tick(end);
        if test == NotifyTest::Sender {
            lat.record(end.saturating_sub(sh.sent_at.load(Ordering::Acquire)));
        }
        received += k;
        wakeups += 1;
        sh.consumed.store(received, Ordering::Release);
    }
    let received = received.min(sh.target.load(Ordering::SeqCst));
    let first = match sh.send_start.load(Ordering::SeqCst) {
        0 => start,
        s => s.min(start),
    };
    let dt = end.saturating_sub(first).max(1);
    let figures = NotifyReceiver {
        cpu_at_end: current_cpu(),
        received,
        wakeups,
        duration_s: dt as f64 / 1e9,
        rate_ops_per_s: received as f64 * 1e9 / dt as f64,
        wake_latency_ns: lat.summary(1.0),
        disturbance: Some(probe.finish("receiver")),
    };
    Ok((figures, lat))
}

/// Runs the test (two threads). `Err(Degraded)` before measuring if pinning was refused.
pub fn run(cfg: &NotifyConfig) -> Result<Measured, PrimsError> {
    if cfg.notifications == 0 {
        return Err(PrimsError::BadInput("-n 0: at least one notification must be sent".into()));
    }
    let sh = Arc::new(Shared {
        ch: cfg.mechanism.create()?,
        target: AtomicU64::new(cfg.notifications),
        sent_at: AtomicU64::new(0),
        consumed: AtomicU64::new(0),
        send_start: AtomicU64::new(0),
    });
    let gate = Arc::new(Gate::new(2, cfg.allow_degraded));
    let spawn = |name: &str, f: Box<dyn FnOnce() -> Option<std::io::Result<Result1>> + Send>| {
        std::thread::Builder::new().name(name.into()).spawn(f).map_err(|e| PrimsError::Os { what: "spawning a thread", err: e })
    };
    let (sh_r, gate_r, test) = (sh.clone(), gate.clone(), cfg.test);
    let req_r = ThreadRequest { role: "receiver".into(), cpu: cfg.receiver_cpu, rt: None };
    let rcv = spawn(
        "notify-rcv",
        Box::new(move || {
            gate_r.enter(1, &req_r)?;
            Some(receiver(&sh_r, test).map(Result1::Receiver))
        }),
    )?;
    let (sh_s, gate_s, cfg_s) = (sh.clone(), gate.clone(), cfg.clone());
    let req_s = ThreadRequest { role: "sender".into(), cpu: cfg.sender_cpu, rt: None };
    let snd = spawn(
        "notify-snd",
        Box::new(move || {
            gate_s.enter(0, &req_s)?;
            let r = sender(&sh_s, &cfg_s);
            if r.is_err() {
                // The receiver must not wait for notifications that will never come.
                sh_s.target.store(0, Ordering::SeqCst);
                let _ = sh_s.ch.notify();
            }
            Some(r.map(Result1::Sender))
        }),
    );
    let snd = match snd {
        Ok(h) => h,
        Err(e) => {
            gate.cancel();
            let _ = rcv.join();
            return Err(e);
        }
    };
    let verdict = gate.verdict(&[]);
    let join = |h: std::thread::JoinHandle<Option<std::io::Result<Result1>>>| {
        h.join().map_err(|_| PrimsError::Worker("a notify thread panicked".into()))
    };
    let (s, r) = (join(snd)?, join(rcv)?);
    let threads = verdict?;
    let io = |e: std::io::Error| PrimsError::Os { what: "notification", err: e };
    let (Some(s), Some(r)) = (s, r) else {
        return Err(PrimsError::Worker("a notify thread did not run".into()));
    };
    let (Result1::Sender((sender, cost_hist)), Result1::Receiver((receiver, wake_latency_hist))) =
        (s.map_err(io)?, r.map_err(io)?)
    else {
        return Err(PrimsError::Worker("notify threads mixed up".into()));
    };
    let run = NotifyRun { config: cfg.to_result(), threads, sender, receiver, interrupted: stop_requested() };
    Ok(Measured { run, cost_hist, wake_latency_hist })
}

enum Result1 {
    Sender((NotifySender, Hist)),
    Receiver((NotifyReceiver, Hist)),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(test: NotifyTest, m: Mechanism, n: u64) -> NotifyConfig {
        NotifyConfig {
            test,
            mechanism: m,
            notifications: n,
            sender_cpu: None,
            receiver_cpu: None,
            gap_ns: 20_000,
            allow_degraded: false,
            duration_ns: None,
        }
    }

    #[test]
    fn duration_stops_the_sender_and_the_receiver_gets_everything_sent() {
        for test in [NotifyTest::Receiver, NotifyTest::Sender] {
            let mut c = cfg(test, Mechanism::Eventfd, u64::MAX);
            c.duration_ns = Some(50_000_000);
            let t = std::time::Instant::now();
            let r = run(&c).unwrap().run;
            assert!(t.elapsed() < std::time::Duration::from_secs(5), "{test:?} ran {:?}", t.elapsed());
            assert!(r.sender.stopped_by_duration, "{test:?}");
            assert!(r.sender.sent > 0);
            assert_eq!(r.receiver.received, r.sender.sent, "{test:?}");
            if test == NotifyTest::Sender {
                // The sender's stop poke is not a notification: one wake-up and one latency sample
                // per notification sent, not one more.
                assert_eq!(r.receiver.wakeups, r.sender.sent, "{test:?}");
                assert_eq!(r.receiver.wake_latency_ns.count, r.sender.sent, "{test:?}");
            }
            assert!(!r.interrupted);
        }
    }

    #[test]
    fn receiver_test_conserves_notifications() {
        for m in Mechanism::ALL {
            let r = run(&cfg(NotifyTest::Receiver, m, 20_000)).unwrap().run;
            assert_eq!(r.sender.sent, 20_000, "{m}");
            assert_eq!(r.receiver.received, 20_000, "{m}");
            assert!(r.receiver.wakeups >= 1 && r.receiver.wakeups <= 20_000, "{m}");
            assert!(r.sender.rate_ops_per_s > 0.0 && r.receiver.rate_ops_per_s > 0.0);
        }
    }

    #[test]
    fn sender_test_times_every_notification() {
        let m = run(&cfg(NotifyTest::Sender, Mechanism::Eventfd, 200)).unwrap();
        assert_eq!(m.cost_hist.len(), 200, "the histogram behind the summary");
        assert_eq!(m.wake_latency_hist.len(), m.run.receiver.wake_latency_ns.count);
        let r = m.run;
        assert_eq!(r.sender.cost_ns.count, 200);
        assert!(r.sender.cost_avg_ns > 0.0);
        assert_eq!(r.receiver.received, 200);
        assert_eq!(r.receiver.wakeups, 200, "one wake-up per notification: the sender waits for each");
        assert!(r.receiver.wake_latency_ns.count >= 1);
        assert!(run(&cfg(NotifyTest::Sender, Mechanism::Eventfd, 0)).is_err());
    }
}
