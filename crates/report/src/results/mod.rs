//! Typed result kinds: the serde types every writer fills and every reader (the page, the Python
//! readers through the committed JSON Schemas) reads.
//!
//! Each kind carries a `schema` field naming the kind and its version (`"schedlab.echo-bench/1"`).
//! A writer builds the type and writes it with [`crate::export::write_json`]; a reader calls
//! [`read`], which checks the tag and the fields and says what does not match. The JSON Schema of
//! each kind is generated from its type ([`schemas`]) and committed under `schemas/` (and, for the
//! Python package, `python/schedlab/schemas/`); `cargo test -p schedlab-report --test schemas`
//! fails when a committed file is stale and names the command that regenerates it.
//!
//! Adding a field to a result means adding it to its type here (with a doc comment: it becomes the
//! schema's description) and regenerating the schemas. Removing or renaming a field, or changing its
//! meaning, raises the kind's version.
//!
//! Floats that may be NaN or infinite (an empty sample, a division by zero) are written as JSON
//! `null`; their schema says `number` or `null`, and reading turns `null` back into NaN.

pub mod burst;
pub mod echo_bench;
pub mod notify;
pub mod predict;
pub mod prims;
pub mod rdma;
pub mod rdma_share;
pub mod sched;
pub mod sched_repeat;
pub mod semtest;
pub mod sim;
pub mod sweep_row;
pub mod trylock;
pub mod workload;
pub mod workloads;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Declares a zero-sized tag type that writes as `"NAME/VERSION"` and reads only that.
macro_rules! schema_tag {
    ($(#[$m:meta])* $ty:ident, $name:literal, $version:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty;

        impl $ty {
            /// The kind's name.
            pub const NAME: &'static str = $name;
            /// The kind's version: raised when a field is removed, renamed or changes meaning.
            pub const VERSION: u32 = $version;
            /// `NAME/VERSION`, as written in the `schema` field.
            pub const TAG: &'static str = concat!($name, "/", $version);
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(Self::TAG)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $crate::results::check_tag(&s, $name, $version).map(|()| $ty).map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "description": concat!("This result's kind and version: ", $name, "/", $version, "."),
                    "type": "string",
                    "const": concat!($name, "/", $version),
                })
            }
        }
    };
}
pub(crate) use schema_tag;

/// What is wrong with a result file's content.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ResultError {
    /// The `schema` field names another kind.
    #[error("`schema` is {found:?}: this is not a {want} result")]
    OtherKind { found: String, want: &'static str },
    /// The kind is right, the version is not one this schedlab reads.
    #[error(
        "`schema` is {found:?}: this schedlab reads {want}/{version}; read it with the schedlab that wrote it, or write it again"
    )]
    OtherVersion { found: String, want: &'static str, version: u32 },
    /// A field is missing or has the wrong type.
    #[error("does not match the {tag} schema: {why}")]
    Fields { tag: &'static str, why: String },
}

/// Checks a `schema` tag against a kind's name and version.
pub fn check_tag(found: &str, name: &'static str, version: u32) -> Result<(), ResultError> {
    let (n, v) = found.rsplit_once('/').unwrap_or((found, ""));
    if n != name {
        return Err(ResultError::OtherKind { found: found.into(), want: name });
    }
    if v.parse::<u32>().ok() != Some(version) {
        return Err(ResultError::OtherVersion { found: found.into(), want: name, version });
    }
    Ok(())
}

/// A result kind: its type, its tag and the name of its committed schema file.
pub trait Kind: serde::Serialize + DeserializeOwned + schemars::JsonSchema {
    /// The kind's name (`schedlab.echo-bench`).
    const NAME: &'static str;
    /// The version this schedlab writes and reads.
    const VERSION: u32;
    /// The schema's file name under `schemas/`.
    const FILE: &'static str;
    /// What the field types cannot say (checked by [`read`] after the fields).
    fn check_more(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Reads one result of kind `K` from parsed JSON: checks the `schema` tag, then every field. A
/// file written before results carried a `schema` field (recognised as this kind by its fields)
/// is read as version 1.
pub fn read<K: Kind>(v: &Value) -> Result<K, ResultError> {
    let mut v = v.clone();
    let tag = match v.get("schema") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => return Err(ResultError::Fields { tag: K::NAME, why: format!("`schema` is {other}, not a string") }),
        None => format!("{}/1", K::NAME),
    };
    check_tag(&tag, K::NAME, K::VERSION)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("schema".into(), Value::String(tag));
    }
    let k: K = serde_json::from_value(v).map_err(|e| ResultError::Fields { tag: K::NAME, why: e.to_string() })?;
    k.check_more().map_err(|why| ResultError::Fields { tag: K::NAME, why })?;
    Ok(k)
}

/// The `schema` tag of a parsed result, if it has one.
pub fn tag_of(v: &Value) -> Option<&str> {
    v.get("schema").and_then(Value::as_str)
}

/// The JSON Schema of a kind, as committed (pretty JSON, one trailing newline).
pub fn schema_text<K: Kind>() -> String {
    let mut s = serde_json::to_string_pretty(&schemars::schema_for!(K)).expect("a schema serialises");
    s.push('\n');
    s
}

/// One result kind as the cross-kind machinery sees it: its name, version, schema file, and
/// functions that generate its schema and read a parsed result as its type.
#[derive(Clone, Copy)]
pub struct KindInfo {
    /// `schedlab.echo-bench`.
    pub name: &'static str,
    pub version: u32,
    /// The schema's file name under `schemas/` and `python/schedlab/schemas/`.
    pub file: &'static str,
    /// The JSON Schema, as committed.
    pub schema: fn() -> String,
    /// Reads a parsed result as this kind's type ([`read`]) and writes it again (what the type
    /// kept), or says what does not match.
    pub reread: fn(&Value) -> Result<Value, ResultError>,
}

impl KindInfo {
    /// `NAME/VERSION`, as written in the `schema` field.
    pub fn tag(&self) -> String {
        format!("{}/{}", self.name, self.version)
    }
}

fn reread<K: Kind>(v: &Value) -> Result<Value, ResultError> {
    let k = read::<K>(v)?;
    serde_json::to_value(&k).map_err(|e| ResultError::Fields { tag: K::NAME, why: format!("cannot be written again: {e}") })
}

/// The entry of [`KINDS`] for kind `K`.
pub const fn kind<K: Kind>() -> KindInfo {
    KindInfo { name: K::NAME, version: K::VERSION, file: K::FILE, schema: schema_text::<K>, reread: reread::<K> }
}

/// Every result kind, one line each. A new kind is added here (and gets a committed schema from
/// the schemas test, a Python entry in `readers.SCHEMAS`, and a producer in the round-trip test
/// `crates/cli/tests/results.rs`; each of those fails until it is there).
pub const KINDS: &[KindInfo] = &[
    kind::<burst::Burst>(),
    kind::<echo_bench::EchoBench>(),
    kind::<notify::Notify>(),
    kind::<predict::Predict>(),
    kind::<rdma::Rdma>(),
    kind::<rdma_share::RdmaShare>(),
    kind::<sched::Sched>(),
    kind::<sched_repeat::SchedRepeat>(),
    kind::<semtest::Semtest>(),
    kind::<sim::Sim>(),
    kind::<sweep_row::SweepRow>(),
    kind::<trylock::Trylock>(),
    kind::<workloads::Workloads>(),
];

/// The entry of [`KINDS`] with this name (`schedlab.sched`), or with this tag's name
/// (`schedlab.sched/1`).
pub fn kind_named(name_or_tag: &str) -> Option<&'static KindInfo> {
    let name = name_or_tag.rsplit_once('/').map_or(name_or_tag, |(n, _)| n);
    KINDS.iter().find(|k| k.name == name)
}

/// Every kind's schema file name and text.
pub fn schemas() -> Vec<(&'static str, String)> {
    KINDS.iter().map(|k| (k.file, (k.schema)())).collect()
}

/// The schema of a float that is always present and may be `null` (NaN or infinite).
pub struct NullableF64;

impl schemars::JsonSchema for NullableF64 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NullableF64".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["number", "null"], "format": "double"})
    }
}

/// Deserialises a float written as a number, or as `null` for NaN and infinities.
pub fn nan_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_kind_and_version() {
        assert_eq!(check_tag("schedlab.echo-bench/1", "schedlab.echo-bench", 1), Ok(()));
        assert!(matches!(check_tag("schedlab.sim/1", "schedlab.echo-bench", 1), Err(ResultError::OtherKind { .. })));
        let e = check_tag("schedlab.echo-bench/2", "schedlab.echo-bench", 1).unwrap_err();
        assert!(e.to_string().contains("reads schedlab.echo-bench/1"), "{e}");
    }

    #[test]
    fn kinds_are_found_by_name_or_tag() {
        assert_eq!(kind_named("schedlab.sched").map(|k| k.file), Some("sched.schema.json"));
        assert_eq!(kind_named("schedlab.burst/1").map(|k| k.tag()), Some("schedlab.burst/1".to_string()));
        assert!(kind_named("schedlab.nothing").is_none());
    }

    /// A burst target whose fields do not read is refused, not read as a run without targets.
    #[test]
    fn a_burst_needs_its_target() {
        let summary = serde_json::to_value(crate::hist::Summary::default()).unwrap();
        let machine = serde_json::to_value(crate::machine::MachineInfo::collect()).unwrap();
        let thread = serde_json::to_value(crate::machine::ThreadInfo::current()).unwrap();
        let cost = serde_json::to_value(burst::ClientCost::default()).unwrap();
        let target = serde_json::json!({
            "addr": "127.0.0.1:7", "sndbuf_bytes": 1, "rcvbuf_bytes": 1, "busy_poll_us": null, "napi_id": null,
            "bytes_verified": 0, "congestion": "cubic", "client_cost": cost, "rtt_us": summary, "rtt_samples_us": [],
            "disturbance": null,
        });
        let mut v = serde_json::json!({
            "schema": "schedlab.burst/1", "machine": machine, "thread": thread, "size_bytes": 4, "rounds": 1,
            "warmup": 0, "mode": "burst", "spin": false, "interrupted": false,
        });
        for (k, x) in target.as_object().unwrap() {
            v[k] = x.clone();
        }
        let b: burst::Burst = read(&v).expect("one target at the top level reads");
        assert_eq!(b.all_targets().len(), 1);
        assert_eq!(serde_json::to_value(&b).unwrap(), v, "and writes back unchanged");
        let mut bad = v.clone();
        bad["bytes_verified"] = "many".into();
        let e = read::<burst::Burst>(&bad).unwrap_err();
        assert!(e.to_string().contains("neither one target"), "{e}");
        let mut both = v.clone();
        both["targets"] = serde_json::json!([target]);
        assert!(read::<burst::Burst>(&both).unwrap_err().to_string().contains("both"));
    }
}
