//! The committed JSON Schemas (`schemas/`, and the Python package's copy in
//! `python/schedlab/schemas/`) are the ones the result types generate. A stale or missing file
//! fails with the command that regenerates them:
//!
//!     SCHEDLAB_BLESS_SCHEMAS=1 cargo test -p schedlab-report --test schemas

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

const DIRS: [&str; 2] = ["schemas", "python/schedlab/schemas"];

#[test]
fn committed_schemas_match_the_result_types() {
    let root = root();
    let bless = std::env::var_os("SCHEDLAB_BLESS_SCHEMAS").is_some_and(|v| v == "1");
    let generated = schedlab_report::results::schemas();
    let mut stale = Vec::new();
    for dir in DIRS {
        let dir = root.join(dir);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
        }
        for (file, text) in &generated {
            let path = dir.join(file);
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            if committed != *text {
                if bless {
                    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
                } else {
                    stale.push(path.display().to_string());
                }
            }
        }
        // A schema file no type generates any more is stale too.
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".schema.json") && !generated.iter().any(|(f, _)| *f == name) {
                if bless {
                    std::fs::remove_file(entry.path()).unwrap();
                } else {
                    stale.push(format!("{} (no result type generates it)", entry.path().display()));
                }
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale JSON Schemas:\n  {}\nregenerate them: SCHEDLAB_BLESS_SCHEMAS=1 cargo test -p schedlab-report --test schemas",
        stale.join("\n  ")
    );
}

#[test]
fn every_schema_names_its_tag() {
    for (file, text) in schedlab_report::results::schemas() {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let tag = v.pointer("/properties/schema/const").or_else(|| {
            let r = v.pointer("/properties/schema/$ref")?.as_str()?.rsplit('/').next()?;
            v.pointer(&format!("/$defs/{r}/const"))
        });
        assert!(tag.and_then(|t| t.as_str()).is_some_and(|t| t.starts_with("schedlab.")), "{file}: no schema tag: {text}");
        assert!(v["required"].as_array().is_some_and(|r| r.iter().any(|x| x == "schema")), "{file}: `schema` must be required");
    }
}

/// The Python package validates a kind only if `readers.SCHEMAS` names it with its version and
/// file: every kind of `results::KINDS` is there, and nothing else.
#[test]
fn python_readers_know_every_kind() {
    let text = std::fs::read_to_string(root().join("python/schedlab/readers.py")).expect("python/schedlab/readers.py");
    let start = text.find("SCHEMAS: dict[str, tuple[int, str]] = {").expect("readers.py defines SCHEMAS");
    let body = &text[start..text[start..].find("\n}").map(|e| start + e).expect("SCHEMAS closes")];
    let mut python: Vec<String> = body
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let (name, rest) = l.strip_prefix('"')?.split_once("\": (")?;
            let (version, file) = rest.split_once(", \"")?;
            Some(format!("{name} {version} {}", file.split('"').next()?))
        })
        .collect();
    let mut rust: Vec<String> =
        schedlab_report::results::KINDS.iter().map(|k| format!("{} {} {}", k.name, k.version, k.file)).collect();
    python.sort();
    rust.sort();
    assert_eq!(python, rust, "python/schedlab/readers.py's SCHEMAS and results::KINDS differ");
}

#[test]
fn kinds_have_distinct_names_and_files() {
    let kinds = schedlab_report::results::KINDS;
    for (i, a) in kinds.iter().enumerate() {
        for b in &kinds[i + 1..] {
            assert!(a.name != b.name && a.file != b.file, "{} and {} share a name or a file", a.name, b.name);
        }
        assert!(a.file == format!("{}.schema.json", a.name.trim_start_matches("schedlab.")), "{}: file {}", a.name, a.file);
    }
}
