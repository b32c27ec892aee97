//! The `schedlab report` command's flow: parse ([`super::cli`]), read and check every result,
//! write the page.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{bail, Result};

use super::cli::{parse, HELP};
use super::input::{read, Input};
use super::sections::{render, typed_error, unsupported};
use super::{write_atomic, Page};
use crate::frontend::exit;

/// Builds the page from the result files: every file is read and checked before anything is
/// written, so an error never leaves a page (or half of one) behind.
pub fn build(paths: &[PathBuf], title: &str, allow_unsupported: bool) -> Result<Page> {
    let mut sections = Vec::new();
    for p in paths {
        let input: Input = read(p)?;
        match input.kind.clone() {
            Ok(kind) => match typed_error(&input, kind) {
                Some(why) if !allow_unsupported => {
                    bail!("{}: {why} (--allow-unsupported shows it as a section with this warning instead)", input.file.display())
                }
                _ => sections.push(render(&input, kind)),
            },
            Err(why) if allow_unsupported => sections.push(unsupported(&input, &why)),
            Err(why) => {
                bail!("{}: unsupported result: {why} (--allow-unsupported shows it as a section instead)", input.file.display())
            }
        }
    }
    Ok(Page { title: title.to_string(), sections })
}

/// The command: `args[0]` is the command's name.
pub fn main(args: Vec<OsString>) -> Result<i32> {
    let o = match parse(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{HELP}");
            return Ok(exit::OK);
        }
        Err(e) => {
            eprintln!("schedlab report: {e}\n\n{HELP}");
            return Ok(exit::USAGE);
        }
    };
    let page = build(&o.inputs, &o.title, o.allow_unsupported)?;
    let html = page.html();
    write_atomic(&o.out, &html)?;
    let figures: usize = page.sections.iter().map(|s| s.figures()).sum();
    eprintln!("wrote {} ({} results, {} figures, {} bytes)", o.out.display(), page.sections.len(), figures, html.len());
    Ok(exit::OK)
}
