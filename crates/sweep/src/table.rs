//! The tidy result table: one row per (cell, strategy, message length), units in column names.
//! Written as CSV or Parquet (by the file's extension) and read back for `sweep merge`.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::RowAccessor;
use parquet::schema::parser::parse_message_type;
use schedlab_report::results::{
    self,
    sweep_row::{SweepRow, SweepRowSchema},
};
use serde::{Deserialize, Serialize};

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Str,
    Int,
    Float,
    Bool,
}

/// One cell of a row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    Str(String),
    Int(i64),
    /// Stored as its bit pattern so that journals round-trip exactly (NaN included).
    Float(u64),
    Bool(bool),
}

impl Value {
    pub fn f(x: f64) -> Value {
        Value::Float(x.to_bits())
    }
    /// The value as text (CSV): floats in Rust's shortest round-trip form, NaN as `NaN`.
    pub fn text(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Float(b) => format!("{:?}", f64::from_bits(*b)),
            Value::Bool(b) => b.to_string(),
        }
    }
    fn parse(kind: Kind, s: &str) -> Result<Value, String> {
        Ok(match kind {
            Kind::Str => Value::Str(s.to_string()),
            Kind::Int => Value::Int(s.parse().map_err(|_| format!("'{s}' is not an integer"))?),
            Kind::Float => Value::f(s.parse().map_err(|_| format!("'{s}' is not a number"))?),
            Kind::Bool => Value::Bool(s.parse().map_err(|_| format!("'{s}' is not true/false"))?),
        })
    }
}

/// The table's columns, in order. Time is in time units (`_tu`: the mean packet service time).
pub const COLUMNS: [(&str, Kind); 31] = [
    ("sweep_id", Kind::Str),
    ("cell", Kind::Int),
    ("cells_total", Kind::Int),
    ("traffic_pct", Kind::Float),
    ("lengths", Kind::Str),
    ("mean_len_pkts", Kind::Float),
    ("service", Kind::Str),
    ("packets", Kind::Int),
    ("seed", Kind::Int),
    ("replication", Kind::Int),
    ("queue_delay_tu", Kind::Float),
    ("batches", Kind::Int),
    ("apps", Kind::Int),
    ("closed_apps", Kind::Int),
    ("in_order", Kind::Bool),
    ("strategy", Kind::Str),
    ("listing_alpha", Kind::Float),
    ("len_pkts", Kind::Int),
    ("msgs", Kind::Int),
    ("mean_lat_tu", Kind::Float),
    ("ci95_lat_tu", Kind::Float),
    ("p50_lat_tu", Kind::Float),
    ("p99_lat_tu", Kind::Float),
    ("max_lat_tu", Kind::Float),
    ("eff_period_tu", Kind::Float),
    ("qlen_pkts", Kind::Float),
    ("qlen_ci95_pkts", Kind::Float),
    ("packets_in", Kind::Int),
    ("packets_out", Kind::Int),
    ("sim_time_tu", Kind::Float),
    ("schedlab_version", Kind::Str),
];

/// Index of a column by name.
pub fn col(name: &str) -> usize {
    COLUMNS.iter().position(|(n, _)| *n == name).unwrap_or_else(|| panic!("no column {name}"))
}

/// A row: one value per column of [`COLUMNS`].
pub type Row = Vec<Value>;

/// The column names.
pub fn header() -> Vec<&'static str> {
    COLUMNS.iter().map(|(n, _)| *n).collect()
}

/// Output formats, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Parquet,
    /// JSON lines: one typed row (`schedlab.sweep-row/1`) per line.
    Jsonl,
}

impl Format {
    pub fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("csv") => Ok(Format::Csv),
            Some("parquet" | "pq") => Ok(Format::Parquet),
            Some("jsonl" | "ndjson") => Ok(Format::Jsonl),
            _ => {
                bail!("{}: the output's extension must be .csv or .parquet (or .jsonl: typed rows as JSON lines)", path.display())
            }
        }
    }
}

/// Writes `rows` to `path` atomically (a temporary file in the same folder, then a rename).
pub fn write_table(path: &Path, rows: &[Row], sweep_id: &str) -> Result<()> {
    let format = Format::of(path)?;
    let tmp =
        path.with_file_name(format!(".{}.tmp{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("out"), std::process::id()));
    let f = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let res = match format {
        Format::Csv => write_csv(f, rows),
        Format::Parquet => write_parquet(f, rows, sweep_id),
        Format::Jsonl => write_jsonl(std::io::BufWriter::new(f), rows),
    };
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.context(format!("writing {}", path.display())));
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}

fn write_csv(f: File, rows: &[Row]) -> Result<()> {
    let mut c = schedlab_report::export::Csv::new(std::io::BufWriter::new(f), &header())?;
    for r in rows {
        let cells: Vec<String> = r.iter().map(Value::text).collect();
        c.row(&cells)?;
    }
    let w = c.finish()?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

fn write_parquet(f: File, rows: &[Row], sweep_id: &str) -> Result<()> {
    let mut schema = String::from("message schedlab_sweep {\n");
    for (name, kind) in COLUMNS {
        let t = match kind {
            Kind::Str => "BYTE_ARRAY",
            Kind::Int => "INT64",
            Kind::Float => "DOUBLE",
            Kind::Bool => "BOOLEAN",
        };
        let ann = if kind == Kind::Str { " (UTF8)" } else { "" };
        schema.push_str(&format!("  REQUIRED {t} {name}{ann};\n"));
    }
    schema.push('}');
    let schema = Arc::new(parse_message_type(&schema).context("parquet schema")?);
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(Some(vec![
                KeyValue::new("schedlab.sweep_id".into(), sweep_id.to_string()),
                KeyValue::new("schedlab.version".into(), crate::VERSION.to_string()),
                KeyValue::new("schedlab.time_unit".into(), "mean packet service time (tu)".to_string()),
            ]))
            .build(),
    );
    let mut w = SerializedFileWriter::new(f, schema, props)?;
    let mut rg = w.next_row_group()?;
    let mut i = 0;
    while let Some(mut c) = rg.next_column()? {
        match COLUMNS[i].1 {
            Kind::Str => {
                let v: Vec<ByteArray> =
                    rows.iter().map(|r| ByteArray::from(if let Value::Str(s) = &r[i] { s.as_str() } else { "" })).collect();
                c.typed::<ByteArrayType>().write_batch(&v, None, None)?;
            }
            Kind::Int => {
                let v: Vec<i64> = rows.iter().map(|r| if let Value::Int(x) = r[i] { x } else { 0 }).collect();
                c.typed::<Int64Type>().write_batch(&v, None, None)?;
            }
            Kind::Float => {
                let v: Vec<f64> =
                    rows.iter().map(|r| if let Value::Float(x) = r[i] { f64::from_bits(x) } else { f64::NAN }).collect();
                c.typed::<DoubleType>().write_batch(&v, None, None)?;
            }
            Kind::Bool => {
                let v: Vec<bool> = rows.iter().map(|r| matches!(r[i], Value::Bool(true))).collect();
                c.typed::<BoolType>().write_batch(&v, None, None)?;
            }
        }
        c.close()?;
        i += 1;
    }
    rg.close()?;
    w.close()?;
    Ok(())
}

/// Reads a table written by [`write_table`]; refuses files whose columns differ from [`COLUMNS`].
pub fn read_table(path: &Path) -> Result<Vec<Row>> {
    match Format::of(path)? {
        Format::Csv => read_csv(path),
        Format::Parquet => read_parquet(path),
        Format::Jsonl => read_jsonl(path),
    }
}

fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut lines = BufReader::new(f).lines();
    let head = lines.next().transpose()?.unwrap_or_default();
    if head.split(',').collect::<Vec<_>>() != header() {
        bail!(
            "{}:1: the columns differ from this schedlab's sweep table (a different version or not a sweep table)",
            path.display()
        );
    }
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        let line = line?;
        let cells = split_csv(&line);
        if cells.len() != COLUMNS.len() {
            bail!("{}:{}: {} fields, expected {}", path.display(), n + 2, cells.len(), COLUMNS.len());
        }
        let row = cells
            .iter()
            .zip(COLUMNS)
            .map(|(s, (name, kind))| {
                Value::parse(kind, s).map_err(|e| anyhow::anyhow!("{}:{}: field '{name}': {e}", path.display(), n + 2))
            })
            .collect::<Result<Row>>()?;
        rows.push(row);
    }
    Ok(rows)
}

pub use schedlab_report::export::split_csv;

fn read_parquet(path: &Path) -> Result<Vec<Row>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let r = SerializedFileReader::new(f).with_context(|| format!("{}: not a Parquet file", path.display()))?;
    let names: Vec<String> = r.metadata().file_metadata().schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
    if names != header() {
        bail!(
            "{}: the columns differ from this schedlab's sweep table (a different version or not a sweep table)",
            path.display()
        );
    }
    let mut rows = Vec::new();
    for rec in r.get_row_iter(None)? {
        let rec = rec?;
        let mut row = Vec::with_capacity(COLUMNS.len());
        for (i, (name, kind)) in COLUMNS.iter().enumerate() {
            let v = match kind {
                Kind::Str => rec.get_string(i).map(|s| Value::Str(s.clone())),
                Kind::Int => rec.get_long(i).map(Value::Int),
                Kind::Float => rec.get_double(i).map(Value::f),
                Kind::Bool => rec.get_bool(i).map(Value::Bool),
            }
            .with_context(|| format!("{}: column '{name}'", path.display()))?;
            row.push(v);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// A row as the typed result kind (`schedlab.sweep-row/1`). Fails only for a row whose values do
/// not have the columns' types (a bug).
pub fn typed(r: &Row) -> Result<SweepRow> {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), serde_json::Value::from(SweepRowSchema::TAG));
    for ((name, _), v) in COLUMNS.iter().zip(r) {
        let j = match v {
            Value::Str(s) => serde_json::Value::from(s.clone()),
            Value::Int(i) => serde_json::Value::from(*i),
            // NaN and infinities become null (`serde_json::Value::from` does), read back as NaN.
            Value::Float(b) => serde_json::Value::from(f64::from_bits(*b)),
            Value::Bool(b) => serde_json::Value::from(*b),
        };
        m.insert((*name).to_string(), j);
    }
    Ok(results::read::<SweepRow>(&serde_json::Value::Object(m))?)
}

/// A typed row as a row of the table, in [`COLUMNS`] order.
pub fn untyped(t: &SweepRow) -> Result<Row> {
    let v = serde_json::to_value(t)?;
    COLUMNS
        .iter()
        .map(|(name, kind)| {
            let x = &v[*name];
            Ok(match kind {
                Kind::Str => Value::Str(x.as_str().with_context(|| format!("column '{name}' is not text"))?.to_string()),
                Kind::Int => Value::Int(x.as_i64().with_context(|| format!("column '{name}' is not an integer"))?),
                Kind::Float => Value::f(x.as_f64().unwrap_or(f64::NAN)),
                Kind::Bool => Value::Bool(x.as_bool().with_context(|| format!("column '{name}' is not true/false"))?),
            })
        })
        .collect()
}

/// Writes rows as JSON lines, one typed row (`schedlab.sweep-row/1`, [`SweepRow`]) per line.
pub fn write_jsonl<W: Write>(mut w: W, rows: &[Row]) -> Result<()> {
    for r in rows {
        serde_json::to_writer(&mut w, &typed(r)?)?;
        writeln!(w)?;
    }
    w.flush()?;
    Ok(())
}

/// Reads JSON lines written by [`write_jsonl`], each line through the typed reader.
fn read_jsonl(path: &Path) -> Result<Vec<Row>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut rows = Vec::new();
    for (n, line) in BufReader::new(f).lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        let v: serde_json::Value = serde_json::from_str(&line).with_context(|| format!("{}: not JSON", at()))?;
        let t: SweepRow = results::read(&v).with_context(at)?;
        rows.push(untyped(&t).with_context(at)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Row> {
        (0..3)
            .map(|k| {
                COLUMNS
                    .iter()
                    .map(|(n, kind)| match kind {
                        Kind::Str => Value::Str(format!("{n},\"{k}\"")),
                        Kind::Int => Value::Int(k * 1_000_000_007 - 5),
                        Kind::Float => Value::f(if k == 1 { f64::NAN } else { 0.1 * k as f64 + 1e-17 }),
                        Kind::Bool => Value::Bool(k % 2 == 0),
                    })
                    .collect()
            })
            .collect()
    }

    fn same(a: &[Row], b: &[Row]) -> bool {
        a == b
    }

    #[test]
    fn the_typed_row_has_the_tables_columns() {
        assert_eq!(SweepRow::COLUMNS.to_vec(), header());
        let t = typed(&sample()[1]).unwrap();
        assert!(t.mean_lat_tu.is_nan());
        assert_eq!(untyped(&t).unwrap(), sample()[1]);
    }

    #[test]
    fn csv_and_parquet_round_trip_exactly() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["t.csv", "t.parquet", "t.jsonl"] {
            let p = dir.path().join(name);
            write_table(&p, &sample(), "abc").unwrap();
            let back = read_table(&p).unwrap();
            assert!(same(&back, &sample()), "{name}");
        }
        assert!(write_table(&dir.path().join("t.txt"), &sample(), "abc").is_err());
    }

    #[test]
    fn foreign_tables_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.csv");
        std::fs::write(&p, "a,b\n1,2\n").unwrap();
        assert!(read_table(&p).unwrap_err().to_string().contains("columns differ"));
        let p = dir.path().join("x.parquet");
        std::fs::write(&p, "not parquet").unwrap();
        assert!(read_table(&p).is_err());
    }

    #[test]
    fn csv_splitting_handles_quotes() {
        assert_eq!(split_csv("a,\"b,c\",\"d\"\"e\","), vec!["a", "b,c", "d\"e", ""]);
    }
}
