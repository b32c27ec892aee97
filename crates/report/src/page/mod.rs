//! One self-contained HTML page for any set of schedlab results (`schedlab report`).
//!
//! The page is plain HTML with one `<style>` block and the figures as inline SVG: no script, no
//! font or image fetched from anywhere, so it opens from a USB stick. The figures are drawn by
//! [`crate::plot`] (the same code as each command's own `--plot` / `--svg` files).
//!
//! - [`input`]: reads a result file and tells its kind from its content (fields and shape,
//!   never its name);
//! - [`sections`]: one section per result: what was run, the machine and the placement actually
//!   granted, the tables and the figures that fit the data;
//! - [`cli`]: the `schedlab report` command; the page is written to a temporary file and renamed,
//!   so a failed run never leaves half a page.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::plot::esc;

pub mod app;
pub mod cli;
pub mod input;
pub mod kernel;
pub mod sections;
pub mod slowdown;

/// One block of a section.
#[derive(Clone, Debug)]
pub enum Block {
    /// A short definition list (name, value).
    Facts(Vec<(String, String)>),
    /// A table with a caption.
    Table { caption: String, header: Vec<String>, rows: Vec<Vec<String>> },
    /// An inline SVG figure with a caption.
    Figure { caption: String, svg: String },
    /// A paragraph of text.
    Note(String),
    /// A highlighted warning (e.g. "the harness could not keep up").
    Warning(String),
    /// A sub-heading.
    Heading(String),
}

/// One result's section.
#[derive(Clone, Debug)]
pub struct Section {
    /// What kind of result (e.g. "sim", "sched"), shown next to the heading.
    pub kind: String,
    pub title: String,
    /// The file the result came from.
    pub source: String,
    /// A visible "unsupported result" section.
    pub unsupported: bool,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(kind: &str, title: &str, source: &str) -> Section {
        Section { kind: kind.into(), title: title.into(), source: source.into(), unsupported: false, blocks: Vec::new() }
    }
    pub fn push(&mut self, b: Block) -> &mut Self {
        self.blocks.push(b);
        self
    }
    /// Number of figures in the section.
    pub fn figures(&self) -> usize {
        self.blocks.iter().filter(|b| matches!(b, Block::Figure { .. })).count()
    }
}

const CSS: &str = "
:root { color-scheme: light; }
body { font-family: 'DejaVu Sans', Helvetica, Arial, sans-serif; font-size: 14px; line-height: 1.4;
       color: #1a1a1a; background: #fff; max-width: 1000px; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; border-top: 2px solid #0072B2; padding-top: 0.6em; margin-top: 2em; }
h2 .kind { font-size: 0.7em; color: #fff; background: #0072B2; border-radius: 3px; padding: 1px 6px; vertical-align: middle; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
.src { color: #555; font-family: 'DejaVu Sans Mono', monospace; font-size: 0.9em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0.5em 0; }
dl.facts dt { color: #555; }
dl.facts dd { margin: 0; font-family: 'DejaVu Sans Mono', monospace; font-size: 0.92em; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 0.4em 0 1em; font-size: 0.88em; }
p.caption { font-weight: bold; margin: 1em 0 0.2em; }
th, td { border: 1px solid #ccc; padding: 2px 7px; text-align: right; }
th { background: #f0f4f8; }
td:first-child, th:first-child { text-align: left; }
tbody tr:nth-child(even) { background: #fafafa; }
.wide { overflow-x: auto; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #333; font-size: 0.9em; margin-top: 3px; }
.warn { background: #fff4e0; border-left: 4px solid #E69F00; padding: 4px 10px; }
section.unsupported { background: #fde8e8; border: 2px solid #c0392b; padding: 0 1em 1em; }
nav ul { columns: 2; }
footer { margin-top: 3em; color: #777; font-size: 0.85em; }
";

/// The whole page.
#[derive(Clone, Debug)]
pub struct Page {
    pub title: String,
    pub sections: Vec<Section>,
}

impl Page {
    /// Renders the page: one HTML document, one `<style>` block, inline SVG, no script.
    pub fn html(&self) -> String {
        let mut s = String::with_capacity(1 << 16);
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
            esc(&self.title),
            esc(&self.title)
        );
        let figures: usize = self.sections.iter().map(Section::figures).sum();
        let _ = writeln!(s, "<p>{} results, {} figures. Each section: what was run, the machine and the placement that was granted, the tables, the figures.</p>", self.sections.len(), figures);
        s.push_str("<nav><ul>\n");
        for (i, sec) in self.sections.iter().enumerate() {
            let _ = writeln!(
                s,
                "<li><a href=\"#r{}\">{} <span class=\"src\">{}</span></a></li>",
                i + 1,
                esc(&sec.title),
                esc(&sec.source)
            );
        }
        s.push_str("</ul></nav>\n");
        let mut fig = 0;
        for (i, sec) in self.sections.iter().enumerate() {
            let _ = writeln!(
                s,
                "<section id=\"r{}\" class=\"result{}\" data-kind=\"{}\">\n<h2>{}. {} <span class=\"kind\">{}</span></h2>\n<p class=\"src\">{}</p>",
                i + 1,
                if sec.unsupported { " unsupported" } else { "" },
                esc(&sec.kind),
                i + 1,
                esc(&sec.title),
                esc(&sec.kind),
                esc(&sec.source)
            );
            for b in &sec.blocks {
                match b {
                    Block::Facts(f) => {
                        s.push_str("<dl class=\"facts\">\n");
                        for (k, v) in f {
                            let _ = writeln!(s, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
                        }
                        s.push_str("</dl>\n");
                    }
                    Block::Table { caption, header, rows } => {
                        let _ =
                            writeln!(s, "<p class=\"caption\">{}</p>\n<div class=\"wide\"><table>\n<thead><tr>", esc(caption));
                        for h in header {
                            let _ = write!(s, "<th>{}</th>", esc(h));
                        }
                        s.push_str("</tr></thead>\n<tbody>\n");
                        for r in rows {
                            s.push_str("<tr>");
                            for c in r {
                                let _ = write!(s, "<td>{}</td>", esc(c));
                            }
                            s.push_str("</tr>\n");
                        }
                        s.push_str("</tbody></table></div>\n");
                    }
                    Block::Figure { caption, svg } => {
                        fig += 1;
                        let _ = writeln!(
                            s,
                            "<figure class=\"fig\" id=\"fig{fig}\">\n{}\n<figcaption>Figure {fig}. {}</figcaption>\n</figure>",
                            svg.trim_end(),
                            esc(caption)
                        );
                    }
                    Block::Note(t) => {
                        let _ = writeln!(s, "<p>{}</p>", esc(t));
                    }
                    Block::Warning(t) => {
                        let _ = writeln!(s, "<p class=\"warn\">{}</p>", esc(t));
                    }
                    Block::Heading(t) => {
                        let _ = writeln!(s, "<h3>{}</h3>", esc(t));
                    }
                }
            }
            s.push_str("</section>\n");
        }
        let _ = writeln!(s, "<footer>Written by schedlab report {} (self-contained: no scripts, no fetched fonts or images).</footer>\n</body>\n</html>", env!("CARGO_PKG_VERSION"));
        s
    }
}

/// Writes `content` to `path` atomically: a temporary file in the same folder, then a rename;
/// on any error the temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, content: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().with_context(|| format!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let res = std::fs::write(&tmp, content).with_context(|| format!("cannot write {}", tmp.display())).and_then(|()| {
        std::fs::rename(&tmp, path).with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
    });
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_escapes_and_has_no_script() {
        let mut sec = Section::new("sim", "a <b>", "x&y.json");
        sec.push(Block::Facts(vec![("seed".into(), "1".into())]));
        sec.push(Block::Table { caption: "t".into(), header: vec!["h".into()], rows: vec![vec!["<script>".into()]] });
        sec.push(Block::Figure { caption: "c".into(), svg: "<svg></svg>".into() });
        let html = Page { title: "T".into(), sections: vec![sec] }.html();
        assert!(html.contains("a &lt;b&gt;") && html.contains("x&amp;y.json") && html.contains("&lt;script&gt;"));
        assert!(!html.contains("<script"));
        assert!(html.contains("Figure 1. c"));
    }

    #[test]
    fn atomic_write_leaves_nothing_on_error() {
        let d = std::env::temp_dir().join(format!("schedlab-page-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("out.html");
        write_atomic(&p, "x").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "x");
        assert!(write_atomic(&d.join("missing/out.html"), "y").is_err());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "no temporary file left");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
