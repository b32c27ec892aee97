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

pub mod echo_bench;
pub mod predict;
pub mod rdma_share;
pub mod sweep_row;

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
    serde_json::from_value(v).map_err(|e| ResultError::Fields { tag: K::NAME, why: e.to_string() })
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

/// Every kind's schema file name and text: the one list of all result kinds (a new kind adds its
/// line here).
pub fn schemas() -> Vec<(&'static str, String)> {
    vec![
        (echo_bench::EchoBench::FILE, schema_text::<echo_bench::EchoBench>()),
        (rdma_share::RdmaShare::FILE, schema_text::<rdma_share::RdmaShare>()),
        (predict::Predict::FILE, schema_text::<predict::Predict>()),
        (sweep_row::SweepRow::FILE, schema_text::<sweep_row::SweepRow>()),
    ]
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
}
