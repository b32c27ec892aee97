//! The resume journal: `OUT.journal` beside the output, one JSON line per finished cell.
//!
//! Each finished cell is appended as one `write` of one complete line followed by `fsync`, so an
//! interruption at any instant leaves every earlier cell intact; a torn last line (a crash in the
//! middle of a write) is recognised by its missing newline or bad JSON and cut off on resume.
//! The first line names the sweep (`sweep_id`) and the table's columns, so a journal from another
//! spec, or one whose rows have other columns (another schedlab), is refused rather than read
//! value by value into the wrong columns.
//! Every failure is a [`JournalError`] naming the journal file.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::table::{column_diff, header, row_fits, Row};

/// Why a journal could not be opened, resumed or appended to. Each variant names the journal;
/// the underlying error (I/O, JSON) is its [`source`](std::error::Error::source), which the
/// binary prints after the message (`cannot read the journal o.csv.journal: Permission denied`).
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The journal exists but could not be read.
    #[error("cannot read the journal {}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Its first line (line 1) is not a journal header.
    #[error("{}:1: not a schedlab sweep journal", path.display())]
    NotAJournal { path: PathBuf, source: serde_json::Error },
    /// The journal was written by another sweep (or shard, or schedlab version): `found` is the
    /// id in its header, `expected` the id of this run.
    #[error(
        "{} belongs to another sweep (id {found}, this spec is {expected}): the spec, the schedlab version or the shard \
         changed; remove the journal to start over, or write to another --out",
        path.display()
    )]
    OtherSweep { path: PathBuf, found: String, expected: String },
    /// The journal's rows have other columns than this schedlab's table (its header lists them;
    /// journals written before the header did lack the list).
    #[error(
        "{} holds rows with other columns than this schedlab's sweep table ({why}): it was written by another \
         schedlab; remove the journal to start over, or write to another --out",
        path.display()
    )]
    OtherColumns { path: PathBuf, why: String },
    /// A finished cell's row (on line `line`) does not have the table's columns (a value too many
    /// or too few, or of another type).
    #[error("{}:{line}: a row of cell {cell} does not have this schedlab's sweep table columns", path.display())]
    BadRow { path: PathBuf, line: usize, cell: u64 },
    /// The journal could not be opened (or created) for appending.
    #[error("cannot open the journal {}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
    /// A torn last line could not be cut off.
    #[error("cannot cut the torn last line of {}", path.display())]
    Truncate { path: PathBuf, source: std::io::Error },
    /// A line (the header, or a finished cell) could not be encoded.
    #[error("cannot encode a line of {}", path.display())]
    Encode { path: PathBuf, source: serde_json::Error },
    /// A line (the header, or a finished cell) could not be written.
    #[error("appending to {}", path.display())]
    Append { path: PathBuf, source: std::io::Error },
    /// A written line could not be synced to disk.
    #[error("syncing {}", path.display())]
    Sync { path: PathBuf, source: std::io::Error },
}

type Result<T, E = JournalError> = std::result::Result<T, E>;

#[derive(Serialize, Deserialize)]
struct Header {
    journal: String,
    sweep_id: String,
    cells_total: u64,
    version: String,
    /// The table's columns, in order (absent in journals written before the workload columns).
    #[serde(default)]
    columns: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    cell: u64,
    key: String,
    rows: Vec<Row>,
}

/// An open journal: the cells already finished, and the file to append to.
pub struct Journal {
    path: PathBuf,
    file: File,
    /// Finished cells: cell index -> its rows.
    pub done: BTreeMap<u64, Vec<Row>>,
}

/// The journal's path for an output file.
pub fn journal_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".journal");
    PathBuf::from(s)
}

impl Journal {
    /// Opens (or creates) the journal at `path` for sweep `sweep_id`.
    pub fn open(path: &Path, sweep_id: &str, cells_total: u64) -> Result<Journal> {
        let at = || path.to_path_buf();
        let mut done = BTreeMap::new();
        let mut good_len = 0usize;
        let exists = path.exists();
        if exists {
            let bytes = std::fs::read(path).map_err(|source| JournalError::Read { path: at(), source })?;
            let mut pos = 0usize;
            let mut first = true;
            let mut lineno = 1;
            while pos < bytes.len() {
                let Some(nl) = bytes[pos..].iter().position(|&b| b == b'\n') else { break };
                let line = &bytes[pos..pos + nl];
                if first {
                    let h: Header =
                        serde_json::from_slice(line).map_err(|source| JournalError::NotAJournal { path: at(), source })?;
                    if h.sweep_id != sweep_id {
                        return Err(JournalError::OtherSweep { path: at(), found: h.sweep_id, expected: sweep_id.into() });
                    }
                    let ours = header();
                    match h.columns {
                        None => {
                            let why = "its header does not list them".into();
                            return Err(JournalError::OtherColumns { path: at(), why });
                        }
                        Some(c) if c != ours => {
                            let why = column_diff(&c.iter().map(String::as_str).collect::<Vec<_>>());
                            return Err(JournalError::OtherColumns { path: at(), why });
                        }
                        Some(_) => {}
                    }
                    first = false;
                } else {
                    let Ok(e) = serde_json::from_slice::<Entry>(line) else { break };
                    if !e.rows.iter().all(row_fits) {
                        return Err(JournalError::BadRow { path: at(), line: lineno, cell: e.cell });
                    }
                    done.insert(e.cell, e.rows);
                }
                lineno += 1;
                pos += nl + 1;
                good_len = pos;
            }
            if first {
                good_len = 0; // not even a complete header: start afresh
            }
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(|source| JournalError::Open { path: at(), source })?;
        // Cut a torn last line so the next append starts on a line of its own.
        let len = file.metadata().map_err(|source| JournalError::Truncate { path: at(), source })?.len();
        if len != good_len as u64 {
            file.set_len(good_len as u64).map_err(|source| JournalError::Truncate { path: at(), source })?;
        }
        if good_len == 0 {
            let h = Header {
                journal: "schedlab-sweep".into(),
                sweep_id: sweep_id.into(),
                cells_total,
                version: crate::VERSION.into(),
                columns: Some(header().iter().map(|c| c.to_string()).collect()),
            };
            let mut line = serde_json::to_vec(&h).map_err(|source| JournalError::Encode { path: at(), source })?;
            line.push(b'\n');
            file.write_all(&line).map_err(|source| JournalError::Append { path: at(), source })?;
            file.sync_data().map_err(|source| JournalError::Sync { path: at(), source })?;
        }
        Ok(Journal { path: path.to_path_buf(), file, done })
    }

    /// Appends one finished cell (one write, then fsync).
    pub fn append(&mut self, cell: u64, key: &str, rows: Vec<Row>) -> Result<()> {
        let e = Entry { cell, key: key.into(), rows };
        let at = || self.path.clone();
        let mut line = serde_json::to_vec(&e).map_err(|source| JournalError::Encode { path: at(), source })?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(|source| JournalError::Append { path: at(), source })?;
        self.file.sync_data().map_err(|source| JournalError::Sync { path: at(), source })?;
        self.done.insert(cell, e.rows);
        Ok(())
    }

    /// All finished rows in cell order.
    pub fn rows(&self) -> Vec<Row> {
        self.done.values().flatten().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Kind, Value, COLUMNS};

    /// A row of the table whose integers are `x` and floats `f`.
    fn row(x: i64, f: f64) -> Row {
        COLUMNS
            .iter()
            .map(|(_, k)| match k {
                Kind::Str => Value::Str(x.to_string()),
                Kind::Int => Value::Int(x),
                Kind::OptInt => Value::Null,
                Kind::Float => Value::f(f),
                Kind::Bool => Value::Bool(true),
            })
            .collect()
    }

    #[test]
    fn torn_lines_are_cut_and_other_sweeps_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.csv.journal");
        {
            let mut j = Journal::open(&p, "id1", 3).unwrap();
            j.append(0, "k0", vec![row(1, 0.5)]).unwrap();
            j.append(2, "k2", vec![row(2, f64::NAN)]).unwrap();
        }
        // A crash in the middle of the next append.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"cell\":1,\"key\":\"k1\",\"ro").unwrap();
        drop(f);
        let mut j = Journal::open(&p, "id1", 3).unwrap();
        assert_eq!(j.done.keys().copied().collect::<Vec<_>>(), vec![0, 2]);
        j.append(1, "k1", vec![row(5, 1.0)]).unwrap();
        let j = Journal::open(&p, "id1", 3).unwrap();
        assert_eq!(j.done.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(j.done[&2][0], row(2, f64::NAN));
        assert!(Journal::open(&p, "other", 3).err().unwrap().to_string().contains("belongs to another sweep"));
    }

    #[test]
    fn a_journal_of_another_sweep_is_refused_by_its_variant() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.csv.journal");
        Journal::open(&p, "id1", 3).unwrap().append(0, "k0", vec![row(1, 0.5)]).unwrap();
        let before = std::fs::read(&p).unwrap();
        let e = Journal::open(&p, "id2 shard 1/2", 3).err().unwrap();
        match &e {
            JournalError::OtherSweep { path, found, expected } => {
                assert_eq!((path, found.as_str(), expected.as_str()), (&p, "id1", "id2 shard 1/2"));
            }
            other => panic!("not OtherSweep: {other:?}"),
        }
        assert_eq!(
            e.to_string(),
            format!(
                "{} belongs to another sweep (id id1, this spec is id2 shard 1/2): the spec, the schedlab version or the \
                 shard changed; remove the journal to start over, or write to another --out",
                p.display()
            )
        );
        assert_eq!(std::fs::read(&p).unwrap(), before, "a refused journal is left as it was");
    }

    #[test]
    fn a_foreign_file_names_its_first_line_and_keeps_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.csv.journal");
        std::fs::write(&p, "traffic_pct,seed\n").unwrap();
        let e = Journal::open(&p, "id1", 3).err().unwrap();
        assert!(matches!(&e, JournalError::NotAJournal { path, .. } if *path == p), "{e:?}");
        assert_eq!(e.to_string(), format!("{}:1: not a schedlab sweep journal", p.display()));
        let cause = std::error::Error::source(&e).expect("the JSON error is the source").to_string();
        assert!(cause.contains("line 1"), "{cause}");
        // A journal that is a folder cannot be read: the I/O error is the source.
        let e = Journal::open(dir.path(), "id1", 3).err().unwrap();
        assert!(matches!(&e, JournalError::Read { path, .. } if path == dir.path()), "{e:?}");
        assert!(std::error::Error::source(&e).is_some());
    }

    /// A journal of the same sweep written before the `workload_*` columns (its header lists no
    /// columns, its rows have 31 values): refused, and left as it was.
    #[test]
    fn a_journal_of_other_columns_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.csv.journal");
        let old: Vec<Value> =
            row(1, 0.5).into_iter().zip(COLUMNS).filter(|(_, (c, _))| !c.starts_with("workload_")).map(|(v, _)| v).collect();
        let entry = serde_json::to_string(&Entry { cell: 0, key: "k0".into(), rows: vec![old] }).unwrap();
        let text =
            format!("{{\"journal\":\"schedlab-sweep\",\"sweep_id\":\"id1\",\"cells_total\":3,\"version\":\"0.1.0\"}}\n{entry}\n");
        std::fs::write(&p, &text).unwrap();
        let e = Journal::open(&p, "id1", 3).err().unwrap();
        assert!(matches!(&e, JournalError::OtherColumns { path, .. } if *path == p), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "{} holds rows with other columns than this schedlab's sweep table (its header does not list them): \
                 it was written by another schedlab; remove the journal to start over, or write to another --out",
                p.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), text, "a refused journal is left as it was");
        // A header that lists other columns says which.
        let mut cols: Vec<String> = header().iter().map(|c| c.to_string()).collect();
        cols.retain(|c| c != "workload_commit");
        let h = Header {
            journal: "schedlab-sweep".into(),
            sweep_id: "id1".into(),
            cells_total: 3,
            version: "0.1.0".into(),
            columns: Some(cols),
        };
        std::fs::write(&p, format!("{}\n", serde_json::to_string(&h).unwrap())).unwrap();
        let e = Journal::open(&p, "id1", 3).err().unwrap();
        assert!(matches!(&e, JournalError::OtherColumns { why, .. } if why == "no workload_commit"), "{e:?}");
    }

    /// A complete line whose rows do not have the table's columns is an error naming its line, not
    /// a torn line to cut off (which would drop the cells after it).
    #[test]
    fn a_row_of_other_columns_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.csv.journal");
        {
            let mut j = Journal::open(&p, "id1", 3).unwrap();
            j.append(0, "k0", vec![row(1, 0.5)]).unwrap();
            j.append(1, "k1", vec![row(2, 0.5)[1..].to_vec()]).unwrap();
            let mut wrong = row(3, 0.5);
            wrong[0] = Value::Int(3);
            j.append(2, "k2", vec![wrong]).unwrap();
        }
        let before = std::fs::read(&p).unwrap();
        let e = Journal::open(&p, "id1", 3).err().unwrap();
        assert!(matches!(&e, JournalError::BadRow { line: 3, cell: 1, .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("{}:3: a row of cell 1 does not have this schedlab's sweep table columns", p.display())
        );
        assert_eq!(std::fs::read(&p).unwrap(), before);
    }
}
