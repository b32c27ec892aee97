//! `schedlab report FILE...`: any file a user hands the page builder (a JSON result of any command,
//! a sweep or sim CSV table, anything else), read, classified and rendered without and with
//! `--allow-unsupported` (with it, a malformed result of a known kind is rendered too). Any panic is
//! a bug; a page that is built must also render to HTML. The input is written to a file of this
//! process's own (the reader takes paths, as the command does), removed after each input.
#![no_main]
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use schedlab_report::page::app::build;

fn scratch() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| std::env::temp_dir().join(format!("schedlab-fuzz-report-{}.json", std::process::id())))
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::write(path, data).expect("the scratch file is writable");
    for allow in [false, true] {
        if let Ok(page) = build(std::slice::from_ref(path), "fuzz", allow) {
            let _ = page.html();
        }
    }
    let _ = std::fs::remove_file(path);
});
