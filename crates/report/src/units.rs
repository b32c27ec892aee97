//! The one home for parsing units at the boundary, used by every front end and fuzz target:
//! rates (bits per second: `20M`, `10T`), durations (nanoseconds: `1s`, `500u`, `5ms`), counts
//! (`50M`, `1e8`, `2k`) and sizes (bytes: `1500`, `64k`, `1M`, decimal). Errors are typed
//! ([`UnitError`]) and quote the input; callers add the option, file, line or key.

use std::fmt;

/// Why a quantity could not be parsed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnitError {
    #[error("'{0}' is empty: give a number")]
    Empty(String),
    #[error("'{0}' is negative: give a value >= 0")]
    Negative(String),
    #[error("'{0}' is not a number (expected e.g. {1})")]
    NotANumber(String, &'static str),
    #[error("'{0}' has an unknown suffix '{1}' (use {2})")]
    Suffix(String, String, &'static str),
    #[error("'{0}' is too large")]
    TooLarge(String),
    #[error("'{0}' must be between {1} and {2}")]
    OutOfRange(String, u64, u64),
}

/// A bandwidth in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Bps(pub u64);

impl fmt::Display for Bps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", human(self.0 as f64, "b/s"))
    }
}

/// A duration in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, serde::Serialize)]
pub struct Nanos(pub u64);

impl Nanos {
    /// As seconds.
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            write!(f, "0")
        } else if n.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", n / 1_000_000_000)
        } else if n.is_multiple_of(1_000_000) {
            write!(f, "{}ms", n / 1_000_000)
        } else if n.is_multiple_of(1000) {
            write!(f, "{}us", n / 1000)
        } else {
            write!(f, "{n}ns")
        }
    }
}

/// `1.5e7` -> `15.00 M<unit>`.
pub fn human(v: f64, unit: &str) -> String {
    let (d, p) = if v >= 1e12 {
        (1e12, "T")
    } else if v >= 1e9 {
        (1e9, "G")
    } else if v >= 1e6 {
        (1e6, "M")
    } else if v >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{:.2} {p}{unit}", v / d)
}

fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E') && i > 0 && s[i + 1..].starts_with(|d: char| d.is_ascii_digit())))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// Trims `s`, refuses empty and negative input, and splits it into its number and suffix.
fn number_and_suffix<'a>(s: &'a str, example: &'static str) -> Result<(f64, &'a str), UnitError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(UnitError::Empty(s.into()));
    }
    if t.starts_with('-') {
        return Err(UnitError::Negative(s.into()));
    }
    let (num, rest) = split_number(t);
    Ok((number(s, num, example)?, rest))
}

fn number(orig: &str, num: &str, example: &'static str) -> Result<f64, UnitError> {
    if num.is_empty() {
        return Err(UnitError::NotANumber(orig.to_string(), example));
    }
    let v: f64 = num.parse().map_err(|_| UnitError::NotANumber(orig.to_string(), example))?;
    if !v.is_finite() {
        return Err(UnitError::NotANumber(orig.to_string(), example));
    }
    Ok(v)
}

/// Parses a bandwidth: a number with an optional k/M/G/T suffix (decimal), optionally followed by
/// `bps` or `b`. `10T` is 10^13 b/s; values beyond u64 are an error, never a wrap.
pub fn parse_bps(s: &str) -> Result<Bps, UnitError> {
    let (v, rest) = number_and_suffix(s, "20M, 1.5G, 10T")?;
    let rest_l = rest.strip_suffix("bps").or_else(|| rest.strip_suffix("b/s")).or_else(|| rest.strip_suffix('b')).unwrap_or(rest);
    let mult = match rest_l {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "g" | "G" => 1e9,
        "t" | "T" => 1e12,
        other => return Err(UnitError::Suffix(s.into(), other.into(), "k, M, G or T")),
    };
    let v = v * mult;
    if v >= u64::MAX as f64 {
        return Err(UnitError::TooLarge(s.into()));
    }
    Ok(Bps(v.round() as u64))
}

/// Parses a duration: a number with an optional `ns`/`n`, `us`/`u`, `ms`/`m`, `s` suffix; a bare
/// number is in `default_unit_ns` nanoseconds (1000 for the seed's microsecond options).
pub fn parse_duration(s: &str, default_unit_ns: u64) -> Result<Nanos, UnitError> {
    let (v, rest) = number_and_suffix(s, "20, 5us, 1.5ms, 2s")?;
    let mult = match rest {
        "" => default_unit_ns as f64,
        "n" | "ns" => 1.0,
        "u" | "us" | "µs" => 1e3,
        "m" | "ms" => 1e6,
        "s" => 1e9,
        other => return Err(UnitError::Suffix(s.into(), other.into(), "ns, us, ms or s")),
    };
    let v = v * mult;
    if v >= u64::MAX as f64 / 2.0 {
        return Err(UnitError::TooLarge(s.into()));
    }
    Ok(Nanos(v.round() as u64))
}

/// Largest count [`parse_count`] accepts.
pub const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// Parses a count: a number with an optional k/M/G suffix (decimal) or an exponent (`5000000`,
/// `50M`, `1e8`, `2k`), rounded to a whole number in 1..=[`MAX_COUNT`].
pub fn parse_count(s: &str) -> Result<u64, UnitError> {
    let (v, rest) = number_and_suffix(s, "5000000, 50M, 1e8")?;
    let mult = match rest {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "g" | "G" => 1e9,
        other => return Err(UnitError::Suffix(s.into(), other.into(), "k, M or G")),
    };
    let v = (v * mult).round();
    if !(1.0..=MAX_COUNT as f64).contains(&v) {
        return Err(UnitError::OutOfRange(s.into(), 1, MAX_COUNT));
    }
    Ok(v as u64)
}

/// Parses a size in bytes: a number with an optional k/M/G suffix (decimal, as the rates),
/// optionally followed by `B` (`1500`, `64k`, `1.5MB`); a whole number of bytes >= 1.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let (v, rest) = number_and_suffix(s, "1500, 64k, 1M")?;
    let mult = match rest.strip_suffix('B').unwrap_or(rest) {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "g" | "G" => 1e9,
        other => return Err(UnitError::Suffix(s.into(), other.into(), "k, M or G, optionally with B")),
    };
    let v = (v * mult).round();
    if v >= u64::MAX as f64 / 2.0 {
        return Err(UnitError::TooLarge(s.into()));
    }
    if v < 1.0 {
        return Err(UnitError::OutOfRange(s.into(), 1, u64::MAX / 2));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths() {
        assert_eq!(parse_bps("20M"), Ok(Bps(20_000_000)));
        assert_eq!(parse_bps("10T"), Ok(Bps(10_000_000_000_000)));
        assert_eq!(parse_bps("500G"), Ok(Bps(500_000_000_000)));
        assert_eq!(parse_bps("1.5k"), Ok(Bps(1500)));
        assert_eq!(parse_bps("100Mbps"), Ok(Bps(100_000_000)));
        assert_eq!(parse_bps("64"), Ok(Bps(64)));
        assert!(matches!(parse_bps("-5M"), Err(UnitError::Negative(_))));
        assert!(matches!(parse_bps("5X"), Err(UnitError::Suffix(..))));
        assert!(matches!(parse_bps("abc"), Err(UnitError::NotANumber(..))));
        assert!(matches!(parse_bps("99999999T"), Err(UnitError::TooLarge(_))));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20", 1000), Ok(Nanos(20_000)));
        assert_eq!(parse_duration("20", 1_000_000_000), Ok(Nanos(20_000_000_000)));
        assert_eq!(parse_duration("5us", 1), Ok(Nanos(5000)));
        assert_eq!(parse_duration("5u", 1), Ok(Nanos(5000)));
        assert_eq!(parse_duration("100ns", 1000), Ok(Nanos(100)));
        assert_eq!(parse_duration("1.5ms", 1000), Ok(Nanos(1_500_000)));
        assert_eq!(parse_duration("2m", 1000), Ok(Nanos(2_000_000)));
        assert_eq!(parse_duration("1s", 1000), Ok(Nanos(1_000_000_000)));
        assert_eq!(parse_duration("1e3ns", 1000), Ok(Nanos(1000)));
        assert!(parse_duration("-1s", 1000).is_err());
        assert!(parse_duration("1h", 1000).is_err());
        assert_eq!(Nanos(1_500_000).to_string(), "1500us");
        assert_eq!(Bps(20_000_000).to_string(), "20.00 Mb/s");
    }

    #[test]
    fn counts_and_sizes() {
        assert_eq!(parse_count("50M"), Ok(50_000_000));
        assert_eq!(parse_count("1e6"), Ok(1_000_000));
        assert_eq!(parse_count("2k"), Ok(2000));
        assert_eq!(parse_count(" 7 "), Ok(7));
        assert_eq!(parse_count("1e15"), Ok(MAX_COUNT));
        assert!(matches!(parse_count("0"), Err(UnitError::OutOfRange(..))));
        assert!(matches!(parse_count("2e15"), Err(UnitError::OutOfRange(..))));
        assert!(matches!(parse_count("x"), Err(UnitError::NotANumber(..))));
        assert!(matches!(parse_count("5T"), Err(UnitError::Suffix(..))));
        assert!(matches!(parse_count("-3"), Err(UnitError::Negative(_))));
        assert!(parse_count("0").unwrap_err().to_string().contains("between 1 and"));
        assert_eq!(parse_size("1500"), Ok(1500));
        assert_eq!(parse_size("64k"), Ok(64_000));
        assert_eq!(parse_size("1.5MB"), Ok(1_500_000));
        assert!(parse_size("0").is_err() && parse_size("1X").is_err() && parse_size("").is_err());
    }
}
