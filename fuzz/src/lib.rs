//! Helpers shared by the fuzz targets: turning libFuzzer's bytes into argument vectors and texts
//! without any file (every parser under test takes text or a reader).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// Splits `data` at newlines into arguments (`OsString`s: invalid UTF-8 stays invalid, as a
/// shell could pass it). At most 64 arguments, so one input stays cheap.
pub fn os_args(data: &[u8]) -> Vec<OsString> {
    data.split(|&b| b == b'\n').take(64).map(|a| OsString::from_vec(a.to_vec())).collect()
}

/// The same split as UTF-8 strings (lossy), for the hand-written seed-verbatim parsers that
/// take `&[String]`.
pub fn str_args(data: &[u8]) -> Vec<String> {
    data.split(|&b| b == b'\n').take(64).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

/// Splits `data` into `N` parts at NUL bytes (missing parts are empty).
pub fn parts<const N: usize>(data: &[u8]) -> [&[u8]; N] {
    let mut out = [&data[..0]; N];
    let mut it = data.splitn(N, |&b| b == 0);
    for slot in out.iter_mut() {
        match it.next() {
            Some(p) => *slot = p,
            None => break,
        }
    }
    out
}

/// `data` as text, lossily (a file's bytes are read with `read_to_string`, which refuses invalid
/// UTF-8 before any parser runs; the parsers themselves only ever see `&str`).
pub fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}
