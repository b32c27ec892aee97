//! `schedlab workloads` as a user runs it: the listing with the sources' stated means, `--json`,
//! and a footer that says which commands take the reading and bytes-per-packet settings.

use assert_cmd::Command;
use predicates::prelude::*;
use schedlab_report::results::workloads::Workloads;
use schedlab_report::results::{read, Kind};
use schedlab_workload::{all, Reading, Unit, DEFAULT_BYTES_PER_PACKET};
use serde_json::Value;

fn schedlab() -> Command {
    Command::cargo_bin("schedlab").unwrap()
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(schedlab().args(args).assert().success().get_output().stdout.clone()).unwrap()
}

/// One line per table, with the source's stated mean in its own column (as the source writes
/// it, blank where it states none) beside the computed means: W1-sampled's stated 187.77 next to
/// its step mean 187.5107.
#[test]
fn the_listing_shows_the_stated_mean_beside_the_computed_ones() {
    let text = stdout(&["workloads"]);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines[0];
    let col = |name: &str| header.find(name).unwrap_or_else(|| panic!("no {name:?} column: {header}"));
    assert!(col("rule") < col("stated mean") && col("stated mean") < col("step mean"), "{header}");
    let row = |name: &str| -> Vec<&str> {
        let l = lines.iter().find(|l| l.split_whitespace().next() == Some(name)).unwrap_or_else(|| panic!("no {name}: {text}"));
        l.split_whitespace().collect()
    };
    // name unit points rule [stated] step interp step-pkts interp-pkts checksum source
    assert_eq!(row("w1-sampled")[..7], ["w1-sampled", "bytes", "315", "step", "187.77", "187.5107", "184.6130"]);
    assert_eq!(row("w5")[..6], ["w5", "packets", "400", "step", "1744.70", "1744.7041"]);
    assert_eq!(row("w1")[4..6], ["185.0", "185.0881"]);
    assert_eq!(row("w3")[4], "2927.354");
    // pFabric states no mean: the column is blank, the step mean comes next.
    let ws = row("pfabric-websearch");
    assert_eq!(ws[..6], ["pfabric-websearch", "packets", "12", "interp", "1622.9400", "1140.9800"], "{ws:?}");
    assert_eq!(row("pfabric-datamining").len(), ws.len());
    assert_eq!(row("w2").len(), ws.len() + 1);
    // The blank stated mean of pFabric sits under the column, not shifted into the next one.
    let pf = lines.iter().find(|l| l.starts_with("pfabric-websearch")).unwrap();
    let at = col("stated mean");
    assert!(pf[at..at + "stated mean".len()].trim().is_empty(), "{pf}");
    assert_eq!(lines.iter().filter(|l| l.contains("fnv1a64:")).count(), all().len());
}

/// The footer names the commands that take `--reading` and `--bytes-per-packet` (they are
/// `sim`'s flags, not this command's), and the traffic-file and sweep spelling.
#[test]
fn the_footer_says_which_commands_take_the_settings() {
    let text = stdout(&["workloads"]);
    let footer: String = text.lines().skip(1 + all().len()).collect::<Vec<_>>().join("\n");
    assert!(footer.contains("sim --workload NAME --reading step|interp --bytes-per-packet N"), "{footer}");
    assert!(footer.contains("sched/predict traffic files (dist:w2:step:1442) and sweep lengths"), "{footer}");
    assert!(footer.contains("bytes per packet applies to byte tables only"), "{footer}");
    assert!(
        !footer.contains("(packets: 1460 payload bytes per packet for byte tables, --bytes-per-packet to change"),
        "{footer}"
    );
    // And the flags it names are sim's.
    let help = stdout(&["sim", "--help"]);
    assert!(help.contains("--reading") && help.contains("--bytes-per-packet"), "{help}");
    schedlab()
        .args(["workloads", "--reading", "step"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("unknown option '--reading'").and(predicate::str::contains("panicked").not()));
}

/// Equal to the last bit or two (serde_json reads a float's shortest decimal text back to
/// within an ulp, not always to the same bits).
fn close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs(), "{what}: {got} vs {want}");
}

/// `--json -` writes every field of every table, units in the numeric field names, and nothing
/// else on stdout; the document reads back through its type and matches the crate's figures.
#[test]
fn json_has_every_field_of_every_table() {
    let text = stdout(&["workloads", "--json", "-"]);
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {text}"));
    assert_eq!(v["schema"], format!("{}/{}", Workloads::NAME, Workloads::VERSION));
    assert_eq!(v["default_bytes_per_packet"], DEFAULT_BYTES_PER_PACKET);
    let doc: Workloads = read(&v).unwrap();
    let tables = all();
    assert_eq!(doc.workloads.len(), tables.len());
    for (r, w) in doc.workloads.iter().zip(&tables) {
        assert_eq!((r.name.as_str(), r.title.as_str(), r.unit.as_str()), (w.name, w.title, w.unit.name()));
        assert_eq!((r.points, r.reading.as_str()), (w.points(), w.default_reading.name()));
        assert_eq!(r.stated_mean_size, w.stated_mean, "{}", w.name);
        close(r.step_mean_size, w.mean(Reading::Step), w.name);
        close(r.interp_mean_size, w.mean(Reading::Interpolated), w.name);
        close(r.step_mean_pkts, w.packet_mean(Reading::Step, DEFAULT_BYTES_PER_PACKET), w.name);
        close(r.interp_mean_pkts, w.packet_mean(Reading::Interpolated, DEFAULT_BYTES_PER_PACKET), w.name);
        assert_eq!(r.bytes_per_packet, (w.unit == Unit::Bytes).then_some(DEFAULT_BYTES_PER_PACKET), "{}", w.name);
        assert_eq!(r.analytic_tail, w.name == "w1");
        assert_eq!((r.checksum.clone(), r.file.as_str()), (w.checksum_hex(), w.file));
        assert_eq!((&r.repository, &r.path, &r.commit), (&w.provenance.repository, &w.provenance.path, &w.provenance.commit));
    }
    // The figures the README states, through the JSON.
    let get = |n: &str| doc.workloads.iter().find(|r| r.name == n).unwrap();
    assert_eq!(get("w1-sampled").stated_mean_size, Some(187.77));
    assert!((get("w1-sampled").step_mean_size - 187.5107).abs() < 1e-4);
    assert_eq!(get("pfabric-datamining").stated_mean_size, None);
    assert!(v["workloads"][5]["stated_mean_size"].is_null(), "{}", v["workloads"][5]);
    assert!(v["workloads"][4]["bytes_per_packet"].is_null(), "w5 is in packets: {}", v["workloads"][4]);
    // Numeric fields carry their unit in their name (or are counts, or say it in `unit`).
    for (k, x) in v["workloads"][0].as_object().unwrap() {
        if x.is_f64() {
            assert!(k.ends_with("_pkts") || k.ends_with("_size"), "{k}");
        }
    }
}

/// With NAME, the JSON holds that table alone; `--json FILE` writes the file and still prints
/// the text; `--json` without a FILE says what to give.
#[test]
fn json_of_one_table_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("w5.json");
    let text = String::from_utf8(
        schedlab().args(["workloads", "W5-websearch", "--json"]).arg(&f).assert().success().get_output().stdout.clone(),
    )
    .unwrap();
    assert!(text.contains("w5: W5 DCTCP web search"), "{text}");
    assert!(text.contains("mean size in packets: stated 1744.70, step 1744.7041, interp 1719.7113\n"), "{text}");
    // No bytes per packet for a table in packets.
    assert!(text.contains("mean length in packets: step 1744.7041, interp 1719.7113\n"), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    let doc: Workloads = read(&v).unwrap();
    assert_eq!(doc.workloads.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["w5"]);
    assert_eq!(doc.workloads[0].stated_mean_size, Some(1744.7));

    let one = stdout(&["workloads", "w1-sampled"]);
    assert!(one.contains("mean size in bytes: stated 187.77, step 187.5107, interp 184.6130\n"), "{one}");
    assert!(one.contains("mean length in packets at 1460 B/packet: step"), "{one}");
    let w1 = stdout(&["workloads", "w1"]);
    assert!(w1.contains("mean size in bytes: stated 185.0, step 185.0881, interp 184.8560 (with the analytic tail)\n"), "{w1}");
    let dm = stdout(&["workloads", "datamining"]);
    assert!(dm.contains("mean size in packets: stated none, step 9467.1000, interp 5116.6000\n"), "{dm}");

    for (args, msg) in [
        (&["workloads", "--json"][..], "--json needs a FILE ('-' for stdout)"),
        (&["workloads", "--json", "-", "--json", "x.json"][..], "--json is given twice"),
        (&["workloads", "w3", "w4"][..], "at most one NAME"),
        (&["workloads", "--json", "-", "w9"][..], "unknown workload 'w9'"),
    ] {
        schedlab()
            .args(args)
            .assert()
            .code(1)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(msg).and(predicate::str::contains("panicked").not()));
    }
    schedlab().args(["workloads", "--help"]).assert().success().stdout(predicate::str::contains("--json FILE"));
}
