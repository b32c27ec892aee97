//! `schedlab report RESULTS... -o report.html`: argv into [`Opts`] (the flow is in [`super::app`]).

use std::ffi::OsString;
use std::path::PathBuf;

/// The help text (printed by [`super::app::main`]).
pub const HELP: &str = "\
schedlab report — one self-contained web page (inline SVG and CSS, no scripts) from schedlab results

Usage: schedlab report [OPTIONS] RESULTS... -o report.html

RESULTS, each recognised by its content (never its name):
  sim --json FILE             the alpha scheduling report's Figures 1-4 and tables
  sweep table (.csv)          the same, over the grid (Parquet: convert with schedlab sweep merge T.parquet --out T.csv)
  sim --csv FILE              the same, from the per-length rows
  sched --json FILE           delay CDFs and per-client shares
  predict --json FILE         latency vs message length, measured vs predicted
  trylock/notify/semtest --json FILE   distributions and rates
  echo-bench --out DIR        (or DIR/results.json) candlesticks and round-trip CDFs
  rdma share --json FILE      share over time and latency CDFs

Options:
  -o, --out FILE          the page to write (written to a temporary file, then renamed)
      --title TEXT        the page's title (default: schedlab results)
      --allow-unsupported show results of unknown kinds as a visible 'unsupported result' section
                          instead of stopping with an error
  -h, --help              this help

Example:
  schedlab sim -t 50,95 --json sim.json && schedlab report sim.json -o report.html
";

/// What `schedlab report` was asked to do.
#[derive(Debug)]
pub struct Opts {
    pub out: PathBuf,
    pub title: String,
    pub allow_unsupported: bool,
    pub inputs: Vec<PathBuf>,
}

/// Parses `args` (`args[0]` is the command's name); `None` for `--help`, `Err` for a usage error.
pub fn parse(args: &[OsString]) -> Result<Option<Opts>, String> {
    let mut out = None;
    let mut title = "schedlab results".to_string();
    let mut allow_unsupported = false;
    let mut inputs = Vec::new();
    let mut it = args.iter().skip(1);
    let mut only_files = false;
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        if only_files {
            inputs.push(PathBuf::from(a));
            continue;
        }
        match s.as_ref() {
            "-h" | "--help" => return Ok(None),
            "--" => only_files = true,
            "-o" | "--out" => out = Some(PathBuf::from(it.next().ok_or(format!("{s} needs a file name"))?)),
            "--title" => title = it.next().ok_or("--title needs a text")?.to_string_lossy().into_owned(),
            "--allow-unsupported" => allow_unsupported = true,
            x if x.starts_with("--out=") => out = Some(PathBuf::from(&x[6..])),
            x if x.starts_with("--title=") => title = x[8..].to_string(),
            x if x.starts_with('-') && x.len() > 1 => return Err(format!("unknown option '{x}'")),
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    let out = out.ok_or("-o FILE is required (the page to write)")?;
    if inputs.is_empty() {
        return Err("no result files given".into());
    }
    Ok(Some(Opts { out, title, allow_unsupported, inputs }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Option<Opts>, String> {
        let v: Vec<OsString> = std::iter::once("report").chain(s.split_whitespace()).map(OsString::from).collect();
        parse(&v)
    }

    #[test]
    fn options() {
        let o = p("a.json b.csv -o r.html --title T").unwrap().unwrap();
        assert_eq!(o.inputs.len(), 2);
        assert_eq!(o.title, "T");
        assert!(p("a.json").unwrap_err().contains("-o FILE"));
        assert!(p("-o r.html").unwrap_err().contains("no result"));
        assert!(p("-o r.html --bogus a").unwrap_err().contains("--bogus"));
        assert!(p("--help").unwrap().is_none());
        assert!(p("-o r.html -- -odd.json").unwrap().unwrap().inputs[0].to_str() == Some("-odd.json"));
    }
}
