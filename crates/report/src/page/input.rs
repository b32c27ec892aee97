//! Reading result files and telling their kind from their content.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::results::burst::BurstSchema;
use crate::results::echo_bench::EchoBenchSchema;
use crate::results::notify::NotifySchema;
use crate::results::predict::PredictSchema;
use crate::results::rdma::RdmaSchema;
use crate::results::rdma_share::RdmaShareSchema;
use crate::results::sched::SchedSchema;
use crate::results::semtest::SemtestSchema;
use crate::results::sim::SimSchema;
use crate::results::trylock::TrylockSchema;

/// What a result file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `schedlab sim --json`.
    Sim,
    /// A `schedlab sweep` table (CSV).
    Sweep,
    /// `schedlab sim --csv` (per strategy and length rows).
    SimCsv,
    /// `schedlab sched --json`.
    Sched,
    /// `schedlab predict --json`.
    Predict,
    /// `schedlab trylock`, `notify` or `semtest --json`.
    Prims,
    /// `schedlab burst --json`.
    Burst,
    /// `schedlab echo-bench` (`results.json` in its `--out` folder).
    EchoBench,
    /// `schedlab rdma share --json`.
    RdmaShare,
    /// `schedlab qdisc --json` (the kernel's answer).
    Qdisc,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sim => "sim",
            Kind::Sweep => "sweep",
            Kind::SimCsv => "sim csv",
            Kind::Sched => "sched",
            Kind::Predict => "predict",
            Kind::Prims => "prims",
            Kind::Burst => "burst",
            Kind::EchoBench => "echo-bench",
            Kind::RdmaShare => "rdma share",
            Kind::Qdisc => "qdisc",
        }
    }
}

/// A CSV table: header and rows of text cells.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Index of a column.
    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }
}

/// The content of one result.
#[derive(Clone, Debug)]
pub enum Content {
    Json(Value),
    Table(Table),
}

/// One result file, read and recognised (or not).
#[derive(Clone, Debug)]
pub struct Input {
    /// The path as given.
    pub path: PathBuf,
    /// The file actually read (an echo-bench folder's results.json).
    pub file: PathBuf,
    pub content: Content,
    /// The kind, or why it was not recognised.
    pub kind: Result<Kind, String>,
}

use crate::export::split_csv;

fn parse_csv(path: &Path, text: &str) -> Result<Table> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = split_csv(lines.next().unwrap_or_default());
    let mut rows = Vec::new();
    for (n, l) in lines.enumerate() {
        let r = split_csv(l);
        if r.len() != header.len() {
            bail!("{}:{}: {} fields, the header has {}", path.display(), n + 2, r.len(), header.len());
        }
        rows.push(r);
    }
    Ok(Table { header, rows })
}

/// Tells the kind of a JSON result: from its `schema` tag when it has one, else (results written
/// before the tag) from its fields.
pub fn json_kind(v: &Value) -> Result<Kind, String> {
    let Some(o) = v.as_object() else { return Err("JSON, but not an object".into()) };
    if let Some(tag) = crate::results::tag_of(v) {
        let name = tag.rsplit_once('/').map_or(tag, |(n, _)| n);
        match name {
            EchoBenchSchema::NAME => return Ok(Kind::EchoBench),
            RdmaShareSchema::NAME => return Ok(Kind::RdmaShare),
            SchedSchema::NAME => return Ok(Kind::Sched),
            TrylockSchema::NAME | NotifySchema::NAME | SemtestSchema::NAME => return Ok(Kind::Prims),
            BurstSchema::NAME => return Ok(Kind::Burst),
            PredictSchema::NAME => return Ok(Kind::Predict),
            SimSchema::NAME => return Ok(Kind::Sim),
            RdmaSchema::NAME => {
                return Err("one end of one `schedlab rdma` flow: the page shows two flows' share; give the output of \
                            `schedlab rdma share A B --json FILE`"
                    .into())
            }
            _ => {}
        }
    }
    let has = |k: &str| o.contains_key(k);
    if super::kernel::is_qdisc(v) {
        return Ok(Kind::Qdisc);
    }
    let runs_have = |k: &str| v["runs"].as_array().is_some_and(|r| r.iter().any(|x| x.get(k).is_some()));
    let cmd = o.get("command");
    let cmd_word = cmd.and_then(Value::as_str).or_else(|| cmd.and_then(|c| c.get(1)).and_then(Value::as_str));
    if cmd_word == Some("sim") && runs_have("strategies") {
        return Ok(Kind::Sim);
    }
    if runs_have("order_check") || (cmd_word == Some("predict") && has("runs")) {
        return Ok(Kind::Predict);
    }
    if has("clients") && has("link_nominal_bps") {
        return Ok(Kind::Sched);
    }
    if matches!(cmd_word, Some("trylock" | "notify" | "semtest")) && has("run") {
        return Ok(Kind::Prims);
    }
    if has("rows") && has("rounds") && v["rows"].as_array().is_some_and(|r| r.iter().all(|x| x.get("rtt_us").is_some())) {
        return Ok(Kind::EchoBench);
    }
    if has("size_bytes") && has("thread") && has("spin") && (has("rtt_us") || has("targets")) {
        return Ok(Kind::Burst);
    }
    if has("flows") && has("windows") && has("jain") {
        return Ok(Kind::RdmaShare);
    }
    if o.get("format").and_then(Value::as_str).is_some_and(|f| f.starts_with("schedlab-rdma-meta")) {
        return Err("an `rdma -o` sidecar (flow metadata only); give the output of `schedlab rdma share --json`".into());
    }
    let keys: Vec<&str> = o.keys().map(String::as_str).take(8).collect();
    Err(format!("JSON with fields [{}]: not a schedlab result this version knows", keys.join(", ")))
}

fn table_kind(t: &Table) -> Result<Kind, String> {
    let has = |c: &str| t.col(c).is_some();
    if has("sweep_id") && has("traffic_pct") && has("strategy") && has("len_pkts") && has("mean_lat_tu") {
        return Ok(Kind::Sweep);
    }
    if has("traffic_pct") && has("strategy") && has("len_pkts") && has("mean_lat_tu") {
        return Ok(Kind::SimCsv);
    }
    Err(format!(
        "CSV with columns [{}]: not a schedlab sweep or sim table",
        t.header.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
    ))
}

/// Reads one result: a JSON result, a sweep or sim CSV table, or an echo-bench `--out` folder.
/// Errors (missing file, unreadable, malformed JSON/CSV) name the file; a well-formed file of
/// an unknown kind is returned with `kind: Err(why)`.
pub fn read(path: &Path) -> Result<Input> {
    let file = if path.is_dir() {
        let f = path.join("results.json");
        if !f.is_file() {
            bail!("{}: a folder without results.json (echo-bench --out folders have one)", path.display());
        }
        f
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    if bytes.starts_with(b"PAR1") {
        bail!(
            "{}: a Parquet table; this page reads CSV tables: `schedlab sweep merge {} --out table.csv` converts it",
            file.display(),
            file.display()
        );
    }
    let text =
        String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{}: not a text file (neither JSON nor CSV)", file.display()))?;
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        bail!("{}: empty file", file.display());
    }
    let (content, kind) = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", file.display()))?;
        let k = json_kind(&v);
        (Content::Json(v), k)
    } else {
        let t = parse_csv(&file, &text)?;
        let k = table_kind(&t);
        (Content::Table(t), k)
    };
    Ok(Input { path: path.to_path_buf(), file, content, kind })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_come_from_content() {
        assert_eq!(json_kind(&json!({"command": "sim", "runs": [{"strategies": []}]})), Ok(Kind::Sim));
        assert_eq!(json_kind(&json!({"command": ["x", "predict"], "runs": [{"order_check": {}}]})), Ok(Kind::Predict));
        assert_eq!(json_kind(&json!({"command": ["x", "sched"], "clients": [], "link_nominal_bps": 1})), Ok(Kind::Sched));
        assert_eq!(json_kind(&json!({"command": "semtest", "run": {}})), Ok(Kind::Prims));
        assert_eq!(json_kind(&json!({"rows": [{"rtt_us": {}}], "rounds": 3})), Ok(Kind::EchoBench));
        assert_eq!(json_kind(&json!({"flows": [], "windows": [], "jain": 1.0})), Ok(Kind::RdmaShare));
        assert!(json_kind(&json!({"command": "sim"})).is_err(), "no runs");
        assert!(json_kind(&json!([1, 2])).is_err());
        assert!(json_kind(&json!({"format": "schedlab-rdma-meta/1"})).unwrap_err().contains("rdma share"));
        assert_eq!(json_kind(&json!({"schema": "schedlab.echo-bench/1"})), Ok(Kind::EchoBench), "the tag decides");
        assert_eq!(json_kind(&json!({"schema": "schedlab.rdma-share/2", "flows": []})), Ok(Kind::RdmaShare));
        assert_eq!(json_kind(&json!({"schema": "schedlab.sim/1"})), Ok(Kind::Sim));
        assert!(json_kind(&json!({"schema": "schedlab.rdma/1", "op": "WRITE"})).unwrap_err().contains("rdma share"));
        assert_eq!(json_kind(&json!({"schema": "schedlab.sched/1"})), Ok(Kind::Sched));
        assert_eq!(json_kind(&json!({"schema": "schedlab.notify/1"})), Ok(Kind::Prims));
        assert_eq!(json_kind(&json!({"schema": "schedlab.burst/1"})), Ok(Kind::Burst));
        assert_eq!(json_kind(&json!({"size_bytes": 4, "thread": {}, "spin": false, "rtt_us": {}})), Ok(Kind::Burst));
    }

    #[test]
    fn csv_splits_quotes() {
        assert_eq!(split_csv(r#"a,"b,c","d""e",f"#), vec!["a", "b,c", "d\"e", "f"]);
        let t = parse_csv(Path::new("x.csv"), "sweep_id,traffic_pct,strategy,len_pkts,mean_lat_tu\n1,50,SF,0,2.5\n").unwrap();
        assert_eq!(table_kind(&t), Ok(Kind::Sweep));
        let e = parse_csv(Path::new("x.csv"), "a,b\n1\n").unwrap_err();
        assert!(format!("{e}").contains("x.csv:2"));
    }
}
