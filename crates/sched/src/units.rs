//! Bandwidth and duration newtypes and their parsers: the front-end kit's one home for units
//! ([`schedlab_report::units`]), re-exported here under the harness's names.

pub use schedlab_report::units::{human, parse_bps, parse_duration, Bps, Nanos, UnitError};
