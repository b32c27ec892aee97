//! JSON and CSV files. Field names carry their units (`lat_us`, `rate_pps`, `bytes`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

/// Writes `value` as pretty JSON to `path` (`-` means stdout).
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    if path.as_os_str() == "-" {
        let out = std::io::stdout();
        let mut w = out.lock();
        serde_json::to_writer_pretty(&mut w, value).context("writing JSON to stdout")?;
        writeln!(w)?;
        return Ok(());
    }
    let f = File::create(path).with_context(|| format!("cannot create JSON file {}", path.display()))?;
    let mut w = BufWriter::new(f);
    serde_json::to_writer_pretty(&mut w, value).with_context(|| format!("writing {}", path.display()))?;
    writeln!(w)?;
    w.flush().with_context(|| format!("writing {}", path.display()))
}

/// A minimal CSV writer: a header row, then rows of already formatted cells (quoted when needed).
pub struct Csv<W: Write> {
    w: W,
    columns: usize,
}

impl Csv<BufWriter<File>> {
    /// Creates `path` and writes the header.
    pub fn create(path: &Path, header: &[&str]) -> Result<Self> {
        let f = File::create(path).with_context(|| format!("cannot create CSV file {}", path.display()))?;
        Csv::new(BufWriter::new(f), header)
    }
}

impl<W: Write> Csv<W> {
    /// Wraps a writer and writes the header.
    pub fn new(w: W, header: &[&str]) -> Result<Self> {
        let mut c = Csv { w, columns: header.len() };
        c.row(header)?;
        Ok(c)
    }
    /// Writes one row; it must have as many cells as the header.
    pub fn row<S: AsRef<str>>(&mut self, cells: &[S]) -> Result<()> {
        anyhow::ensure!(cells.len() == self.columns, "CSV row has {} cells, header has {}", cells.len(), self.columns);
        writeln!(self.w, "{}", csv_line(cells))?;
        Ok(())
    }
    /// Flushes and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

/// One CSV line (no newline) of already formatted cells, quoted as [`Csv`] quotes them: for
/// outputs that are a single row, such as the seeds' header-less result lines.
pub fn csv_line<S: AsRef<str>>(cells: &[S]) -> String {
    cells.iter().map(|c| quote(c.as_ref())).collect::<Vec<_>>().join(",")
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Splits one CSV line as [`Csv`] writes it (fields quoted with `"` when they contain commas or
/// quotes; `""` inside quotes is one quote): the reading side of the one CSV format.
pub fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.is_empty() => quoted = true,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn csv_quotes_and_checks_width() {
        let mut c = Csv::new(Vec::new(), &["name", "lat_us"]).unwrap();
        c.row(&["a,b", "1.5"]).unwrap();
        assert!(c.row(&["x"]).is_err());
        let out = String::from_utf8(c.finish().unwrap()).unwrap();
        assert_eq!(out, "name,lat_us\n\"a,b\",1.5\n");
    }

    #[test]
    fn csv_quotes_carriage_returns_and_quotes() {
        let mut c = Csv::new(Vec::new(), &["a", "b"]).unwrap();
        c.row(&["x\ry", "say \"hi\""]).unwrap();
        let out = String::from_utf8(c.finish().unwrap()).unwrap();
        assert_eq!(out, "a,b\n\"x\ry\",\"say \"\"hi\"\"\"\n");
    }
}
