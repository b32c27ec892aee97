//! [`PolicySpec`]: the one place where a policy's *name* becomes a policy.
//!
//! Both front ends (the simulator and the real harness) and anything comparing them parse policy
//! names here, label them here and build them here, so a name means one policy everywhere and every
//! policy of this crate is reachable from every front end.
//!
//! ## Canonical names (the same in every dialect, case-insensitive)
//! | name | policy | label |
//! |---|---|---|
//! | `fifo` | [`Fifo`] | `FIFO` |
//! | `mrr` | [`RoundRobin`], the report's round robin over messages (§4) | `RR` |
//! | `rr'` (also `rrp`, `rr-prime`, `rrh`) | [`RoundRobinHead`], RR′ (§4) | `RR'` |
//! | `alpha:X` or a number `X` > 0 | [`AlphaSched`] with fixed α = X (§6) | `X` |
//! | `sf` (also `inf`, `alpha:inf`) | [`AlphaSched`] shortest remaining first, α = ∞ (§5) | `SF` |
//! | `track:LOW:HIGH[:GAIN]` | [`TrackSched`]: α tracking the queue, messages ranked by the current α (§13) | `trackLOW-HIGH[xGAIN]` |
//! | `track-insert:LOW:HIGH[:GAIN]` | [`AlphaSched`] with α tracking the queue, fixed into each message's priority at insertion | `track-insertLOW-HIGH[xGAIN]` |
//! | `prio` | [`AlphaSched`] with per-message α (§10) | `prio` |
//! | `drr` | [`Drr`], deficit round robin over weighted flows | `DRR` |
//! | `wf2qp` (also `wf2q+`) | [`Wf2qPlus`] over weighted flows | `WF2Q+` |
//! | `qfq` | [`Qfq`] over weighted flows | `QFQ` |
//! | `qfq+` or `qfq+:N` | [`Qfq::with_aggregates`]: QFQ+ as Linux's `qfq` runs it, up to N flows of one weight and max length per aggregate (default 8, Linux's on a veth) | `QFQ+N` |
//!
//! α = 0 is FIFO (`0`, `alpha:0`), and α ≥ 10⁶ is shortest-first (`1e6`), as in the report's listing.
//!
//! ## Dialect aliases (the seeds' own spellings)
//! Only two spellings depend on the front end, and the [`Dialect`] says which applies:
//! - `rr`: the simulator's (the report's) round robin over messages in [`Dialect::Sim`] (= `mrr`),
//!   but deficit round robin in [`Dialect::Sched`] (= `drr`), as the harness's `-alg rr` always was.
//! - the listing's negative α: `-1` is `mrr` and `-2` is `rr'` in [`Dialect::Sim`]; in
//!   [`Dialect::Sched`] a negative number is an error.
//!
//! [`PolicySpec::name`] gives the canonical name, which parses back to the same spec in every
//! dialect.
//!
//! ## Adding a policy
//! Add a variant to [`PolicySpec`], its spelling to [`PolicySpec::parse`], and an arm to
//! [`PolicySpec::name`], [`PolicySpec::label`], [`PolicySpec::family`] and [`PolicySpec::build`]; the
//! round-trip tests below then cover it.

use crate::alpha::{num_label, track_label, ALPHA_MAX};
use crate::{
    Alpha, AlphaConfig, AlphaSched, AnyPolicy, Drr, Fifo, FlowWeight, Qfq, RoundRobin, RoundRobinHead, TrackSched, Wf2qPlus,
};

/// α at or above this is shortest-first, as in the report's listing (`1e6`).
pub const ALPHA_SF: f64 = 1e6;

/// The one default α (the report's recommendation): `-alg alpha` without `-alpha`, and the α of a
/// `prio` message that carries none.
pub const DEFAULT_ALPHA: f64 = 10.0;

/// Which front end's spellings apply to the names the seeds use differently (`rr`, `-1`, `-2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// The simulator (`schedlab sim -a ...`): `rr` and `-1` are the report's message round robin,
    /// `-2` is RR′.
    Sim,
    /// The real harness (`schedlab sched -- -alg ...`): `rr` is deficit round robin; no negative α.
    Sched,
}

/// A policy by name: what [`PolicySpec::parse`] understands and [`PolicySpec::build`] makes.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySpec {
    /// First in, first out (α = 0).
    Fifo,
    /// The report's round robin over messages (§4; listing α = −1).
    RoundRobin,
    /// RR′: round robin with new messages at the head (§4; listing α = −2).
    RoundRobinHead,
    /// Alpha scheduling with a fixed α in (0, [`ALPHA_SF`]) (§6), kept as given for labels.
    Alpha(f64),
    /// Shortest remaining first (α = ∞, §5).
    ShortestFirst,
    /// α tracking the queue (§13): `clamp(gain × queued packets, low, high)`, every waiting
    /// message ranked by the current α ([`TrackSched`]). `high` may be infinite (no upper limit
    /// below [`ALPHA_MAX`]).
    Track { low: f64, high: f64, gain: f64 },
    /// α tracking the queue, fixed into each message's priority when it is inserted (the first
    /// implementation of §13; [`AlphaConfig::tracking`]).
    TrackInsert { low: f64, high: f64, gain: f64 },
    /// Per-message α (§10): each message carries its α; [`BuildOptions::default_alpha`] otherwise.
    Prio,
    /// Deficit round robin over weighted flows.
    Drr,
    /// WF2Q+ over weighted flows.
    Wf2qPlus,
    /// Quick Fair Queueing over weighted flows.
    Qfq,
    /// QFQ+ (Linux's `qfq`): up to N flows of one weight and max length per aggregate.
    QfqPlus(u32),
}

/// Flows per aggregate of `qfq+` without `:N`: Linux's on a device whose transmit queue holds 7
/// or more packets (a veth's 1000 among them).
pub const QFQ_PLUS_DEFAULT_AGG: u32 = 8;

/// What a policy schedules, which tells a front end how to cut traffic into messages and whether
/// it needs flow weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// FIFO: the order is the arrival order whatever a message is.
    Fifo,
    /// A message-level policy (RR, RR′, the alpha family): a burst is one message.
    Message,
    /// A flow-level weighted policy (DRR, WF2Q+, QFQ): needs one [`FlowWeight`] per flow.
    Flow,
}

/// Why a policy name was refused. Each message says what to write instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// Not a policy name.
    #[error("unknown policy '{name}': use {}", vocabulary(*dialect))]
    Unknown { name: String, dialect: Dialect },
    /// An α value that is not a number or out of range.
    #[error("policy '{name}': {msg}")]
    BadAlpha { name: String, msg: String },
    /// A malformed `track:LOW:HIGH[:GAIN]`.
    #[error("policy '{name}': {msg}; write track:LOW:HIGH[:GAIN] (or track-insert:...) with 0 <= LOW <= HIGH <= 1e9 (HIGH may be inf) and 0 <= GAIN <= 1e9, e.g. track:1:100")]
    BadTrack { name: String, msg: String },
    /// A malformed `qfq+:N`.
    #[error("policy '{name}': write qfq+:N with N flows per aggregate, 1 to 64 (Linux takes 1, 2, 4 or 8), e.g. qfq+:8")]
    BadAggregate { name: String },
}

/// The names a dialect accepts, for error and help texts.
pub fn vocabulary(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sim => {
            "fifo, rr (= mrr, the report's message round robin), mrr, rr', a number alpha >= 0 (or -2/-1/0 as in the \
             listing: RR', RR, FIFO; >= 1e6: SF), alpha:X, sf, track:LOW:HIGH[:GAIN], track-insert:LOW:HIGH[:GAIN], prio, drr, wf2qp (wf2q+), qfq, qfq+[:N]"
        }
        Dialect::Sched => {
            "fifo, rr (= drr, deficit round robin), drr, wf2qp (wf2q+), qfq, alpha:X or a number alpha >= 0 \
             (>= 1e6: SF), sf, mrr (message round robin), rr', track:LOW:HIGH[:GAIN], track-insert:LOW:HIGH[:GAIN], prio, qfq+[:N] (QFQ+, N flows per aggregate)"
        }
    }
}

/// What [`PolicySpec::build`] needs besides the name.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildOptions<'a> {
    /// One entry per flow, for the flow-level policies (flow ids index it).
    pub flows: &'a [FlowWeight],
    /// §11: keep each flow's messages in order (the alpha family; others ignore it).
    pub in_order: bool,
    /// α of a `prio` message that carries none ([`DEFAULT_ALPHA`] if unset).
    pub default_alpha: Option<Alpha>,
}

impl<'a> BuildOptions<'a> {
    /// Sets the flows of the flow-level policies.
    pub fn flows(mut self, flows: &'a [FlowWeight]) -> Self {
        self.flows = flows;
        self
    }
    /// Sets §11 in-order delivery per flow (alpha family).
    pub fn in_order(mut self, on: bool) -> Self {
        self.in_order = on;
        self
    }
    /// Sets the α `prio` uses for messages without their own.
    pub fn default_alpha(mut self, alpha: Alpha) -> Self {
        self.default_alpha = Some(alpha);
        self
    }
}

impl PolicySpec {
    /// Parses a policy name (case-insensitive, surrounding blanks ignored) in a front end's dialect.
    pub fn parse(s: &str, dialect: Dialect) -> Result<PolicySpec, SpecError> {
        let t = s.trim();
        let low = t.to_ascii_lowercase();
        let unknown = || SpecError::Unknown { name: s.to_string(), dialect };
        match low.as_str() {
            "fifo" => return Ok(PolicySpec::Fifo),
            "mrr" => return Ok(PolicySpec::RoundRobin),
            "rr'" | "rrp" | "rr-prime" | "rrh" => return Ok(PolicySpec::RoundRobinHead),
            "rr" => {
                return Ok(match dialect {
                    Dialect::Sim => PolicySpec::RoundRobin,
                    Dialect::Sched => PolicySpec::Drr,
                })
            }
            "sf" | "inf" | "alpha:inf" => return Ok(PolicySpec::ShortestFirst),
            "prio" => return Ok(PolicySpec::Prio),
            "drr" => return Ok(PolicySpec::Drr),
            "wf2qp" | "wf2q+" => return Ok(PolicySpec::Wf2qPlus),
            "qfq" => return Ok(PolicySpec::Qfq),
            "qfq+" => return Ok(PolicySpec::QfqPlus(QFQ_PLUS_DEFAULT_AGG)),
            "alpha" => {
                return Err(SpecError::BadAlpha {
                    name: s.into(),
                    msg: "alpha needs a value: write alpha:X or just the number X (e.g. alpha:10 or 10)".into(),
                })
            }
            _ => {}
        }
        if let Some(v) = low.strip_prefix("qfq+:") {
            return match v.trim().parse::<u32>() {
                Ok(n) if (1..=64).contains(&n) => Ok(PolicySpec::QfqPlus(n)),
                _ => Err(SpecError::BadAggregate { name: s.into() }),
            };
        }
        if let Some(rest) = low.strip_prefix("track:") {
            let (low, high, gain) = Self::parse_track(s, rest)?;
            return Ok(PolicySpec::Track { low, high, gain });
        }
        if let Some(rest) = low.strip_prefix("track-insert:") {
            let (low, high, gain) = Self::parse_track(s, rest)?;
            return Ok(PolicySpec::TrackInsert { low, high, gain });
        }
        if let Some(v) = low.strip_prefix("alpha:") {
            let x: f64 = v.trim().parse().map_err(|_| SpecError::BadAlpha {
                name: s.into(),
                msg: format!("'{v}' is not a number; write alpha:X with X >= 0 (e.g. alpha:10)"),
            })?;
            if x < 0.0 {
                return Err(SpecError::BadAlpha { name: s.into(), msg: format!("alpha {x} is negative; use X >= 0") });
            }
            return Self::from_alpha(s, x);
        }
        let x: f64 = t.parse().map_err(|_| unknown())?;
        if x < 0.0 {
            return match (dialect, x) {
                (Dialect::Sim, -1.0) => Ok(PolicySpec::RoundRobin),
                (Dialect::Sim, -2.0) => Ok(PolicySpec::RoundRobinHead),
                (Dialect::Sim, _) => Err(SpecError::BadAlpha {
                    name: s.into(),
                    msg: "negative alpha: only -2 (RR') and -1 (RR) have a meaning, as in the listing".into(),
                }),
                (Dialect::Sched, _) => Err(SpecError::BadAlpha {
                    name: s.into(),
                    msg: "negative alpha: use alpha >= 0 (for round robin write mrr or rr', for DRR rr or drr)".into(),
                }),
            };
        }
        Self::from_alpha(s, x)
    }

    /// The seed harness's pair `-alg NAME [-alpha X]`: `-alg alpha` is `alpha:X` with X =
    /// `alpha` or [`DEFAULT_ALPHA`]; any other name parses as [`PolicySpec::parse`] does, and then
    /// `alpha` must be `None` (it means nothing to the other policies).
    pub fn parse_with_alpha(name: &str, alpha: Option<f64>, dialect: Dialect) -> Result<PolicySpec, SpecError> {
        if name.trim().eq_ignore_ascii_case("alpha") {
            let x = alpha.unwrap_or(DEFAULT_ALPHA);
            if x.is_nan() || x < 0.0 {
                return Err(SpecError::BadAlpha { name: name.into(), msg: format!("alpha {x} is not a number >= 0") });
            }
            return Self::from_alpha(name, x);
        }
        let spec = Self::parse(name, dialect)?;
        match alpha {
            Some(x) => Err(SpecError::BadAlpha {
                name: name.into(),
                msg: format!("an alpha value ({x}) is only used with the name 'alpha' (write alpha:{x} instead)"),
            }),
            None => Ok(spec),
        }
    }

    /// A non-negative α: 0 is FIFO, ≥ [`ALPHA_SF`] (or ∞) is shortest-first, else fixed α.
    fn from_alpha(name: &str, x: f64) -> Result<PolicySpec, SpecError> {
        if x == 0.0 {
            Ok(PolicySpec::Fifo)
        } else if x >= ALPHA_SF {
            Ok(PolicySpec::ShortestFirst)
        } else if x > 0.0 && x.is_finite() {
            Alpha::new(x).map_err(|e| SpecError::BadAlpha { name: name.into(), msg: e.to_string() })?;
            Ok(PolicySpec::Alpha(x))
        } else {
            Err(SpecError::BadAlpha { name: name.into(), msg: format!("alpha {x} is not a number >= 0") })
        }
    }

    fn parse_track(name: &str, rest: &str) -> Result<(f64, f64, f64), SpecError> {
        let bad = |msg: String| SpecError::BadTrack { name: name.into(), msg };
        let f: Vec<&str> = rest.split(':').collect();
        if !(2..=3).contains(&f.len()) {
            return Err(bad(format!("expected 2 or 3 numbers after 'track:', got {}", f.len())));
        }
        let num = |x: &str, what: &str| x.trim().parse::<f64>().map_err(|_| bad(format!("{what} '{x}' is not a number")));
        let (low, high) = (num(f[0], "LOW")?, num(f[1], "HIGH")?);
        let gain = if f.len() == 3 { num(f[2], "GAIN")? } else { 1.0 };
        for (v, what) in [(low, "LOW"), (high, "HIGH")] {
            // HIGH = inf: no upper limit (α is then capped at ALPHA_MAX, as every α is).
            let inf_high = what == "HIGH" && v == f64::INFINITY;
            let in_range = v.is_finite() && (0.0..=ALPHA_MAX).contains(&v);
            if !(inf_high || in_range) {
                return Err(bad(format!("{what} {v} must be in [0, {ALPHA_MAX}] (HIGH may also be inf)")));
            }
        }
        if high < low {
            return Err(bad(format!("HIGH {high} is below LOW {low}")));
        }
        if !(gain.is_finite() && (0.0..=ALPHA_MAX).contains(&gain)) {
            return Err(bad(format!("GAIN {} must be a number in [0, {ALPHA_MAX}]", num_label(gain))));
        }
        Ok((low, high, gain))
    }

    /// The canonical name: parses back to this spec in every dialect.
    pub fn name(&self) -> String {
        match self {
            PolicySpec::Fifo => "fifo".into(),
            PolicySpec::RoundRobin => "mrr".into(),
            PolicySpec::RoundRobinHead => "rr'".into(),
            PolicySpec::Alpha(a) => format!("alpha:{a}"),
            PolicySpec::ShortestFirst => "sf".into(),
            PolicySpec::Track { low, high, gain } => format!("track:{low}:{high}:{gain}"),
            PolicySpec::TrackInsert { low, high, gain } => format!("track-insert:{low}:{high}:{gain}"),
            PolicySpec::Prio => "prio".into(),
            PolicySpec::Drr => "drr".into(),
            PolicySpec::Wf2qPlus => "wf2qp".into(),
            PolicySpec::Qfq => "qfq".into(),
            PolicySpec::QfqPlus(n) => format!("qfq+:{n}"),
        }
    }

    /// The row label of tables, as in the report (`RR'`, `RR`, `FIFO`, `10`, `SF`, `track1-100`,
    /// `prio`) and for the flow-level policies `DRR`, `WF2Q+`, `QFQ`.
    pub fn label(&self) -> String {
        match self {
            PolicySpec::Fifo => "FIFO".into(),
            PolicySpec::RoundRobin => "RR".into(),
            PolicySpec::RoundRobinHead => "RR'".into(),
            PolicySpec::Alpha(a) => format!("{a}"),
            PolicySpec::ShortestFirst => "SF".into(),
            PolicySpec::Track { low, high, gain } => track_label("track", *low, *high, *gain),
            PolicySpec::TrackInsert { low, high, gain } => track_label("track-insert", *low, *high, *gain),
            PolicySpec::Prio => "prio".into(),
            PolicySpec::Drr => "DRR".into(),
            PolicySpec::Wf2qPlus => "WF2Q+".into(),
            PolicySpec::Qfq => "QFQ".into(),
            PolicySpec::QfqPlus(n) => format!("QFQ+{n}"),
        }
    }

    /// What the policy schedules (see [`Family`]).
    pub fn family(&self) -> Family {
        match self {
            PolicySpec::Fifo => Family::Fifo,
            PolicySpec::Drr | PolicySpec::Wf2qPlus | PolicySpec::Qfq | PolicySpec::QfqPlus(_) => Family::Flow,
            _ => Family::Message,
        }
    }

    /// Needs one [`FlowWeight`] per flow ([`Family::Flow`]).
    pub fn flow_level(&self) -> bool {
        self.family() == Family::Flow
    }

    /// The alpha configuration of the alpha family (`alpha:X`, `sf`, `track:..`, `track-insert:..`,
    /// `prio`); `None` for the others. `track:` is built as a [`TrackSched`] from its `tracking`.
    pub fn alpha_config(&self, opts: &BuildOptions<'_>) -> Option<AlphaConfig> {
        let a = |x: f64| Alpha::new(x).expect("validated by parse");
        let mut cfg = match self {
            PolicySpec::Alpha(x) => AlphaConfig::fixed(a(*x)),
            PolicySpec::ShortestFirst => AlphaConfig::shortest_first(),
            PolicySpec::Track { low, high, gain } | PolicySpec::TrackInsert { low, high, gain } => {
                AlphaConfig::tracking(a(*low), a(high.min(ALPHA_MAX)), *gain)
            }
            PolicySpec::Prio => AlphaConfig::fixed(opts.default_alpha.unwrap_or_else(|| a(DEFAULT_ALPHA))),
            _ => return None,
        };
        cfg.in_order = opts.in_order;
        Some(cfg)
    }

    /// Builds the policy. Flow-level policies get `opts.flows` (messages of flows beyond it are
    /// refused with [`crate::PolicyError::UnknownFlow`]); the others ignore it.
    ///
    /// Specs made by hand (not by [`PolicySpec::parse`]) with an α out of range panic here.
    pub fn build<T: Copy>(&self, opts: &BuildOptions<'_>) -> AnyPolicy<T> {
        match self {
            PolicySpec::Fifo => AnyPolicy::Fifo(Fifo::new()),
            PolicySpec::RoundRobin => AnyPolicy::RoundRobin(RoundRobin::new()),
            PolicySpec::RoundRobinHead => AnyPolicy::RoundRobinHead(RoundRobinHead::new()),
            PolicySpec::Drr => AnyPolicy::Drr(Drr::new(opts.flows)),
            PolicySpec::Wf2qPlus => AnyPolicy::Wf2qPlus(Wf2qPlus::new(opts.flows)),
            PolicySpec::Qfq => AnyPolicy::Qfq(Qfq::new(opts.flows)),
            PolicySpec::QfqPlus(n) => AnyPolicy::Qfq(Qfq::with_aggregates(opts.flows, *n)),
            PolicySpec::Track { .. } => {
                let cfg = self.alpha_config(opts).expect("alpha family");
                AnyPolicy::Track(TrackSched::new(cfg.tracking.expect("tracking"), cfg.in_order))
            }
            alpha => AnyPolicy::Alpha(AlphaSched::new(alpha.alpha_config(opts).expect("alpha family"))),
        }
    }

    /// One spec of each policy of the crate (α = 10, tracking 1..100), for tests and help texts.
    pub fn examples() -> Vec<PolicySpec> {
        vec![
            PolicySpec::Fifo,
            PolicySpec::RoundRobin,
            PolicySpec::RoundRobinHead,
            PolicySpec::Alpha(10.0),
            PolicySpec::ShortestFirst,
            PolicySpec::Track { low: 1.0, high: 100.0, gain: 1.0 },
            PolicySpec::TrackInsert { low: 1.0, high: 100.0, gain: 1.0 },
            PolicySpec::Prio,
            PolicySpec::Drr,
            PolicySpec::Wf2qPlus,
            PolicySpec::Qfq,
            PolicySpec::QfqPlus(QFQ_PLUS_DEFAULT_AGG),
        ]
    }
}

impl std::fmt::Display for PolicySpec {
    /// The canonical name ([`PolicySpec::name`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Policy};
    use proptest::prelude::*;

    const BOTH: [Dialect; 2] = [Dialect::Sim, Dialect::Sched];

    fn p(s: &str, d: Dialect) -> PolicySpec {
        PolicySpec::parse(s, d).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn the_seeds_spellings_keep_their_meaning() {
        // sim (the report's listing)
        assert_eq!(p("-2", Dialect::Sim), PolicySpec::RoundRobinHead);
        assert_eq!(p("-1", Dialect::Sim), PolicySpec::RoundRobin);
        assert_eq!(p("RR", Dialect::Sim), PolicySpec::RoundRobin);
        assert_eq!(p("RR'", Dialect::Sim), PolicySpec::RoundRobinHead);
        assert_eq!(p("0", Dialect::Sim), PolicySpec::Fifo);
        assert_eq!(p("FIFO", Dialect::Sim), PolicySpec::Fifo);
        assert_eq!(p("1e6", Dialect::Sim), PolicySpec::ShortestFirst);
        assert_eq!(p("SF", Dialect::Sim), PolicySpec::ShortestFirst);
        assert_eq!(p("10", Dialect::Sim), PolicySpec::Alpha(10.0));
        assert_eq!(p("track:1:100", Dialect::Sim), PolicySpec::Track { low: 1.0, high: 100.0, gain: 1.0 });
        assert_eq!(p("prio", Dialect::Sim), PolicySpec::Prio);
        // sched (-alg)
        assert_eq!(p("rr", Dialect::Sched), PolicySpec::Drr);
        assert_eq!(p("drr", Dialect::Sched), PolicySpec::Drr);
        assert_eq!(p("wf2qp", Dialect::Sched), PolicySpec::Wf2qPlus);
        assert_eq!(p("wf2q+", Dialect::Sched), PolicySpec::Wf2qPlus);
        assert_eq!(p("qfq", Dialect::Sched), PolicySpec::Qfq);
        assert_eq!(p("fifo", Dialect::Sched), PolicySpec::Fifo);
        assert_eq!(p("sf", Dialect::Sched), PolicySpec::ShortestFirst);
        assert_eq!(p("alpha:10", Dialect::Sched), PolicySpec::Alpha(10.0));
    }

    #[test]
    fn every_policy_is_reachable_from_both_dialects_under_its_canonical_name() {
        for s in PolicySpec::examples() {
            for d in BOTH {
                assert_eq!(p(&s.name(), d), s, "{} in {d:?}", s.name());
                assert_eq!(p(&s.name().to_uppercase(), d), s);
            }
        }
        // The catalogue covers every AnyPolicy variant.
        let mut kinds: Vec<&str> = PolicySpec::examples()
            .iter()
            .map(|s| match s.build::<u32>(&BuildOptions::default()) {
                AnyPolicy::Fifo(_) => "fifo",
                AnyPolicy::RoundRobin(_) => "rr",
                AnyPolicy::RoundRobinHead(_) => "rrh",
                AnyPolicy::Alpha(_) => "alpha",
                AnyPolicy::Track(_) => "track",
                AnyPolicy::Drr(_) => "drr",
                AnyPolicy::Wf2qPlus(_) => "wf2qp",
                AnyPolicy::Qfq(_) => "qfq",
            })
            .collect();
        kinds.dedup();
        assert_eq!(kinds, ["fifo", "rr", "rrh", "alpha", "track", "alpha", "drr", "wf2qp", "qfq"]);
        assert_eq!(p("qfq+", Dialect::Sched), PolicySpec::QfqPlus(8));
        assert_eq!(p("QFQ+:2", Dialect::Sim), PolicySpec::QfqPlus(2));
        assert!(PolicySpec::parse("qfq+:0", Dialect::Sched).unwrap_err().to_string().contains("qfq+:N"));
        assert!(PolicySpec::parse("qfq+:x", Dialect::Sim).is_err());
    }

    #[test]
    fn labels_are_the_reports_and_match_the_built_policy() {
        let labels: Vec<String> = PolicySpec::examples().iter().map(PolicySpec::label).collect();
        assert_eq!(
            labels,
            ["FIFO", "RR", "RR'", "10", "SF", "track1-100", "track-insert1-100", "prio", "DRR", "WF2Q+", "QFQ", "QFQ+8"]
        );
        let flows = [FlowWeight::new(1, 1500)];
        for s in PolicySpec::examples().into_iter().filter(|s| *s != PolicySpec::Prio) {
            assert_eq!(s.build::<u32>(&BuildOptions::default().flows(&flows)).label(), s.label());
        }
        assert_eq!(p("track:1:100:2", Dialect::Sim).label(), "track1-100x2");
        assert_eq!(p("track-insert:1:100:2", Dialect::Sim).label(), "track-insert1-100x2");
        assert_eq!(p("track:1:inf", Dialect::Sim).label(), "track1-inf");
        assert_eq!(p("track:1:inf", Dialect::Sim), PolicySpec::Track { low: 1.0, high: f64::INFINITY, gain: 1.0 });
        assert_eq!(p("track:1:100:0.000123456789123", Dialect::Sim).label(), "track1-100x1.23456789123e-4");
        assert_eq!(p("0.3", Dialect::Sim).label(), "0.3");
    }

    #[test]
    fn bad_names_say_what_to_write() {
        for d in BOTH {
            let e = PolicySpec::parse("bogus", d).unwrap_err().to_string();
            assert!(e.contains("unknown policy 'bogus'") && e.contains("wf2qp") && e.contains("rr'"), "{e}");
            assert!(PolicySpec::parse("alpha", d).unwrap_err().to_string().contains("alpha:10"));
            assert!(PolicySpec::parse("alpha:x", d).is_err());
            assert!(PolicySpec::parse("alpha:-3", d).is_err());
            assert!(PolicySpec::parse("track:100:1", d).unwrap_err().to_string().contains("below LOW"));
            assert!(PolicySpec::parse("track:1", d).is_err());
            assert!(PolicySpec::parse("track:1:2:-1", d).is_err());
            assert!(PolicySpec::parse("track:1:1e12", d).is_err());
            let e = PolicySpec::parse("track:1:100:1e308", d).unwrap_err().to_string();
            assert!(e.contains("GAIN 1e308 must be") && e.len() < 300, "{e}");
            assert!(PolicySpec::parse("track:inf:inf", d).is_err());
            assert!(PolicySpec::parse("track-insert:1", d).is_err());
            assert!(PolicySpec::parse("nan", d).is_err());
            assert!(PolicySpec::parse("-5", d).is_err());
            assert!(PolicySpec::parse("", d).is_err());
        }
        assert!(PolicySpec::parse("-1", Dialect::Sched).unwrap_err().to_string().contains("mrr"));
        assert!(PolicySpec::parse("-2", Dialect::Sched).is_err());
        assert!(vocabulary(Dialect::Sched).contains("rr (= drr"));
        assert!(vocabulary(Dialect::Sim).contains("rr (= mrr"));
    }

    #[test]
    fn the_seed_harness_alg_and_alpha_pair() {
        let d = Dialect::Sched;
        assert_eq!(PolicySpec::parse_with_alpha("alpha", None, d).unwrap(), PolicySpec::Alpha(DEFAULT_ALPHA));
        assert_eq!(PolicySpec::parse_with_alpha("alpha", Some(2.5), d).unwrap(), PolicySpec::Alpha(2.5));
        assert_eq!(PolicySpec::parse_with_alpha("alpha", Some(0.0), d).unwrap(), PolicySpec::Fifo);
        assert!(PolicySpec::parse_with_alpha("alpha", Some(-1.0), d).is_err());
        assert!(PolicySpec::parse_with_alpha("alpha", Some(f64::NAN), d).is_err());
        assert_eq!(PolicySpec::parse_with_alpha("rr", None, d).unwrap(), PolicySpec::Drr);
        assert!(PolicySpec::parse_with_alpha("sf", Some(3.0), d).unwrap_err().to_string().contains("alpha:3"));
    }

    #[test]
    fn alpha_edges_follow_the_listing() {
        for d in BOTH {
            assert_eq!(p("alpha:0", d), PolicySpec::Fifo);
            assert_eq!(p("alpha:inf", d), PolicySpec::ShortestFirst);
            assert_eq!(p("inf", d), PolicySpec::ShortestFirst);
            assert_eq!(p("999999", d), PolicySpec::Alpha(999_999.0));
            assert_eq!(p("2e6", d), PolicySpec::ShortestFirst);
            assert_eq!(p(" Alpha:2.5 ", d), PolicySpec::Alpha(2.5));
        }
    }

    #[test]
    fn build_passes_flows_in_order_and_the_prio_alpha() {
        let flows = [FlowWeight::new(1, 1500), FlowWeight::new(3, 1500)];
        let mut drr = PolicySpec::Drr.build::<u32>(&BuildOptions::default().flows(&flows));
        drr.enqueue(Message::new(0, 1, 1).with_bytes(1500)).unwrap();
        assert!(drr.enqueue(Message::new(0, 2, 1).with_bytes(1500)).is_err(), "flow 2 is not configured");
        let opts = BuildOptions::default().in_order(true).default_alpha(Alpha::new(3.0).unwrap());
        let cfg = PolicySpec::Prio.alpha_config(&opts).unwrap();
        assert!(cfg.in_order);
        assert_eq!(cfg.alpha, Alpha::new(3.0).unwrap());
        assert_eq!(PolicySpec::Prio.alpha_config(&BuildOptions::default()).unwrap().alpha, Alpha::new(10.0).unwrap());
        assert!(PolicySpec::Fifo.alpha_config(&opts).is_none());
        assert_eq!(PolicySpec::Drr.family(), Family::Flow);
        assert_eq!(PolicySpec::Fifo.family(), Family::Fifo);
        assert_eq!(PolicySpec::ShortestFirst.family(), Family::Message);
        assert!(PolicySpec::Qfq.flow_level() && !PolicySpec::RoundRobin.flow_level());
    }

    proptest! {
        /// Any α that parses round-trips through its canonical name, in both dialects.
        #[test]
        fn alpha_names_round_trip(x in 0.0f64..2e6, d in prop_oneof![Just(Dialect::Sim), Just(Dialect::Sched)]) {
            let s = PolicySpec::parse(&x.to_string(), d).unwrap();
            prop_assert_eq!(PolicySpec::parse(&s.name(), d).unwrap(), s.clone());
            prop_assert_eq!(PolicySpec::parse(&s.name(), Dialect::Sim).unwrap(), s);
        }

        /// Parsing never panics, whatever the input.
        #[test]
        fn parse_never_panics(s in ".{0,24}") {
            let _ = PolicySpec::parse(&s, Dialect::Sim);
            let _ = PolicySpec::parse(&s, Dialect::Sched);
        }

        #[test]
        fn track_round_trips(low in 0.0f64..100.0, span in 0.0f64..100.0, gain in 0.0f64..10.0) {
            let s = PolicySpec::Track { low, high: low + span, gain };
            let i = PolicySpec::TrackInsert { low, high: low + span, gain };
            for d in BOTH {
                prop_assert_eq!(PolicySpec::parse(&s.name(), d).unwrap(), s.clone());
                prop_assert_eq!(PolicySpec::parse(&i.name(), d).unwrap(), i.clone());
            }
        }
    }
}
