//! The kernel as the third answer: a sched traffic file through a Linux qdisc on a veth.
//!
//! A [`Plan`] is what the guest runs: one sender per client of the traffic file (client `i` is flow
//! `i`, as in the harness), a veth whose root qdisc is a `tbf` bottleneck at the link rate (`-b`)
//! and whose child is the kernel's counterpart of the policy ([`Alg`]); the receiver, in its own
//! network namespace, counts bytes, packets and message delays per flow. [`inguest::execute`] runs
//! it (inside the guest, as root) and returns a [`KernelAnswer`]; [`model::run`] runs the same
//! arrivals through schedlab-policy's code on an ideal link; the harness's answer comes from
//! `schedlab sched` with the same options. [`compare`] sets them side by side.

pub mod host;
pub mod inguest;
pub mod model;

use serde::{Deserialize, Serialize};

use schedlab_report::Summary;

/// The kernel qdisc under the bottleneck, and its schedlab counterpart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Alg {
    /// `pfifo` ↔ the harness's `fifo`.
    Fifo,
    /// `drr`, quantum = weight × max length ↔ `drr` (`rr`).
    Drr,
    /// `qfq`, the same weights and max lengths ↔ `qfq`.
    Qfq,
    /// `prio`: flows of higher weight in higher bands (kernel only).
    Prio,
    /// `fq` (kernel only).
    Fq,
    /// `fq_codel` (kernel only).
    FqCodel,
}

impl Alg {
    /// Parses `-alg` (the harness's names where there is a counterpart; `rr` is DRR, as in sched).
    pub fn parse(s: &str) -> Option<Alg> {
        Some(match s.to_ascii_lowercase().as_str() {
            "fifo" | "pfifo" => Alg::Fifo,
            "drr" | "rr" => Alg::Drr,
            "qfq" => Alg::Qfq,
            "prio" => Alg::Prio,
            "fq" => Alg::Fq,
            "fq_codel" | "fq-codel" => Alg::FqCodel,
            _ => return None,
        })
    }
    /// The kernel qdisc's name.
    pub fn qdisc(self) -> &'static str {
        match self {
            Alg::Fifo => "pfifo",
            Alg::Drr => "drr",
            Alg::Qfq => "qfq",
            Alg::Prio => "prio",
            Alg::Fq => "fq",
            Alg::FqCodel => "fq_codel",
        }
    }
    /// The harness's `-alg` for the same policy, if it has one. Linux's qfq is QFQ+ with
    /// `qfq_agg_classes` classes per aggregate: the harness runs `qfq+:N` (which is QFQ for N = 1).
    pub fn harness(self, qfq_agg_classes: u32) -> Option<String> {
        match self {
            Alg::Fifo => Some("fifo".into()),
            Alg::Drr => Some("rr".into()),
            Alg::Qfq if qfq_agg_classes > 1 => Some(format!("qfq+:{qfq_agg_classes}")),
            Alg::Qfq => Some("qfq".into()),
            _ => None,
        }
    }
    /// Whether shares are set by weights (and so judged against the other answers).
    pub fn weighted(self) -> bool {
        matches!(self, Alg::Drr | Alg::Qfq)
    }
}

/// One flow's weight and maximum packet length (`-flowsets W:L:N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    pub weight: u32,
    pub max_len: u32,
}

/// One step of a client's program: `burst` packets of `pkt_len` bytes every
/// `burst × pkt_len × 8 / rate_bps` seconds, for `duration_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub duration_ns: u64,
    pub rate_bps: u64,
    pub pkt_len: u32,
    pub burst: u32,
}

impl Step {
    /// Nanoseconds between bursts (`None` when the rate is 0: silence).
    pub fn gap_ns(&self) -> Option<u64> {
        (self.rate_bps > 0).then(|| {
            (u128::from(self.pkt_len) * u128::from(self.burst) * 8 * 1_000_000_000 / u128::from(self.rate_bps)).max(1) as u64
        })
    }
}

/// Everything the guest needs to run one experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub alg: Alg,
    pub flows: Vec<Flow>,
    /// One program per client; client `i` sends on flow `i`.
    pub clients: Vec<Vec<Step>>,
    /// The bottleneck (`tbf rate`), bits per second.
    pub link_bps: u64,
    /// Packets each class (or the fifo) holds before it drops.
    pub queue_pkts: u32,
    /// The start of the measured window (seconds after the senders start).
    pub warmup_s: f64,
    /// The traffic file's name, as given.
    pub traffic: String,
    pub seed: u64,
    /// qfq only: classes per aggregate in Linux's QFQ+ (1, 2, 4 or 8; Linux's own default, on a
    /// device whose txqueuelen is at least 7, is 8). Linux groups up to this many classes of equal
    /// weight and max length into one aggregate, scheduled as one flow of their summed weight, idle
    /// members included (see [`qfq_plus_shares`]). Plans written before this field ran with 8.
    #[serde(default = "linux_default_agg_classes")]
    pub qfq_agg_classes: u32,
}

/// Linux's classes per qfq aggregate on a device with txqueuelen >= 7 (veth: 1000).
pub const LINUX_QFQ_AGG_CLASSES: u32 = 8;

fn linux_default_agg_classes() -> u32 {
    LINUX_QFQ_AGG_CLASSES
}

/// Linux QFQ+'s fluid shares for the flows in `active` (all backlogged), with at most
/// `plan.qfq_agg_classes` classes per aggregate.
///
/// What net/sched/sch_qfq.c does (Linux 3.8 and later): `qfq_change_class` puts each new class into
/// the first non-full aggregate of the same (lmax, weight) (`qfq_find_agg`), and `qfq_update_agg`
/// sets the aggregate's weight to `class_weight × num_classes`, the classes *configured* in it, and
/// its budget to `num_classes × lmax`. Aggregates are timestamped and scheduled as QFQ flows;
/// inside one the active classes take turns by DRR with quantum lmax (`agg_dequeue`). So a
/// backlogged class alone in an aggregate of k configured classes is served as if it had k times
/// its weight. The classes are created in flow order, as [`inguest::tc_commands`] does (the
/// catch-all class after them has lmax 1514, longer than any flow's, so it never shares an
/// aggregate with a flow, and it stays idle). Returns one share per flow (0 for inactive flows);
/// `None` unless the policy is qfq and some flow is active.
pub fn qfq_plus_shares(plan: &Plan, active: &[bool]) -> Option<Vec<f64>> {
    if plan.alg != Alg::Qfq || !active.iter().any(|a| *a) {
        return None;
    }
    let (aggs, agg_of) = qfq_aggregates(plan);
    let mut active_in = vec![0usize; aggs.len()];
    for (i, a) in agg_of.iter().enumerate() {
        if active.get(i).copied().unwrap_or(false) {
            active_in[*a] += 1;
        }
    }
    let agg_weight = |a: usize| f64::from(aggs[a].0) * aggs[a].1 as f64;
    let total: f64 = (0..aggs.len()).filter(|&a| active_in[a] > 0).map(agg_weight).sum();
    Some(
        agg_of
            .iter()
            .enumerate()
            .map(
                |(i, &a)| {
                    if active.get(i).copied().unwrap_or(false) {
                        agg_weight(a) / total / active_in[a] as f64
                    } else {
                        0.0
                    }
                },
            )
            .collect(),
    )
}

/// Whether Linux's qfq puts two or more of the plan's flows into one aggregate (then it is QFQ+,
/// not the QFQ of the seed, the harness and the model, whenever a member of an aggregate idles).
pub fn qfq_aggregates_merge(plan: &Plan) -> bool {
    plan.alg == Alg::Qfq && qfq_aggregates(plan).0.iter().any(|a| a.1 > 1)
}

/// Linux's aggregates for the plan's flows: (class weight, configured classes) per aggregate, and
/// each flow's aggregate.
fn qfq_aggregates(plan: &Plan) -> (Vec<(u32, usize)>, Vec<usize>) {
    // The policy crate's QFQ+ forms them as Linux does (consecutive classes of one lmax and weight
    // fill an aggregate in turn); the same function builds the model's aggregates.
    let flows: Vec<schedlab_policy::FlowWeight> =
        plan.flows.iter().map(|f| schedlab_policy::FlowWeight::new(f.weight, f.max_len)).collect();
    let (aggs, agg_of) = schedlab_policy::qfq::aggregates(&flows, plan.qfq_agg_classes);
    (aggs.iter().map(|a| (a.weight, a.flows as usize)).collect(), agg_of.iter().map(|&a| a as usize).collect())
}

/// Smallest and largest packet the kernel path can carry: Ethernet + IPv4 + UDP headers (42 bytes)
/// plus our 32-byte stamp, up to a 1500-byte frame on the veth (MTU 1500 + 14, kept at 1500 so
/// that the frame length is the packet length the harness and the model use).
pub const MIN_PKT: u32 = 42 + inguest::STAMP_LEN as u32;
pub const MAX_PKT: u32 = 1500;

impl Plan {
    /// Checks what the kernel path cannot carry, naming the client and the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.clients.len() > self.flows.len() {
            return Err(format!(
                "{} clients but {} flows: -flowsets must give at least one flow per client",
                self.clients.len(),
                self.flows.len()
            ));
        }
        if self.link_bps < 8_000 {
            return Err(format!("link rate {} b/s: use at least 8k", self.link_bps));
        }
        for (i, p) in self.clients.iter().enumerate() {
            for (k, s) in p.iter().enumerate() {
                if !(MIN_PKT..=MAX_PKT).contains(&s.pkt_len) {
                    return Err(format!(
                        "client {i}, entry {}: packet length {} bytes: the kernel path carries {MIN_PKT}..={MAX_PKT} (a frame on a veth)",
                        k + 1,
                        s.pkt_len
                    ));
                }
                if s.pkt_len > self.flows[i].max_len {
                    return Err(format!(
                        "client {i}, entry {}: {}-byte packets but its flow's MAXLEN is {}",
                        k + 1,
                        s.pkt_len,
                        self.flows[i].max_len
                    ));
                }
            }
        }
        if self.alg == Alg::Qfq {
            if ![1, 2, 4, 8].contains(&self.qfq_agg_classes) {
                return Err(format!("{} classes per qfq aggregate: Linux takes 1, 2, 4 or 8", self.qfq_agg_classes));
            }
            if let Some((i, f)) = self.flows.iter().enumerate().find(|(_, f)| f.weight > 1024) {
                return Err(format!("flow {i}: weight {} but the kernel's qfq takes at most 1024", f.weight));
            }
        }
        let longest = self.duration_s();
        if self.warmup_s >= longest {
            return Err(format!("warm-up {:.2} s is not shorter than the traffic ({longest:.2} s)", self.warmup_s));
        }
        Ok(())
    }
    /// The longest client program, seconds.
    pub fn duration_s(&self) -> f64 {
        self.clients.iter().map(|p| p.iter().map(|s| s.duration_ns).sum::<u64>()).max().unwrap_or(0) as f64 / 1e9
    }
    /// The drr quantum of flow `i` (weight × max length, as the harness).
    pub fn quantum(&self, i: usize) -> u64 {
        u64::from(self.flows[i].weight) * u64::from(self.flows[i].max_len)
    }
}

/// One flow as one answer saw it, inside the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowResult {
    pub flow: usize,
    /// Packets the client offered (sent, or handed to the policy) in the window.
    pub offered_pkts: u64,
    /// Bytes that reached the receiver (left the link) in the window.
    pub bytes: u64,
    pub pkts: u64,
    /// This flow's fraction of the bytes delivered in the window.
    pub share: f64,
    /// Delivered rate in the window, bits per second.
    pub rate_bps: f64,
    /// Evidence the flow was backlogged in the window: drops at its queue (or at the sender's
    /// socket) or packets still queued.
    pub drops: u64,
    pub backlogged: bool,
    /// Per-message delay (first packet sent to last packet received), microseconds; messages
    /// with a lost packet are left out.
    pub delay_us: Option<Summary>,
}

/// The kernel's answer, measured in the guest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelAnswer {
    pub kernel: String,
    /// The qdisc tree and its counters at the end, as `tc -s qdisc show` printed them.
    pub qdiscs: String,
    pub window_s: f64,
    pub flows: Vec<FlowResult>,
    /// The bottleneck's delivered rate over the window, and its drops and backlog at the end.
    pub link_rate_bps: f64,
    pub link_drops: u64,
    pub link_backlog_pkts: u64,
    /// Senders' sockets that refused a packet (their buffer full of queued packets).
    pub sender_refused: u64,
    /// Datagrams the receiver's full socket buffers dropped (`Udp: RcvbufErrors`): the receiver,
    /// not the link, fell behind.
    pub receiver_drops: u64,
    /// The link was saturated: delivered at >= 90 % of its rate with drops or a backlog.
    pub saturated: bool,
}

/// The model's or the harness's answer (per-flow shares; delays where measured).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OtherAnswer {
    pub source: String,
    pub flows: Vec<FlowResult>,
}

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShareRow {
    pub flow: usize,
    pub weight: u32,
    pub kernel: f64,
    pub model: Option<f64>,
    pub harness: Option<f64>,
    /// qfq with more than one class per aggregate: Linux QFQ+'s fluid share ([`qfq_plus_shares`]
    /// over the flows that delivered anything), the reference the kernel is then judged against.
    #[serde(default)]
    pub qfq_plus: Option<f64>,
    pub kernel_backlogged: bool,
    pub kernel_delay_p50_us: Option<f64>,
    pub model_delay_p50_us: Option<f64>,
    pub harness_delay_p50_us: Option<f64>,
}

/// The whole result of `schedlab qdisc` (JSON: `schedlab.qdisc` v1).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QdiscReport {
    pub schema: String,
    pub plan: Plan,
    pub kernel: KernelAnswer,
    pub model: Option<OtherAnswer>,
    pub harness: Option<OtherAnswer>,
    pub rows: Vec<ShareRow>,
    /// Share agreement limit (absolute difference of shares) for saturated weighted flows.
    pub tolerance: f64,
    /// The verdict: `agree`, `disagree` (with the flows that differ), `not judged` (why).
    pub verdict: String,
    pub agree: Option<bool>,
    /// Guest boot figures: command start (guest uptime) and wall time of the whole guest run.
    pub guest_boot_s: Option<f64>,
    pub guest_wall_s: f64,
}

pub const SCHEMA: &str = "schedlab.qdisc/1";
/// Shares of saturated weighted flows must agree within this (absolute) difference.
pub const TOLERANCE: f64 = 0.05;

/// Sets the answers side by side and judges the shares of saturated flows of weighted policies.
pub fn compare(
    plan: Plan,
    kernel: KernelAnswer,
    model: Option<OtherAnswer>,
    harness: Option<OtherAnswer>,
    guest_boot_s: Option<f64>,
    guest_wall_s: f64,
) -> QdiscReport {
    let p50 = |f: Option<&FlowResult>| f.and_then(|f| f.delay_us.as_ref()).map(|s| s.p50);
    let plus = qfq_aggregates_merge(&plan)
        .then(|| {
            let active: Vec<bool> = (0..plan.flows.len()).map(|i| kernel.flows.get(i).is_some_and(|f| f.bytes > 0)).collect();
            qfq_plus_shares(&plan, &active)
        })
        .flatten();
    let rows: Vec<ShareRow> = kernel
        .flows
        .iter()
        .map(|k| {
            let m = model.as_ref().and_then(|a| a.flows.get(k.flow));
            let h = harness.as_ref().and_then(|a| a.flows.get(k.flow));
            ShareRow {
                flow: k.flow,
                weight: plan.flows[k.flow].weight,
                kernel: k.share,
                model: m.map(|f| f.share),
                harness: h.map(|f| f.share),
                qfq_plus: plus.as_ref().and_then(|p| p.get(k.flow).copied()),
                kernel_backlogged: k.backlogged,
                kernel_delay_p50_us: k.delay_us.as_ref().map(|s| s.p50),
                model_delay_p50_us: p50(m),
                harness_delay_p50_us: p50(h),
            }
        })
        .collect();
    let (verdict, agree) = judge(&plan, &kernel, &rows);
    QdiscReport {
        schema: SCHEMA.into(),
        plan,
        kernel,
        model,
        harness,
        rows,
        tolerance: TOLERANCE,
        verdict,
        agree,
        guest_boot_s,
        guest_wall_s,
    }
}

fn judge(plan: &Plan, kernel: &KernelAnswer, rows: &[ShareRow]) -> (String, Option<bool>) {
    if !plan.alg.weighted() {
        return (format!("not judged: {} shares are printed, not judged (only drr and qfq are)", plan.alg.qdisc()), None);
    }
    if !kernel.saturated {
        return (
            format!(
                "not judged: the bottleneck was not saturated (delivered {:.2} of {:.2} Mb/s, {} drops, {} queued): raise the offered rates or lower -b",
                kernel.link_rate_bps / 1e6,
                plan.link_bps as f64 / 1e6,
                kernel.link_drops,
                kernel.link_backlog_pkts
            ),
            None,
        );
    }
    let judged: Vec<&ShareRow> = rows.iter().filter(|r| r.kernel_backlogged).collect();
    if judged.is_empty() {
        return ("not judged: no flow was backlogged in the kernel".into(), None);
    }
    let mut bad = Vec::new();
    // With aggregates of several classes the kernel runs QFQ+, not the QFQ of the model and the
    // harness: it is judged against QFQ+'s fluid shares instead.
    let plus = qfq_aggregates_merge(plan);
    for r in &judged {
        let mut refs = vec![("model", r.model), ("harness", r.harness)];
        if plus {
            refs.push(("qfq+ fluid", r.qfq_plus));
        }
        for (name, v) in refs {
            if let Some(v) = v {
                if (v - r.kernel).abs() > TOLERANCE {
                    bad.push(format!("flow {} kernel {:.4} vs {name} {:.4}", r.flow, r.kernel, v));
                }
            }
        }
    }
    let unsat = rows.len() - judged.len();
    let note = if unsat > 0 { format!(" ({unsat} flow(s) not backlogged, not judged)") } else { String::new() };
    let note = if plus {
        format!(
            "{note} (Linux's qfq is QFQ+ and puts up to {n} classes of one weight and max length into an aggregate weighing all of them, idle or not: the model and the harness run the same, qfq+:{n}, and QFQ+'s fluid shares are a third reference; --qfq-agg 1 gives one class per aggregate, plain QFQ)",
            n = plan.qfq_agg_classes
        )
    } else {
        note
    };
    if bad.is_empty() {
        (format!("agree: {} backlogged flow(s) within {TOLERANCE} of each other's shares{note}", judged.len()), Some(true))
    } else {
        (format!("disagree: {}{note}", bad.join("; ")), Some(false))
    }
}

/// Fills `share` and `rate_bps` from `bytes` over a window of `window_s` seconds.
pub fn fill_shares(flows: &mut [FlowResult], window_s: f64) {
    let total: u64 = flows.iter().map(|f| f.bytes).sum();
    for f in flows.iter_mut() {
        f.share = if total > 0 { f.bytes as f64 / total as f64 } else { 0.0 };
        f.rate_bps = if window_s > 0.0 { f.bytes as f64 * 8.0 / window_s } else { 0.0 };
    }
}

impl QdiscReport {
    /// The text table.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let k = &self.kernel;
        let _ = writeln!(
            s,
            "kernel {}: {} under tbf {:.3} Mb/s, {} client(s), window {:.2} s after {:.2} s warm-up; seed {}",
            k.kernel,
            self.plan.alg.qdisc(),
            self.plan.link_bps as f64 / 1e6,
            self.plan.clients.len(),
            k.window_s,
            self.plan.warmup_s,
            self.plan.seed
        );
        let _ = writeln!(
            s,
            "bottleneck: delivered {:.3} Mb/s, {} drops, {} packets queued at the end, {} refused by full sender sockets, {} dropped at the receiver: {}",
            k.link_rate_bps / 1e6,
            k.link_drops,
            k.link_backlog_pkts,
            k.sender_refused,
            k.receiver_drops,
            if k.saturated { "saturated" } else { "NOT saturated" }
        );
        let plus = self.rows.iter().any(|r| r.qfq_plus.is_some());
        let _ = writeln!(
            s,
            "flow  weight   kernel    model  harness{}  backlogged  delay p50 us (kernel / model / harness)",
            if plus { "     qfq+" } else { "" }
        );
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
        let d = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:>4}  {:>6}  {:>7.4}  {:>7}  {:>7}{}  {:>10}  {} / {} / {}",
                r.flow,
                r.weight,
                r.kernel,
                f(r.model),
                f(r.harness),
                if plus { format!("  {:>7}", f(r.qfq_plus)) } else { String::new() },
                if r.kernel_backlogged { "yes" } else { "no" },
                d(r.kernel_delay_p50_us),
                d(r.model_delay_p50_us),
                d(r.harness_delay_p50_us)
            );
        }
        let _ = writeln!(s, "delay under emulation is printed, not judged");
        let _ = writeln!(s, "verdict: {}", self.verdict);
        s
    }
}

/// The plan the unit tests share: two saturating 10 Mb/s senders, weights 100:1, a 5 Mb/s link.
#[cfg(test)]
pub(crate) fn test_plan(alg: Alg) -> Plan {
    Plan {
        alg,
        flows: vec![Flow { weight: 100, max_len: 1500 }, Flow { weight: 1, max_len: 1500 }],
        clients: vec![vec![Step { duration_ns: 3_000_000_000, rate_bps: 10_000_000, pkt_len: 1500, burst: 1 }]; 2],
        link_bps: 5_000_000,
        queue_pkts: 1000,
        warmup_s: 1.0,
        traffic: "t".into(),
        seed: 1,
        qfq_agg_classes: LINUX_QFQ_AGG_CLASSES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(alg: Alg) -> Plan {
        test_plan(alg)
    }

    fn answer(shares: &[(f64, bool)], saturated: bool) -> KernelAnswer {
        KernelAnswer {
            kernel: "6.12".into(),
            qdiscs: String::new(),
            window_s: 2.0,
            flows: shares
                .iter()
                .enumerate()
                .map(|(i, &(s, b))| FlowResult { flow: i, share: s, backlogged: b, ..Default::default() })
                .collect(),
            link_rate_bps: 5e6,
            link_drops: 10,
            link_backlog_pkts: 3,
            sender_refused: 0,
            receiver_drops: 0,
            saturated,
        }
    }

    fn other(shares: &[f64]) -> OtherAnswer {
        OtherAnswer {
            source: "m".into(),
            flows: shares.iter().enumerate().map(|(i, &s)| FlowResult { flow: i, share: s, ..Default::default() }).collect(),
        }
    }

    #[test]
    fn shares_within_the_tolerance_agree_and_beyond_it_do_not() {
        let r = compare(plan(Alg::Drr), answer(&[(0.97, true), (0.03, true)], true), Some(other(&[0.99, 0.01])), None, None, 1.0);
        assert_eq!(r.agree, Some(true), "{}", r.verdict);
        let r = compare(plan(Alg::Drr), answer(&[(0.90, true), (0.10, true)], true), Some(other(&[0.99, 0.01])), None, None, 1.0);
        assert_eq!(r.agree, Some(false), "{}", r.verdict);
        assert!(r.verdict.contains("flow 0"), "{}", r.verdict);
    }

    #[test]
    fn an_unsaturated_link_or_an_unweighted_policy_is_not_judged() {
        let r = compare(plan(Alg::Drr), answer(&[(0.5, true), (0.5, true)], false), Some(other(&[0.99, 0.01])), None, None, 1.0);
        assert_eq!(r.agree, None);
        assert!(r.verdict.contains("not saturated"), "{}", r.verdict);
        let r = compare(plan(Alg::Fq), answer(&[(0.5, true), (0.5, true)], true), None, None, None, 1.0);
        assert_eq!(r.agree, None);
    }

    /// The seed's flowsets: flow 0 weight 100, flows 1..=16 weight 1, all max length 1500.
    fn seed_plan(agg: u32) -> Plan {
        let mut p = plan(Alg::Qfq);
        p.flows = std::iter::once(Flow { weight: 100, max_len: 1500 })
            .chain(std::iter::repeat_n(Flow { weight: 1, max_len: 1500 }, 16))
            .collect();
        p.qfq_agg_classes = agg;
        p
    }

    #[test]
    fn qfq_plus_weighs_an_aggregate_by_its_configured_classes() {
        let mut active = vec![false; 17];
        active[0] = true;
        active[1] = true;
        // Eight weight-1 classes per aggregate: flow 1 alone in an aggregate of weight 8.
        let s = qfq_plus_shares(&seed_plan(8), &active).unwrap();
        assert!((s[0] - 100.0 / 108.0).abs() < 1e-12, "{s:?}");
        assert!((s[1] - 8.0 / 108.0).abs() < 1e-12, "{s:?}");
        assert!(s[2..].iter().all(|x| *x == 0.0));
        // One class per aggregate: plain QFQ's 100:1.
        let s = qfq_plus_shares(&seed_plan(1), &active).unwrap();
        assert!((s[0] - 100.0 / 101.0).abs() < 1e-12, "{s:?}");
        // Flows 1 and 2 in the same aggregate of 4 split its weight 4 by DRR; flow 5 opens the
        // second aggregate (flows 5..=8), weight 4 too.
        let mut active = vec![false; 17];
        for i in [1, 2, 5] {
            active[i] = true;
        }
        let s = qfq_plus_shares(&seed_plan(4), &active).unwrap();
        assert!((s[1] - 0.25).abs() < 1e-12 && (s[2] - 0.25).abs() < 1e-12 && (s[5] - 0.5).abs() < 1e-12, "{s:?}");
        assert!(qfq_plus_shares(&plan(Alg::Drr), &[true, true]).is_none());
        // Flows merge into an aggregate only where two share a weight and a max length.
        assert!(qfq_aggregates_merge(&seed_plan(8)) && qfq_aggregates_merge(&seed_plan(2)));
        assert!(!qfq_aggregates_merge(&seed_plan(1)) && !qfq_aggregates_merge(&plan(Alg::Qfq)));
    }

    #[test]
    fn qfq_with_aggregates_is_judged_against_qfq_plus_in_the_model_and_the_fluid() {
        let mut k = answer(&[(0.93, true), (0.07, true)], true);
        k.flows.extend((2..17).map(|i| FlowResult { flow: i, ..Default::default() }));
        for f in &mut k.flows[..2] {
            f.bytes = 1;
        }
        // The model's QFQ+8 answer (100/108) agrees; plain QFQ's (100/101) would not.
        let r = compare(seed_plan(8), k.clone(), Some(other(&[0.926, 0.074])), None, None, 1.0);
        assert_eq!(r.agree, Some(true), "{}", r.verdict);
        assert!(r.verdict.contains("QFQ+") && r.verdict.contains("qfq+:8"), "{}", r.verdict);
        assert!(r.text().contains("qfq+"), "{}", r.text());
        let m = other(&[0.99, 0.01]);
        let r = compare(seed_plan(8), k.clone(), Some(m.clone()), None, None, 1.0);
        assert_eq!(r.agree, Some(false), "{}", r.verdict);
        // The same kernel figures with one class per aggregate: the model's 0.99 is the reference.
        let r = compare(seed_plan(1), k, Some(m), None, None, 1.0);
        assert_eq!(r.agree, Some(false), "{}", r.verdict);
        assert!(r.rows.iter().all(|r| r.qfq_plus.is_none()));
    }

    #[test]
    fn plans_the_kernel_cannot_carry_are_refused_with_the_client_named() {
        let mut p = plan(Alg::Qfq);
        p.clients[1][0].pkt_len = 9000;
        assert!(p.validate().unwrap_err().contains("client 1"));
        let mut p = plan(Alg::Qfq);
        p.flows[0].weight = 5000;
        assert!(p.validate().unwrap_err().contains("1024"));
        let mut p = plan(Alg::Qfq);
        p.qfq_agg_classes = 3;
        assert!(p.validate().unwrap_err().contains("1, 2, 4 or 8"));
        assert!(plan(Alg::Drr).validate().is_ok());
    }
}
