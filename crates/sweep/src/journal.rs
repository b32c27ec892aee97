//! The resume journal: `OUT.journal` beside the output, one JSON line per finished cell.
//!
//! Each finished cell is appended as one `write` of one complete line followed by `fsync`, so an
//! interruption at any instant leaves every earlier cell intact; a torn last line (a crash in the
//! middle of a write) is recognised by its missing newline or bad JSON and cut off on resume.
//! The first line names the sweep (`sweep_id`), so a journal from another spec is refused.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::table::Row;

#[derive(Serialize, Deserialize)]
struct Header {
    journal: String,
    sweep_id: String,
    cells_total: u64,
    version: String,
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
        let mut done = BTreeMap::new();
        let mut good_len = 0usize;
        let exists = path.exists();
        if exists {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read the journal {}", path.display()))?;
            let mut pos = 0usize;
            let mut first = true;
            while pos < bytes.len() {
                let Some(nl) = bytes[pos..].iter().position(|&b| b == b'\n') else { break };
                let line = &bytes[pos..pos + nl];
                if first {
                    let h: Header = serde_json::from_slice(line)
                        .with_context(|| format!("{}:1: not a schedlab sweep journal", path.display()))?;
                    if h.sweep_id != sweep_id {
                        bail!(
                            "{} belongs to another sweep (id {}, this spec is {}): the spec, the schedlab version or the shard changed; \
                             remove the journal to start over, or write to another --out",
                            path.display(),
                            h.sweep_id,
                            sweep_id
                        );
                    }
                    first = false;
                } else {
                    let Ok(e) = serde_json::from_slice::<Entry>(line) else { break };
                    done.insert(e.cell, e.rows);
                }
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
            .with_context(|| format!("cannot open the journal {}", path.display()))?;
        // Cut a torn last line so the next append starts on a line of its own.
        if file.metadata()?.len() != good_len as u64 {
            file.set_len(good_len as u64)?;
        }
        if good_len == 0 {
            let h = Header {
                journal: "schedlab-sweep".into(),
                sweep_id: sweep_id.into(),
                cells_total,
                version: crate::VERSION.into(),
            };
            let mut line = serde_json::to_vec(&h)?;
            line.push(b'\n');
            file.write_all(&line)?;
            file.sync_data()?;
        }
        Ok(Journal { path: path.to_path_buf(), file, done })
    }

    /// Appends one finished cell (one write, then fsync).
    pub fn append(&mut self, cell: u64, key: &str, rows: Vec<Row>) -> Result<()> {
        let e = Entry { cell, key: key.into(), rows };
        let mut line = serde_json::to_vec(&e)?;
        line.push(b'\n');
        self.file.write_all(&line).with_context(|| format!("appending to {}", self.path.display()))?;
        self.file.sync_data().with_context(|| format!("syncing {}", self.path.display()))?;
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
    use crate::table::Value;

    #[test]
    fn torn_lines_are_cut_and_other_sweeps_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.csv.journal");
        {
            let mut j = Journal::open(&p, "id1", 3).unwrap();
            j.append(0, "k0", vec![vec![Value::Int(1)]]).unwrap();
            j.append(2, "k2", vec![vec![Value::f(f64::NAN)]]).unwrap();
        }
        // A crash in the middle of the next append.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"cell\":1,\"key\":\"k1\",\"ro").unwrap();
        drop(f);
        let mut j = Journal::open(&p, "id1", 3).unwrap();
        assert_eq!(j.done.keys().copied().collect::<Vec<_>>(), vec![0, 2]);
        j.append(1, "k1", vec![vec![Value::Int(5)]]).unwrap();
        let j = Journal::open(&p, "id1", 3).unwrap();
        assert_eq!(j.done.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(j.done[&2][0][0], Value::f(f64::NAN));
        assert!(Journal::open(&p, "other", 3).err().unwrap().to_string().contains("belongs to another sweep"));
    }
}
