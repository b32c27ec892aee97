//! The per-message file written by `-o` and read by `schedlab rdma share`.
//!
//! Format (the original's, byte for byte from the first byte):
//! ```text
//! Task_cnt\tTime(us)\t\tLatency
//! 1\t\t12.34\t\t12.30
//! ```
//! What the original's file cannot say — which backend produced it (so an emulated run can never
//! pass for a real one), the operation, the message size and count, the polling mode — goes to a
//! **sidecar** `FILE.json` next to it ([`sidecar_path`], [`Sidecar`]), so scripts that skip one
//! header line keep working. `schedlab rdma --meta-line` puts it instead on a first line
//! `# schedlab-rdma backend=EMULATED op=WRITE bytes=65536 count=1000 poll=event` (the form
//! schedlab wrote before); the reader accepts all three: plain, with sidecar, with that line.
//! Without either, the sizes come from the command line of `rdma share`.
//! - `Task_cnt` is the number of messages completed including this one (1-based). Files that count
//!   from 0 are recognised by their first line and shifted.
//! - `Time(us)` is the completion time since the start of the transfer, `Latency` the completion
//!   time minus the post time, both in microseconds with two decimals.

use std::fmt;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The original header line.
pub const HEADER: &str = "Task_cnt\tTime(us)\t\tLatency";
const META_TAG: &str = "# schedlab-rdma";

/// One completed message.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MsgRecord {
    /// Messages completed including this one.
    pub completed: u64,
    /// Completion time since the start of the transfer, µs.
    pub time_us: f64,
    /// Completion minus post time, µs.
    pub lat_us: f64,
}

/// What schedlab knows about a flow beyond the original's columns (sidecar or header line).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowMeta {
    /// `EMULATED` or `VERBS`.
    pub backend: Option<String>,
    pub op: Option<String>,
    pub bytes: Option<u64>,
    pub count: Option<u64>,
    pub poll: Option<String>,
}

impl FlowMeta {
    /// The header line.
    pub fn line(&self) -> String {
        let mut s = String::from(META_TAG);
        let mut kv = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                s.push_str(&format!(" {k}={v}"));
            }
        };
        kv("backend", self.backend.clone());
        kv("op", self.op.clone());
        kv("bytes", self.bytes.map(|b| b.to_string()));
        kv("count", self.count.map(|b| b.to_string()));
        kv("poll", self.poll.clone());
        s
    }
}

/// A flow file in memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowFile {
    pub meta: Option<FlowMeta>,
    pub records: Vec<MsgRecord>,
}

/// Which column a problem is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Header,
    TaskCnt,
    Time,
    Latency,
    Meta,
    Sidecar,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Header => "header",
            Field::TaskCnt => "Task_cnt",
            Field::Time => "Time(us)",
            Field::Latency => "Latency",
            Field::Meta => "schedlab header",
            Field::Sidecar => "sidecar",
        })
    }
}

/// Errors reading a flow file.
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("{file}: {err}")]
    Io { file: PathBuf, err: io::Error },
    #[error("{file}:{line}: field {field}: {msg}")]
    Bad { file: PathBuf, line: usize, field: Field, msg: String },
    #[error("{file}: no message lines (is this a `-o` file of schedlab rdma or write_bw?)")]
    Empty { file: PathBuf },
    #[error("{file}: field {field}: {msg}")]
    BadSidecar { file: PathBuf, field: &'static str, msg: String },
}

/// Name of the format in a sidecar's `format` field.
pub const SIDECAR_FORMAT: &str = "schedlab-rdma-meta/1";

/// The sidecar `FILE.json` written next to a `-o FILE`: the flow's metadata and the file it
/// describes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sidecar {
    /// Always [`SIDECAR_FORMAT`].
    pub format: String,
    /// The `-o` file this describes (its name as given on the command line).
    pub data_file: String,
    #[serde(flatten)]
    pub meta: FlowMeta,
}

/// `FILE` -> `FILE.json`.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

/// Parses a sidecar's text; `name` is used in error messages.
pub fn parse_sidecar(text: &str, name: &Path) -> Result<FlowMeta, RecordError> {
    let bad = |field: &'static str, msg: String| RecordError::BadSidecar { file: name.to_path_buf(), field, msg };
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad("json", format!("not JSON: {e}")))?;
    match v.get("format").and_then(|f| f.as_str()) {
        Some(SIDECAR_FORMAT) => {}
        Some(other) => return Err(bad("format", format!("'{other}' is not '{SIDECAR_FORMAT}'"))),
        None => return Err(bad("format", format!("missing (a schedlab rdma sidecar has \"format\": \"{SIDECAR_FORMAT}\")"))),
    }
    let side: Sidecar = serde_json::from_value(v).map_err(|e| bad("meta", e.to_string()))?;
    if side.meta.bytes == Some(0) {
        return Err(bad("bytes", "must be above 0".into()));
    }
    Ok(side.meta)
}

/// Writes the sidecar of `data` (a `-o` file) to [`sidecar_path`]`(data)`.
pub fn save_sidecar(data: &Path, meta: &FlowMeta) -> Result<PathBuf, RecordError> {
    let path = sidecar_path(data);
    let side = Sidecar { format: SIDECAR_FORMAT.into(), data_file: data.display().to_string(), meta: meta.clone() };
    let io = |err| RecordError::Io { file: path.clone(), err };
    let mut text = serde_json::to_string_pretty(&side).map_err(|e| io(io::Error::other(e)))?;
    text.push('\n');
    std::fs::write(&path, text).map_err(io)?;
    Ok(path)
}

/// Fails unless `path` can be opened for writing, without changing an existing file and
/// without leaving a new one behind: used to refuse a run whose results could not be saved
/// before it starts.
pub fn check_writable(path: &Path) -> io::Result<()> {
    if path.exists() {
        std::fs::OpenOptions::new().append(true).open(path).map(drop)
    } else {
        std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
        std::fs::remove_file(path)
    }
}

/// Writes a whole file.
pub fn write_flow<W: Write>(mut w: W, meta: Option<&FlowMeta>, records: &[MsgRecord]) -> io::Result<()> {
    if let Some(m) = meta {
        writeln!(w, "{}", m.line())?;
    }
    writeln!(w, "{HEADER}")?;
    for r in records {
        writeln!(w, "{}\t\t{:.2}\t\t{:.2}", r.completed, r.time_us, r.lat_us)?;
    }
    w.flush()
}

/// Writes a whole file to `path`.
pub fn save(path: &Path, meta: Option<&FlowMeta>, records: &[MsgRecord]) -> Result<(), RecordError> {
    let io = |err| RecordError::Io { file: path.to_path_buf(), err };
    let f = std::fs::File::create(path).map_err(io)?;
    write_flow(io::BufWriter::new(f), meta, records).map_err(io)
}

/// Reads a file from `path`; without a header line, the metadata comes from its sidecar
/// (`FILE.json`) when there is one.
pub fn load(path: &Path) -> Result<FlowFile, RecordError> {
    let f = std::fs::File::open(path).map_err(|err| RecordError::Io { file: path.to_path_buf(), err })?;
    let mut flow = read_flow(io::BufReader::new(f), path)?;
    if flow.meta.is_none() {
        let side = sidecar_path(path);
        match std::fs::read_to_string(&side) {
            Ok(text) => flow.meta = Some(parse_sidecar(&text, &side)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(RecordError::Io { file: side, err }),
        }
    }
    Ok(flow)
}

fn parse_meta(text: &str, bad: &dyn Fn(Field, String) -> RecordError) -> Result<FlowMeta, RecordError> {
    let mut m = FlowMeta::default();
    for w in text.split_whitespace() {
        let (k, v) = w.split_once('=').ok_or_else(|| bad(Field::Meta, format!("'{w}' is not key=value")))?;
        let num = |v: &str| v.parse::<u64>().map_err(|_| bad(Field::Meta, format!("{k}='{v}' is not a whole number")));
        match k {
            "backend" => m.backend = Some(v.to_string()),
            "op" => m.op = Some(v.to_string()),
            "bytes" => m.bytes = Some(num(v)?).filter(|b| *b > 0),
            "count" => m.count = Some(num(v)?),
            "poll" => m.poll = Some(v.to_string()),
            _ => {} // later additions are ignored by older readers
        }
    }
    Ok(m)
}

/// Reads a file; `name` is used in error messages.
pub fn read_flow<R: BufRead>(r: R, name: &Path) -> Result<FlowFile, RecordError> {
    let mut out = FlowFile::default();
    let mut seen_header = false;
    let mut shift: Option<u64> = None;
    for (i, line) in r.lines().enumerate() {
        let lineno = i + 1;
        let line = line.map_err(|err| RecordError::Io { file: name.to_path_buf(), err })?;
        let bad = |field: Field, msg: String| RecordError::Bad { file: name.to_path_buf(), line: lineno, field, msg };
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(rest) = t.strip_prefix(META_TAG) {
            if seen_header || out.meta.is_some() {
                return Err(bad(Field::Meta, "the schedlab header must be the first line".into()));
            }
            out.meta = Some(parse_meta(rest, &bad)?);
            continue;
        }
        if !seen_header {
            let words: Vec<&str> = t.split_whitespace().collect();
            if words != ["Task_cnt", "Time(us)", "Latency"] {
                return Err(bad(Field::Header, format!("expected 'Task_cnt  Time(us)  Latency', found '{t}'")));
            }
            seen_header = true;
            continue;
        }
        let mut cols = t.split_whitespace();
        let mut next = |field: Field| cols.next().ok_or_else(|| bad(field, "missing".into()));
        let cnt_s = next(Field::TaskCnt)?;
        let time_s = next(Field::Time)?;
        let lat_s = next(Field::Latency)?;
        if let Some(extra) = cols.next() {
            return Err(bad(Field::Latency, format!("unexpected extra column '{extra}'")));
        }
        let cnt: u64 = cnt_s.parse().map_err(|_| bad(Field::TaskCnt, format!("'{cnt_s}' is not a whole number")))?;
        let num = |field: Field, s: &str| -> Result<f64, RecordError> {
            let v: f64 = s.parse().map_err(|_| bad(field, format!("'{s}' is not a number")))?;
            if !v.is_finite() || v < 0.0 {
                return Err(bad(field, format!("'{s}' must be a finite, non-negative number of microseconds")));
            }
            Ok(v)
        };
        let time_us = num(Field::Time, time_s)?;
        let lat_us = num(Field::Latency, lat_s)?;
        let shift = *shift.get_or_insert(u64::from(cnt == 0));
        let completed = cnt.checked_add(shift).ok_or_else(|| bad(Field::TaskCnt, format!("{cnt} is too large")))?;
        if let Some(prev) = out.records.last() {
            if completed <= prev.completed {
                return Err(bad(
                    Field::TaskCnt,
                    format!("{cnt} does not increase (previous line had {})", prev.completed - shift),
                ));
            }
            if time_us < prev.time_us {
                return Err(bad(Field::Time, format!("{time_s} goes back in time (previous line had {:.2})", prev.time_us)));
            }
        }
        out.records.push(MsgRecord { completed, time_us, lat_us });
    }
    if out.records.is_empty() {
        return Err(RecordError::Empty { file: name.to_path_buf() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Fuzz regression (fuzz/regressions/rdma_files): a 0-based file whose later Task_cnt is
    /// u64::MAX overflowed the shift to 1-based counts (a panic in debug builds).
    #[test]
    fn task_cnt_overflow_is_an_error() {
        let e = read("Task_cnt Time(us) Latency\n0 1 1\n18446744073709551615 2 1\n").unwrap_err();
        assert!(matches!(e, RecordError::Bad { line: 3, field: Field::TaskCnt, .. }), "{e:?}");
        let f = read("Task_cnt Time(us) Latency\n1 1 1\n18446744073709551615 2 1\n").unwrap();
        assert_eq!(f.records[1].completed, u64::MAX);
    }

    fn read(s: &str) -> Result<FlowFile, RecordError> {
        read_flow(s.as_bytes(), Path::new("f.txt"))
    }

    #[test]
    fn writes_the_original_format() {
        let recs =
            [MsgRecord { completed: 1, time_us: 10.0, lat_us: 9.5 }, MsgRecord { completed: 2, time_us: 20.126, lat_us: 9.994 }];
        let mut buf = Vec::new();
        write_flow(&mut buf, None, &recs).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "Task_cnt\tTime(us)\t\tLatency\n1\t\t10.00\t\t9.50\n2\t\t20.13\t\t9.99\n");
    }

    #[test]
    fn round_trips_with_meta() {
        let meta = FlowMeta {
            backend: Some("EMULATED".into()),
            op: Some("SEND".into()),
            bytes: Some(4096),
            count: Some(3),
            poll: Some("event".into()),
        };
        let recs: Vec<MsgRecord> = (1..=3).map(|i| MsgRecord { completed: i, time_us: i as f64 * 1.25, lat_us: 0.5 }).collect();
        let mut buf = Vec::new();
        write_flow(&mut buf, Some(&meta), &recs).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.starts_with("# schedlab-rdma backend=EMULATED op=SEND bytes=4096 count=3 poll=event\nTask_cnt"));
        let back = read(&text).unwrap();
        assert_eq!(back.meta, Some(meta));
        assert_eq!(back.records, recs);
    }

    #[test]
    fn sidecar_round_trips_and_bad_ones_are_named() {
        let dir = std::env::temp_dir().join(format!("schedlab-rdma-sidecar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("out.txt");
        let meta =
            FlowMeta { backend: Some("EMULATED".into()), op: Some("WRITE".into()), bytes: Some(64), count: Some(2), poll: None };
        let recs = [MsgRecord { completed: 1, time_us: 1.0, lat_us: 1.0 }, MsgRecord { completed: 2, time_us: 2.0, lat_us: 1.0 }];
        save(&data, None, &recs).unwrap();
        assert_eq!(
            std::fs::read_to_string(&data).unwrap(),
            "Task_cnt\tTime(us)\t\tLatency\n1\t\t1.00\t\t1.00\n2\t\t2.00\t\t1.00\n"
        );
        assert_eq!(load(&data).unwrap().meta, None, "no sidecar yet");
        let side = save_sidecar(&data, &meta).unwrap();
        assert_eq!(side, dir.join("out.txt.json"));
        assert_eq!(load(&data).unwrap().meta, Some(meta.clone()));
        std::fs::write(&side, "{\"format\": \"other/2\"}").unwrap();
        assert!(load(&data).unwrap_err().to_string().contains("out.txt.json: field format: 'other/2'"));
        std::fs::write(&side, "[1").unwrap();
        assert!(load(&data).unwrap_err().to_string().contains("field json"));
        let e = parse_sidecar(r#"{"format": "schedlab-rdma-meta/1", "data_file": "x", "bytes": "big"}"#, Path::new("s.json"))
            .unwrap_err();
        assert!(e.to_string().starts_with("s.json: field meta:"), "{e}");
        assert!(parse_sidecar(r#"{"format": "schedlab-rdma-meta/1", "data_file": "x", "bytes": 0}"#, Path::new("s")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writability_is_checked_without_side_effects() {
        let dir = std::env::temp_dir().join(format!("schedlab-rdma-wr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let new = dir.join("new.txt");
        check_writable(&new).unwrap();
        assert!(!new.exists(), "the check leaves no file behind");
        std::fs::write(&new, "keep").unwrap();
        check_writable(&new).unwrap();
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "keep", "an existing file is not truncated");
        assert!(check_writable(&dir.join("no/such/dir/x.txt")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_zero_based_original_files() {
        let f = read("Task_cnt\tTime(us)\t\tLatency\n0\t\t5.00\t\t5.00\n1\t\t9.00\t\t4.00\n").unwrap();
        assert_eq!(f.meta, None);
        assert_eq!(f.records.iter().map(|r| r.completed).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn malformed_files_name_line_and_field() {
        let cases = [
            ("1\t\t2.0\t\t1.0\n", 1, "header"),
            ("Task_cnt\tTime(us)\t\tLatency\n1\t\tx\t\t1.0\n", 2, "Time(us)"),
            ("Task_cnt\tTime(us)\t\tLatency\n1\t\t2.0\n", 2, "Latency"),
            ("Task_cnt\tTime(us)\t\tLatency\n1\t\t2.0\t\t1.0\n1\t\t3.0\t\t1.0\n", 3, "Task_cnt"),
            ("Task_cnt\tTime(us)\t\tLatency\n1\t\t2.0\t\t1.0\n2\t\t1.0\t\t1.0\n", 3, "Time(us)"),
            ("Task_cnt\tTime(us)\t\tLatency\n1\t\t2.0\t\t-1\n", 2, "Latency"),
            ("Task_cnt\tTime(us)\t\tLatency\n-1\t\t2.0\t\t1\n", 2, "Task_cnt"),
            ("# schedlab-rdma bytes=abc\nTask_cnt\tTime(us)\t\tLatency\n1 2 3\n", 1, "schedlab header"),
            ("Task_cnt\tTime(us)\t\tLatency\n1\t\t2.0\t\t1.0\t\t7\n", 2, "Latency"),
        ];
        for (text, line, field) in cases {
            let e = read(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("f.txt:{line}: field {field}:")), "{text:?} gave {e}");
        }
        assert!(matches!(read("Task_cnt\tTime(us)\t\tLatency\n\n"), Err(RecordError::Empty { .. })));
        assert!(matches!(load(Path::new("/nonexistent/x.txt")), Err(RecordError::Io { .. })));
    }

    proptest! {
        #[test]
        fn any_increasing_flow_round_trips(steps in proptest::collection::vec((1u64..5, 0u32..100_000, 0u32..100_000), 1..200)) {
            let mut recs = Vec::new();
            let (mut n, mut t) = (0u64, 0u64);
            for (dn, dt, lat) in steps {
                n += dn;
                t += u64::from(dt);
                // Values with two decimals survive the text form exactly.
                recs.push(MsgRecord { completed: n, time_us: t as f64 / 100.0, lat_us: f64::from(lat) / 100.0 });
            }
            let mut buf = Vec::new();
            write_flow(&mut buf, None, &recs).unwrap();
            let back = read_flow(&buf[..], Path::new("p")).unwrap();
            prop_assert_eq!(back.records, recs);
        }
    }
}
