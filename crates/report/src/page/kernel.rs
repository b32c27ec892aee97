//! The page's section for `schedlab qdisc --json` (`schedlab.qdisc/1`): the kernel's answer (a
//! qdisc on a veth in a guest) beside the model's and the harness's.

use serde_json::Value;

use super::{Block, Section};
use crate::plot::bar::BarChart;

fn txt(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn share(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.4}"))
}

fn us(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.0}"))
}

/// Is this a `schedlab qdisc` result?
pub fn is_qdisc(v: &Value) -> bool {
    v.get("schema").and_then(Value::as_str).is_some_and(|s| s.starts_with("schedlab.qdisc/"))
}

/// The section.
pub fn qdisc(v: &Value, source: &str) -> Section {
    let plan = &v["plan"];
    let k = &v["kernel"];
    let alg = txt(&plan["alg"]);
    let mut sec = Section::new("qdisc", &format!("The kernel's answer: {alg} under a tbf bottleneck"), source);
    let link = plan["link_bps"].as_f64().unwrap_or(0.0);
    sec.push(Block::Facts(vec![
        ("kernel".into(), txt(&k["kernel"])),
        ("traffic".into(), txt(&plan["traffic"])),
        (
            "clients / flows".into(),
            format!("{} / {}", plan["clients"].as_array().map_or(0, Vec::len), plan["flows"].as_array().map_or(0, Vec::len)),
        ),
        ("bottleneck".into(), format!("tbf {:.3} Mb/s", link / 1e6)),
        ("window".into(), format!("{:.2} s after {} s warm-up", k["window_s"].as_f64().unwrap_or(0.0), txt(&plan["warmup_s"]))),
        (
            "bottleneck use".into(),
            format!(
                "{:.3} Mb/s delivered, {} drops, {} queued at the end, {} refused by sender sockets: {}",
                k["link_rate_bps"].as_f64().unwrap_or(0.0) / 1e6,
                txt(&k["link_drops"]),
                txt(&k["link_backlog_pkts"]),
                txt(&k["sender_refused"]),
                if k["saturated"].as_bool() == Some(true) { "saturated" } else { "not saturated" }
            ),
        ),
        ("guest".into(), format!("command started at {} s uptime; {} s wall", txt(&v["guest_boot_s"]), txt(&v["guest_wall_s"]))),
        ("model".into(), txt(&v["model"]["source"])),
        ("harness".into(), txt(&v["harness"]["source"])),
    ]));
    let verdict = txt(&v["verdict"]);
    match v["agree"].as_bool() {
        Some(false) => sec.push(Block::Warning(format!("Shares disagree: {verdict}"))),
        _ => sec.push(Block::Note(format!("Verdict: {verdict}. Delay under emulation is printed, not judged."))),
    };
    let rows = v["rows"].as_array().cloned().unwrap_or_default();
    sec.push(Block::Table {
        caption: format!("Per flow: share of the bytes delivered in the window (agreement limit {})", txt(&v["tolerance"])),
        header: ["flow", "weight", "kernel", "model", "harness", "backlogged", "delay p50 us kernel", "model", "harness"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    txt(&r["flow"]),
                    txt(&r["weight"]),
                    share(&r["kernel"]),
                    share(&r["model"]),
                    share(&r["harness"]),
                    if r["kernel_backlogged"].as_bool() == Some(true) { "yes".into() } else { "no".into() },
                    us(&r["kernel_delay_p50_us"]),
                    us(&r["model_delay_p50_us"]),
                    us(&r["harness_delay_p50_us"]),
                ]
            })
            .collect(),
    });
    // Only flows that carried something: the others would be empty bars.
    let shown: Vec<&Value> =
        rows.iter().filter(|r| r["kernel"].as_f64().unwrap_or(0.0) > 0.0 || r["model"].as_f64().unwrap_or(0.0) > 0.0).collect();
    if !shown.is_empty() {
        let cats = shown.iter().map(|r| format!("flow {} (w {})", txt(&r["flow"]), txt(&r["weight"]))).collect();
        let mut chart = BarChart::new(&format!("Shares per flow, {alg}"), "flow", "share of delivered bytes", cats);
        for name in ["kernel", "model", "harness"] {
            if shown.iter().any(|r| r[name].is_number()) {
                chart.add(name, shown.iter().map(|r| r[name].as_f64().unwrap_or(f64::NAN)).collect());
            }
        }
        sec.push(Block::Figure { caption: "Kernel, model and harness shares of the same traffic".into(), svg: chart.svg() });
    }
    sec.push(Block::Heading("The qdisc tree (tc qdisc show)".into()));
    sec.push(Block::Note(txt(&k["qdiscs"])));
    sec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qdisc_result_gets_its_table_figure_and_verdict() {
        let v = serde_json::json!({
            "schema": "schedlab.qdisc/1",
            "plan": {"alg": "drr", "link_bps": 5000000, "traffic": "two.txt", "warmup_s": 1.0, "clients": [[], []], "flows": [{}, {}]},
            "kernel": {"kernel": "6.12.9", "window_s": 3.0, "link_rate_bps": 4.9e6, "link_drops": 10, "link_backlog_pkts": 5,
                       "sender_refused": 0, "saturated": true, "qdiscs": "qdisc tbf 1: root"},
            "model": {"source": "model"}, "harness": {"source": "harness"},
            "rows": [{"flow": 0, "weight": 100, "kernel": 0.98, "model": 0.99, "harness": 0.99, "kernel_backlogged": true},
                     {"flow": 1, "weight": 1, "kernel": 0.02, "model": 0.01, "harness": 0.01, "kernel_backlogged": true}],
            "tolerance": 0.05, "verdict": "agree: 2 backlogged flow(s)", "agree": true, "guest_boot_s": 4.2, "guest_wall_s": 12.0
        });
        assert!(is_qdisc(&v));
        let s = qdisc(&v, "q.json");
        assert_eq!(s.figures(), 1);
        let table = s.blocks.iter().find_map(|b| match b {
            Block::Table { rows, .. } => Some(rows.clone()),
            _ => None,
        });
        assert_eq!(table.unwrap()[0][2], "0.9800");
        assert!(s.blocks.iter().any(|b| matches!(b, Block::Note(n) if n.contains("agree"))));
    }
}
