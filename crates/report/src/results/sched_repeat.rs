//! `schedlab sched --repeat N --json`: every run (a `schedlab.sched/1` result each), why each run
//! was set aside, and the median and spread of the headline figures over the kept runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::predict::{SetAside, Spread};
use super::sched::Sched;

super::schema_tag!(
    /// `"schedlab.sched-repeat/1"`.
    SchedRepeatSchema,
    "schedlab.sched-repeat",
    1
);

/// `--repeat N`'s document.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedRepeat {
    pub schema: SchedRepeatSchema,
    /// The runs in the order they were made.
    pub runs: Vec<Sched>,
    /// Per run (same order), why it was set aside: empty when kept.
    pub reasons: Vec<Vec<String>>,
    pub summary: Summary,
}

impl super::Kind for SchedRepeat {
    const NAME: &'static str = SchedRepeatSchema::NAME;
    const VERSION: u32 = SchedRepeatSchema::VERSION;
    const FILE: &'static str = "sched-repeat.schema.json";

    fn check_more(&self) -> Result<(), String> {
        if self.reasons.len() != self.runs.len() {
            return Err(format!("{} runs but {} lists of reasons", self.runs.len(), self.reasons.len()));
        }
        let aside = self.reasons.iter().filter(|r| !r.is_empty()).count();
        if self.summary.runs != self.runs.len() || self.summary.kept + aside != self.runs.len() {
            return Err(format!(
                "summary says {} runs, {} kept; the file has {} runs, {aside} set aside",
                self.summary.runs,
                self.summary.kept,
                self.runs.len()
            ));
        }
        Ok(())
    }
}

/// The summary of `--repeat N`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub runs: usize,
    pub kept: usize,
    /// The runs set aside (1-based) and why.
    pub set_aside: Vec<SetAside>,
    /// Per client, then `total`, over the kept runs (`null` spreads when none was kept).
    pub flows: Vec<FlowSpread>,
}

/// One flow's (a client's, or the total's) headline figures over the kept runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowSpread {
    /// `client0`, `client1`, ... or `total`.
    pub flow: String,
    pub rate_mbps: Option<Spread>,
    pub rate_mpps: Option<Spread>,
    /// Client enqueue to mark seen, µs.
    pub delay_p50_us: Option<Spread>,
    pub delay_p99_us: Option<Spread>,
}
