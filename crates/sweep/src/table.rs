//! The tidy result table: one row per (cell, strategy, message length), units in column names.
//! Written as CSV or Parquet (by the file's extension) and read back for `sweep merge`. Every
//! failure is a [`TableError`] naming the file (and the line and field where there is one).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::{Field, RowAccessor};
use parquet::schema::parser::parse_message_type;
use schedlab_report::export::csv_line;
use schedlab_report::results::{
    self,
    sweep_row::{SweepRow, SweepRowSchema},
    ResultError,
};
use serde::{Deserialize, Serialize};

/// Why a table could not be named, written or read. Each variant names the file, and the line
/// (1 is the header) and field where there is one; an underlying error (I/O, Parquet, JSON, the
/// typed row's) is the [`source`](std::error::Error::source), which the binary prints after the
/// message (`writing o.csv: No space left on device`).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The extension picks no format.
    #[error("{}: the output's extension must be .csv or .parquet (or .jsonl: typed rows as JSON lines)", path.display())]
    Extension { path: PathBuf },
    /// The temporary file beside the table could not be created.
    #[error("cannot create {}", path.display())]
    Create { path: PathBuf, source: std::io::Error },
    /// Writing the table (into its temporary file) failed.
    #[error("writing {}", path.display())]
    Write { path: PathBuf, source: WriteError },
    /// The written temporary file could not take the table's name.
    #[error("cannot rename {} to {}", from.display(), to.display())]
    Rename { from: PathBuf, to: PathBuf, source: std::io::Error },
    /// The table could not be opened.
    #[error("cannot open {}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
    /// Reading the table failed after it was opened.
    #[error("reading {}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// A CSV file whose header (line 1) is not this schedlab's columns; `why` says how they
    /// differ ([`column_diff`]).
    #[error(
        "{}:1: the columns differ from this schedlab's sweep table ({why}): a table of another schedlab version, \
         or not a sweep table",
        path.display()
    )]
    CsvColumns { path: PathBuf, why: String },
    /// A CSV line with too many or too few fields.
    #[error("{}:{line}: {found} fields, expected {expected}", path.display())]
    FieldCount { path: PathBuf, line: usize, found: usize, expected: usize },
    /// A CSV field that does not parse as its column's type: `value` is not `want` ("an integer",
    /// "a number", "true/false").
    #[error("{}:{line}: field '{field}': '{value}' is not {want}", path.display())]
    Field { path: PathBuf, line: usize, field: &'static str, value: String, want: &'static str },
    /// A file that Parquet cannot read.
    #[error("{}: not a Parquet file", path.display())]
    NotParquet { path: PathBuf, source: ParquetError },
    /// A Parquet file whose columns are not this schedlab's; `why` says how they differ.
    #[error(
        "{}: the columns differ from this schedlab's sweep table ({why}): a table of another schedlab version, \
         or not a sweep table",
        path.display()
    )]
    ParquetColumns { path: PathBuf, why: String },
    /// Reading the rows of a Parquet file failed.
    #[error("{}: cannot read the rows", path.display())]
    ParquetRows { path: PathBuf, source: ParquetError },
    /// A Parquet column whose values could not be read as its type.
    #[error("{}: column '{column}'", path.display())]
    ParquetColumn { path: PathBuf, column: &'static str, source: ParquetError },
    /// A JSON-lines line that is not JSON.
    #[error("{}:{line}: not JSON", path.display())]
    NotJson { path: PathBuf, line: usize, source: serde_json::Error },
    /// A JSON-lines line that is not a typed row of this table.
    #[error("{}:{line}", path.display())]
    Row { path: PathBuf, line: usize, source: RowError },
}

/// What went wrong while writing a table (the source of [`TableError::Write`]).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A row (0-based) without one value per column.
    #[error("CSV row has {cells} cells, header has {columns}")]
    RowWidth { row: usize, cells: usize, columns: usize },
    /// A row (0-based) whose value in `column` is not of the column's type (a bug).
    #[error("row {row}: the value in column '{column}' is not of its type")]
    CellKind { row: usize, column: &'static str },
    /// The Parquet schema of the columns was refused.
    #[error("parquet schema")]
    Schema(#[source] ParquetError),
    #[error(transparent)]
    Parquet(#[from] ParquetError),
    /// A row is not the typed row (its values do not have the columns' types: a bug).
    #[error(transparent)]
    Typed(#[from] ResultError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// A typed row (`schedlab.sweep-row/1`) that is not a row of the table, or the reverse.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// The JSON is not the typed row.
    #[error(transparent)]
    Typed(#[from] ResultError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A column whose value is not of its type: `want` is "text", "an integer" or "true/false".
    #[error("column '{column}' is not {want}")]
    Column { column: &'static str, want: &'static str },
}

type Result<T, E = TableError> = std::result::Result<T, E>;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Str,
    Int,
    /// An integer or nothing: empty in CSV, `null` in JSON and Parquet.
    OptInt,
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
    /// No value (a [`Kind::OptInt`] column only).
    Null,
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
            Value::Null => String::new(),
        }
    }
    /// True when the value may be in a column of `kind`.
    pub fn fits(&self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (Value::Str(_), Kind::Str)
                | (Value::Int(_), Kind::Int | Kind::OptInt)
                | (Value::Null, Kind::OptInt)
                | (Value::Float(_), Kind::Float)
                | (Value::Bool(_), Kind::Bool)
        )
    }
    /// Parses a CSV field; `Err` says what it is not ("an integer", "a number", "true/false").
    fn parse(kind: Kind, s: &str) -> Result<Value, &'static str> {
        Ok(match kind {
            Kind::Str => Value::Str(s.to_string()),
            Kind::Int => Value::Int(s.parse().map_err(|_| "an integer")?),
            Kind::OptInt if s.is_empty() => Value::Null,
            Kind::OptInt => Value::Int(s.parse().map_err(|_| "an integer or empty")?),
            Kind::Float => Value::f(s.parse().map_err(|_| "a number")?),
            Kind::Bool => Value::Bool(s.parse().map_err(|_| "true/false")?),
        })
    }
}

/// The table's columns, in order. Time is in time units (`_tu`: the mean packet service time).
/// The `workload_*` columns record the named workload a row's lengths were drawn from (`lengths`
/// is its name as the spec wrote it); they are empty (null) for other lengths.
pub const COLUMNS: [(&str, Kind); 36] = [
    ("sweep_id", Kind::Str),
    ("cell", Kind::Int),
    ("cells_total", Kind::Int),
    ("traffic_pct", Kind::Float),
    ("lengths", Kind::Str),
    ("mean_len_pkts", Kind::Float),
    ("workload_reading", Kind::Str),
    ("workload_bytes_per_pkt", Kind::OptInt),
    ("workload_checksum", Kind::Str),
    ("workload_source", Kind::Str),
    ("workload_commit", Kind::Str),
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

/// How the column names `found` differ from [`COLUMNS`], in words: the columns missing (at most
/// five named) and those this table does not have, or "the same columns in another order".
pub fn column_diff(found: &[&str]) -> String {
    let ours = header();
    let list = |v: Vec<&str>| {
        let n = v.len();
        let mut s = v.into_iter().take(5).collect::<Vec<_>>().join(", ");
        if n > 5 {
            s.push_str(&format!(" and {} more", n - 5));
        }
        s
    };
    let missing: Vec<&str> = ours.iter().copied().filter(|c| !found.contains(c)).collect();
    let extra: Vec<&str> = found.iter().copied().filter(|c| !ours.contains(c)).collect();
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("no {}", list(missing)));
    }
    if !extra.is_empty() {
        parts.push(format!("unknown {}", list(extra)));
    }
    if parts.is_empty() {
        if found.len() == ours.len() {
            "the same columns in another order".into()
        } else {
            "a column twice".into()
        }
    } else {
        parts.join("; ")
    }
}

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
            _ => Err(TableError::Extension { path: path.to_path_buf() }),
        }
    }
}

/// Writes `rows` to `path` atomically (a temporary file in the same folder, then a rename).
pub fn write_table(path: &Path, rows: &[Row], sweep_id: &str) -> Result<()> {
    let format = Format::of(path)?;
    let tmp =
        path.with_file_name(format!(".{}.tmp{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("out"), std::process::id()));
    let f = File::create(&tmp).map_err(|source| TableError::Create { path: tmp.clone(), source })?;
    let res = match format {
        Format::Csv => write_csv(f, rows),
        Format::Parquet => write_parquet(f, rows, sweep_id),
        Format::Jsonl => write_jsonl(BufWriter::new(f), rows),
    };
    if let Err(source) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(TableError::Write { path: path.to_path_buf(), source });
    }
    std::fs::rename(&tmp, path).map_err(|source| TableError::Rename { from: tmp, to: path.to_path_buf(), source })
}

/// Whether `r` has one value per column, each of its column's kind.
pub fn row_fits(r: &Row) -> bool {
    r.len() == COLUMNS.len() && r.iter().zip(COLUMNS).all(|(v, (_, kind))| v.fits(kind))
}

/// Checks that row `row` (0-based) has one value per column, each of its column's kind.
fn check_row(row: usize, r: &Row) -> Result<(), WriteError> {
    if r.len() != COLUMNS.len() {
        return Err(WriteError::RowWidth { row, cells: r.len(), columns: COLUMNS.len() });
    }
    match r.iter().zip(COLUMNS).find(|(v, (_, kind))| !v.fits(*kind)) {
        Some((_, (column, _))) => Err(WriteError::CellKind { row, column }),
        None => Ok(()),
    }
}

/// The CSV table: a header, then one line per row, quoted as `schedlab_report::export::Csv` quotes.
fn write_csv(f: File, rows: &[Row]) -> Result<(), WriteError> {
    let mut w = BufWriter::new(f);
    writeln!(w, "{}", csv_line(&header()))?;
    for (i, r) in rows.iter().enumerate() {
        check_row(i, r)?;
        let cells: Vec<String> = r.iter().map(Value::text).collect();
        writeln!(w, "{}", csv_line(&cells))?;
    }
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

fn write_parquet(f: File, rows: &[Row], sweep_id: &str) -> Result<(), WriteError> {
    let mut schema = String::from("message schedlab_sweep {\n");
    for (name, kind) in COLUMNS {
        let t = match kind {
            Kind::Str => "BYTE_ARRAY",
            Kind::Int | Kind::OptInt => "INT64",
            Kind::Float => "DOUBLE",
            Kind::Bool => "BOOLEAN",
        };
        let ann = if kind == Kind::Str { " (UTF8)" } else { "" };
        let rep = if kind == Kind::OptInt { "OPTIONAL" } else { "REQUIRED" };
        schema.push_str(&format!("  {rep} {t} {name}{ann};\n"));
    }
    schema.push('}');
    let schema = Arc::new(parse_message_type(&schema).map_err(WriteError::Schema)?);
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
    for (i, r) in rows.iter().enumerate() {
        check_row(i, r)?;
    }
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
            Kind::OptInt => {
                // The values present, and a definition level per row (1: present, 0: null).
                let v: Vec<i64> = rows.iter().filter_map(|r| if let Value::Int(x) = r[i] { Some(x) } else { None }).collect();
                let def: Vec<i16> = rows.iter().map(|r| i16::from(matches!(r[i], Value::Int(_)))).collect();
                c.typed::<Int64Type>().write_batch(&v, Some(&def), None)?;
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
    let at = || path.to_path_buf();
    let f = File::open(path).map_err(|source| TableError::Open { path: at(), source })?;
    let mut lines = BufReader::new(f).lines();
    let head = lines.next().transpose().map_err(|source| TableError::Read { path: at(), source })?.unwrap_or_default();
    let found = head.split(',').collect::<Vec<_>>();
    if found != header() {
        return Err(TableError::CsvColumns { path: at(), why: column_diff(&found) });
    }
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        let line = line.map_err(|source| TableError::Read { path: at(), source })?;
        let cells = split_csv(&line);
        if cells.len() != COLUMNS.len() {
            return Err(TableError::FieldCount { path: at(), line: n + 2, found: cells.len(), expected: COLUMNS.len() });
        }
        let row = cells
            .iter()
            .zip(COLUMNS)
            .map(|(s, (field, kind))| {
                Value::parse(kind, s).map_err(|want| TableError::Field { path: at(), line: n + 2, field, value: s.clone(), want })
            })
            .collect::<Result<Row>>()?;
        rows.push(row);
    }
    Ok(rows)
}

pub use schedlab_report::export::split_csv;

fn read_parquet(path: &Path) -> Result<Vec<Row>> {
    let at = || path.to_path_buf();
    let f = File::open(path).map_err(|source| TableError::Open { path: at(), source })?;
    let r = SerializedFileReader::new(f).map_err(|source| TableError::NotParquet { path: at(), source })?;
    let columns = r.metadata().file_metadata().schema_descr().columns().to_vec();
    let names: Vec<&str> = columns.iter().map(|c| c.name()).collect();
    // Same names, and a column that may be null exactly where this table has one.
    let optional = columns.iter().map(|c| c.max_def_level() > 0);
    if names != header() {
        return Err(TableError::ParquetColumns { path: at(), why: column_diff(&names) });
    }
    if let Some((o, (column, _))) = optional.zip(COLUMNS).find(|(o, (_, kind))| *o != (*kind == Kind::OptInt)) {
        let why = format!("column {column} {} null there", if o { "may be" } else { "is never" });
        return Err(TableError::ParquetColumns { path: at(), why });
    }
    let mut rows = Vec::new();
    for rec in r.get_row_iter(None).map_err(|source| TableError::ParquetRows { path: at(), source })? {
        let rec = rec.map_err(|source| TableError::ParquetRows { path: at(), source })?;
        let mut row = Vec::with_capacity(COLUMNS.len());
        for (i, &(column, kind)) in COLUMNS.iter().enumerate() {
            let v = match kind {
                Kind::Str => rec.get_string(i).map(|s| Value::Str(s.clone())),
                Kind::Int => rec.get_long(i).map(Value::Int),
                Kind::OptInt => match rec.get_column_iter().nth(i) {
                    Some((_, Field::Null)) => Ok(Value::Null),
                    _ => rec.get_long(i).map(Value::Int),
                },
                Kind::Float => rec.get_double(i).map(Value::f),
                Kind::Bool => rec.get_bool(i).map(Value::Bool),
            }
            .map_err(|source| TableError::ParquetColumn { path: at(), column, source })?;
            row.push(v);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// A row as the typed result kind (`schedlab.sweep-row/1`). Fails only for a row whose values do
/// not have the columns' types (a bug).
pub fn typed(r: &Row) -> Result<SweepRow, ResultError> {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), serde_json::Value::from(SweepRowSchema::TAG));
    for ((name, _), v) in COLUMNS.iter().zip(r) {
        let j = match v {
            Value::Str(s) => serde_json::Value::from(s.clone()),
            Value::Int(i) => serde_json::Value::from(*i),
            // NaN and infinities become null (`serde_json::Value::from` does), read back as NaN.
            Value::Float(b) => serde_json::Value::from(f64::from_bits(*b)),
            Value::Bool(b) => serde_json::Value::from(*b),
            Value::Null => serde_json::Value::Null,
        };
        m.insert((*name).to_string(), j);
    }
    results::read::<SweepRow>(&serde_json::Value::Object(m))
}

/// A typed row as a row of the table, in [`COLUMNS`] order.
pub fn untyped(t: &SweepRow) -> Result<Row, RowError> {
    let v = serde_json::to_value(t)?;
    COLUMNS
        .iter()
        .map(|&(column, kind)| {
            let x = &v[column];
            let not = |want| RowError::Column { column, want };
            Ok(match kind {
                Kind::Str => Value::Str(x.as_str().ok_or_else(|| not("text"))?.to_string()),
                Kind::Int => Value::Int(x.as_i64().ok_or_else(|| not("an integer"))?),
                Kind::OptInt if x.is_null() => Value::Null,
                Kind::OptInt => Value::Int(x.as_i64().ok_or_else(|| not("an integer or null"))?),
                Kind::Float => Value::f(x.as_f64().unwrap_or(f64::NAN)),
                Kind::Bool => Value::Bool(x.as_bool().ok_or_else(|| not("true/false"))?),
            })
        })
        .collect()
}

/// Writes rows as JSON lines, one typed row (`schedlab.sweep-row/1`, [`SweepRow`]) per line.
pub fn write_jsonl<W: Write>(mut w: W, rows: &[Row]) -> Result<(), WriteError> {
    for r in rows {
        serde_json::to_writer(&mut w, &typed(r)?)?;
        writeln!(w)?;
    }
    w.flush()?;
    Ok(())
}

/// Reads JSON lines written by [`write_jsonl`], each line through the typed reader.
fn read_jsonl(path: &Path) -> Result<Vec<Row>> {
    let at = || path.to_path_buf();
    let f = File::open(path).map_err(|source| TableError::Open { path: at(), source })?;
    let mut rows = Vec::new();
    for (n, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|source| TableError::Read { path: at(), source })?;
        if line.trim().is_empty() {
            continue;
        }
        let row = |source: RowError| TableError::Row { path: at(), line: n + 1, source };
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|source| TableError::NotJson { path: at(), line: n + 1, source })?;
        let t: SweepRow = results::read(&v).map_err(|e| row(e.into()))?;
        rows.push(untyped(&t).map_err(row)?);
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
                        Kind::OptInt if k == 1 => Value::Null,
                        Kind::OptInt => Value::Int(k * 1460 - 3),
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
    fn a_csv_field_of_the_wrong_type_names_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        write_table(&p, &sample(), "abc").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        // Line 3 (the second row): its `seed` field is not an integer.
        let mut cells = split_csv(&lines[2]);
        cells[col("seed")] = "x7".into();
        lines[2] = csv_line(&cells);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let e = read_table(&p).unwrap_err();
        match &e {
            TableError::Field { path, line, field, value, want } => {
                assert_eq!((path, *line, *field, value.as_str(), *want), (&p, 3, "seed", "x7", "an integer"));
            }
            other => panic!("not Field: {other:?}"),
        }
        assert_eq!(e.to_string(), format!("{}:3: field 'seed': 'x7' is not an integer", p.display()));
        // A line with a field too few.
        lines[2] = csv_line(&cells[1..]);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(matches!(e, TableError::FieldCount { line: 3, found: 35, expected: 36, .. }), "{e:?}");
        assert_eq!(e.to_string(), format!("{}:3: 35 fields, expected 36", p.display()));
    }

    #[test]
    fn an_unknown_extension_is_refused_by_its_variant() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        let e = Format::of(&p).unwrap_err();
        assert!(matches!(&e, TableError::Extension { path } if *path == p), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("{}: the output's extension must be .csv or .parquet (or .jsonl: typed rows as JSON lines)", p.display())
        );
        assert!(matches!(write_table(&p, &sample(), "abc"), Err(TableError::Extension { .. })));
        assert!(matches!(read_table(&p), Err(TableError::Extension { .. })));
        assert!(!p.exists() && std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing was written");
        for ok in ["a.CSV", "a.parquet", "a.pq", "a.jsonl", "a.ndjson"] {
            assert!(Format::of(Path::new(ok)).is_ok(), "{ok}");
        }
    }

    #[test]
    fn write_failures_name_the_table_and_keep_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        // A row without one value per column.
        let p = dir.path().join("t.csv");
        let e = write_table(&p, &[vec![Value::Int(1)]], "abc").unwrap_err();
        assert!(
            matches!(&e, TableError::Write { path, source: WriteError::RowWidth { row: 0, cells: 1, columns: 36 } } if *path == p)
        );
        assert_eq!(e.to_string(), format!("writing {}", p.display()));
        assert_eq!(std::error::Error::source(&e).unwrap().to_string(), "CSV row has 1 cells, header has 36");
        assert!(!p.exists() && std::fs::read_dir(dir.path()).unwrap().next().is_none(), "the temporary file is removed");
        // A folder that does not exist.
        let p = dir.path().join("no/such/t.csv");
        let e = write_table(&p, &sample(), "abc").unwrap_err();
        assert!(matches!(&e, TableError::Create { .. }), "{e:?}");
        assert!(e.to_string().starts_with("cannot create ") && std::error::Error::source(&e).is_some(), "{e}");
    }

    #[test]
    fn a_jsonl_line_that_is_not_a_row_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        write_table(&p, &sample()[..1], "abc").unwrap();
        let first = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("{first}\n{{\"schema\": \"other/1\"}}\n")).unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(matches!(&e, TableError::Row { line: 3, source: RowError::Typed(_), .. }), "{e:?}");
        assert_eq!(e.to_string(), format!("{}:3", p.display()));
        std::fs::write(&p, format!("{first}{{\n")).unwrap();
        assert!(matches!(read_table(&p), Err(TableError::NotJson { line: 2, .. })));
    }

    /// The table's columns before the workload's (schedlab 0.1.0 until the `workload_*` columns).
    fn old_header() -> Vec<&'static str> {
        header().into_iter().filter(|c| !c.starts_with("workload_")).collect()
    }

    /// A table written before the `workload_*` columns is refused with the columns it lacks,
    /// in every format, never read value by value into the wrong columns.
    #[test]
    fn a_table_without_the_workload_columns_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(old_header().len(), 31);
        let want = "no workload_reading, workload_bytes_per_pkt, workload_checksum, workload_source, workload_commit";
        // CSV: the old header and a row of the old width.
        let p = dir.path().join("old.csv");
        let row: Vec<String> =
            sample()[0].iter().zip(header()).filter(|(_, c)| !c.starts_with("workload_")).map(|(v, _)| v.text()).collect();
        std::fs::write(&p, format!("{}\n{}\n", csv_line(&old_header()), csv_line(&row))).unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(matches!(&e, TableError::CsvColumns { why, .. } if why == want), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "{}:1: the columns differ from this schedlab's sweep table ({want}): a table of another schedlab \
                 version, or not a sweep table",
                p.display()
            )
        );
        // Parquet: the old columns.
        let p = dir.path().join("old.parquet");
        let mut schema = String::from("message schedlab_sweep {\n");
        for c in old_header() {
            schema.push_str(&format!("  REQUIRED INT64 {c};\n"));
        }
        schema.push('}');
        let schema = Arc::new(parse_message_type(&schema).unwrap());
        let w = SerializedFileWriter::new(File::create(&p).unwrap(), schema, Default::default()).unwrap();
        w.close().unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(matches!(&e, TableError::ParquetColumns { why, .. } if why == want), "{e:?}");
        // JSON lines: a typed row without the workload fields.
        let p = dir.path().join("old.jsonl");
        let mut v = serde_json::to_value(typed(&sample()[0]).unwrap()).unwrap();
        for c in header().into_iter().filter(|c| c.starts_with("workload_")) {
            v.as_object_mut().unwrap().remove(c);
        }
        std::fs::write(&p, format!("{v}\n")).unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(matches!(&e, TableError::Row { line: 1, source: RowError::Typed(ResultError::Fields { .. }), .. }), "{e:?}");
        let cause = std::error::Error::source(&e).unwrap().to_string();
        assert!(cause.contains("missing field `workload_"), "{cause}");
        // Without bytes per packet alone (the one that may be null) too: absent is not null.
        let mut v = serde_json::to_value(typed(&sample()[0]).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("workload_bytes_per_pkt");
        std::fs::write(&p, format!("{v}\n")).unwrap();
        let cause = std::error::Error::source(&read_table(&p).unwrap_err()).unwrap().to_string();
        assert!(cause.contains("missing field `workload_bytes_per_pkt`"), "{cause}");
    }

    /// Bytes per packet is empty in CSV, null in JSON and Parquet, when there is none.
    #[test]
    fn a_missing_bytes_per_packet_is_empty_or_null() {
        let dir = tempfile::tempdir().unwrap();
        let i = col("workload_bytes_per_pkt");
        let p = dir.path().join("t.csv");
        write_table(&p, &sample(), "abc").unwrap();
        let lines: Vec<Vec<String>> = std::fs::read_to_string(&p).unwrap().lines().map(split_csv).collect();
        assert_eq!((lines[1][i].as_str(), lines[2][i].as_str()), ("-3", ""));
        let t = typed(&sample()[1]).unwrap();
        assert_eq!(t.workload_bytes_per_pkt, None);
        assert!(serde_json::to_value(&t).unwrap()["workload_bytes_per_pkt"].is_null());
        let p = dir.path().join("t.parquet");
        write_table(&p, &sample(), "abc").unwrap();
        assert_eq!(read_table(&p).unwrap()[1][i], Value::Null);
        // A null where the column cannot be one is refused before anything is written.
        let mut bad = sample();
        bad[0][col("cell")] = Value::Null;
        let e = write_table(&p, &bad, "abc").unwrap_err();
        assert!(matches!(&e, TableError::Write { source: WriteError::CellKind { row: 0, column: "cell" }, .. }), "{e:?}");
        // A CSV field that is neither a number nor empty names what it should be.
        let p = dir.path().join("t.csv");
        let mut rows: Vec<String> = std::fs::read_to_string(&p).unwrap().lines().map(String::from).collect();
        let mut cells = split_csv(&rows[1]);
        cells[i] = "1460B".into();
        rows[1] = csv_line(&cells);
        std::fs::write(&p, rows.join("\n") + "\n").unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(matches!(&e, TableError::Field { want: "an integer or empty", .. }), "{e:?}");
    }

    #[test]
    fn csv_splitting_handles_quotes() {
        assert_eq!(split_csv("a,\"b,c\",\"d\"\"e\","), vec!["a", "b,c", "d\"e", ""]);
    }
}
