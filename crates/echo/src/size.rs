//! Burst sizes: `64` (a bare number means KiB, like the seed's `test-burst`), `1B`, `4K`, `1M`.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::EchoError;

/// The largest burst accepted.
pub const MAX_SIZE: u64 = 256 << 20;

/// A number of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Size(pub u64);

impl Size {
    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
    /// The size as a buffer length.
    pub fn len(self) -> usize {
        self.0 as usize
    }
    /// True for 0 bytes (never produced by parsing).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Size {
    /// Compact binary form: `1B`, `4K`, `64K`, `1M`, `1500B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
            if b >= 1 << shift && b & ((1 << shift) - 1) == 0 {
                return write!(f, "{}{unit}", b >> shift);
            }
        }
        write!(f, "{b}B")
    }
}

impl FromStr for Size {
    type Err = EchoError;

    /// Parses `N` (KiB, as in the seed), `N.F` (decimal KiB of at least 1, rounded down to bytes as
    /// test-burst does), `NB` (bytes), `NK`/`NKiB`, `NM`/`NMiB`, `NG`/`NGiB` (binary units,
    /// case-insensitive; `KB`/`MB` are read as KiB/MiB too).
    fn from_str(s: &str) -> Result<Self, EchoError> {
        let bad = |reason: &str| EchoError::BadSize { input: s.to_string(), reason: reason.to_string() };
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        if num.is_empty() {
            return Err(bad("expected a whole number with an optional unit: 64 (KiB), 1B, 4K, 1M"));
        }
        let n: u64 = num.parse().map_err(|_| bad("number too large"))?;
        if let Some(frac) = unit.strip_prefix('.').filter(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit())) {
            // A bare decimal number of KiB, as test-burst reads it (bytes = KiB·1024, rounded down).
            let kib: f64 = format!("{num}.{frac}").parse().map_err(|_| bad("not a number"))?;
            if kib < 1.0 {
                return Err(bad("below 1 KiB the original test-burst sends a 128 KiB burst instead; give bytes, e.g. 512B"));
            }
            let bytes = (kib * 1024.0) as u64;
            if bytes > MAX_SIZE {
                return Err(bad(&format!("larger than the {} limit", Size(MAX_SIZE))));
            }
            return Ok(Size(bytes));
        }
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "k" | "kb" | "kib" => 1 << 10,
            "b" => 1,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            _ => return Err(bad("unknown unit; use B (bytes), K, M or G (a bare number means KiB)")),
        };
        let bytes = n.checked_mul(mult).ok_or_else(|| bad("number too large"))?;
        if bytes == 0 {
            return Err(bad("a burst must be at least 1 byte"));
        }
        if bytes > MAX_SIZE {
            return Err(bad(&format!("larger than the {} limit", Size(MAX_SIZE))));
        }
        Ok(Size(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn units() {
        let p = |s: &str| s.parse::<Size>().map(|s| s.0);
        assert_eq!(p("64").unwrap(), 64 << 10, "bare number is KiB like the seed");
        assert_eq!(p("1B").unwrap(), 1);
        assert_eq!(p("1b").unwrap(), 1);
        assert_eq!(p("4K").unwrap(), 4096);
        assert_eq!(p("4KiB").unwrap(), 4096);
        assert_eq!(p("1.5").unwrap(), 1536, "a decimal number of KiB, as test-burst reads it");
        assert_eq!(p("2.0001").unwrap(), 2048);
        let e = p("0.5").unwrap_err().to_string();
        assert!(e.contains("128 KiB") && e.contains("512B"), "{e}");
        assert!(p("99999999999.5").is_err(), "over the limit");
        assert_eq!(p("1M").unwrap(), 1 << 20);
        assert_eq!(p("1500B").unwrap(), 1500);
        for bad in ["0", "0B", "", "K", "-1", "1.5K", "1.", ".5", "1.5.5", "4X", "1T", "99999999999999999999"] {
            assert!(p(bad).is_err(), "{bad} should be rejected");
        }
        assert!(p("1G").is_err(), "above MAX_SIZE");
    }

    #[test]
    fn display() {
        assert_eq!(Size(1).to_string(), "1B");
        assert_eq!(Size(4096).to_string(), "4K");
        assert_eq!(Size(1 << 20).to_string(), "1M");
        assert_eq!(Size(1500).to_string(), "1500B");
    }

    proptest! {
        #[test]
        fn display_round_trips(b in 1u64..=MAX_SIZE) {
            let s = Size(b);
            prop_assert_eq!(s.to_string().parse::<Size>().unwrap(), s);
        }
    }
}
