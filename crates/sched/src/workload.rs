//! Message workloads: the optional fields of a traffic entry that make a burst a *message* whose
//! length is drawn from a distribution, and space bursts by exponential gaps (Poisson arrivals).
//!
//! ```text
//! 2s 300M 1500 dist:1-5:90,20:10 poisson
//! ```
//! - field 4 may be `dist:PART,PART,...` instead of a fixed burst, each `PART` being
//!   `LOW-HIGH:WEIGHT` (uniform integer in `LOW..=HIGH`) or `LEN:WEIGHT`; weights are relative
//!   (they need not sum to 100), and there may be any number of parts. `dist:report` is the
//!   report's mix `1-5:90,20:10` (mean 4.7).
//! - or `dist:NAME[:READING[:BYTES_PER_PACKET]]`, a named workload of `schedlab workloads`
//!   (`dist:w3`, `dist:w4:interp`, `dist:w2:step:1442`; see [`schedlab_workload`]): its exact
//!   length distribution in packets, read by the source's own rule and cut into packets of 1460
//!   payload bytes unless told otherwise. A run records the workload's name, reading, checksum,
//!   source and commit.
//! - a last field `poisson` spaces bursts by exponential gaps; `periodic` (the default) by equal
//!   gaps. Either way the entry's mean rate is its RATE: the mean gap is
//!   `mean length × PKTLEN × 8 / RATE`.
//!
//! Every client draws from its own generator seeded from `--seed` and its index
//! ([`client_rng`]), so a run's arrivals are reproducible up to the clock.

use std::fmt;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use schedlab_workload::{PacketDist, PacketRange, Reading, Tag};

/// Longest message accepted from a distribution, in packets.
pub const MAX_LEN: u32 = 1 << 20;

/// One part of a length distribution: a uniform integer in `low..=high` with relative `weight`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct LenPart {
    pub low: u32,
    pub high: u32,
    pub weight: f64,
}

/// How a distribution was written.
#[derive(Clone, Debug, PartialEq)]
enum Written {
    /// `dist:1-5:90,20:10` (or `dist:report`).
    Parts(Vec<LenPart>),
    /// `dist:w3`, `dist:w4:interp`, `dist:w2:step:1442`: a named workload of `schedlab workloads`
    /// (bytes per packet for byte tables only: `None` for W5 and pFabric, in packets already).
    Named { name: &'static str, reading: Reading, bytes_per_packet: Option<u32> },
}

/// A message-length distribution in packets: hand-written ranges (`dist:1-5:90,20:10`, any
/// number of them) or a named workload of [`schedlab_workload`] (`dist:w3`). Draws go through
/// [`schedlab_workload::PacketDist`]; the distribution is shared (`Arc`), so a traffic entry
/// programmed on many threads holds one copy, and its memory is one entry per range, never one
/// per length.
#[derive(Clone, Debug, PartialEq)]
pub struct LenDist {
    written: Written,
    dist: Arc<PacketDist>,
}

impl LenDist {
    /// Parses the part after `dist:`: `1-5:90,20:10`, `report`, or a named workload
    /// `NAME[:READING[:BYTES_PER_PACKET]]` (`w3`, `w4:interp`, `w2:step:1442`).
    pub fn parse(s: &str) -> Result<LenDist, String> {
        let s = if s == "report" { "1-5:90,20:10" } else { s };
        if s.is_empty() {
            return Err("empty distribution: write e.g. dist:1-5:90,20:10 or dist:w3 (see schedlab workloads)".into());
        }
        // A workload name starts with a letter; ranges start with a digit.
        if s.starts_with(|c: char| c.is_ascii_alphabetic()) {
            let (w, reading, bpp) = schedlab_workload::parse_named(s).map_err(|e| e.to_string())?;
            let dist = PacketDist::of_workload(&w, reading, bpp);
            if dist.max_len() > MAX_LEN {
                return Err(format!("workload {}: messages of up to {} packets, above {MAX_LEN}", w.name, dist.max_len()));
            }
            return Ok(LenDist {
                written: Written::Named {
                    name: w.name,
                    reading,
                    bytes_per_packet: (w.unit == schedlab_workload::Unit::Bytes).then_some(bpp),
                },
                dist: Arc::new(dist),
            });
        }
        let mut parts = Vec::new();
        for (k, part) in s.split(',').enumerate() {
            let which = || format!("part {} '{part}'", k + 1);
            let (range, weight) =
                part.split_once(':').ok_or_else(|| format!("{}: expected LOW-HIGH:WEIGHT or LEN:WEIGHT", which()))?;
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            let num = |v: &str, name: &str| -> Result<u32, String> {
                match v.parse::<u32>() {
                    Ok(x) if (1..=MAX_LEN).contains(&x) => Ok(x),
                    _ => Err(format!("{}: {name} '{v}' must be a whole number of packets in 1..={MAX_LEN}", which())),
                }
            };
            let (low, high) = (num(lo, "LOW")?, num(hi, "HIGH")?);
            if high < low {
                return Err(format!("{}: HIGH {high} is below LOW {low}", which()));
            }
            let weight: f64 = weight.parse().map_err(|_| format!("{}: WEIGHT '{weight}' is not a number", which()))?;
            if !(weight.is_finite() && weight > 0.0) {
                return Err(format!("{}: WEIGHT must be a positive number", which()));
            }
            parts.push(LenPart { low, high, weight });
        }
        let total: f64 = parts.iter().map(|p| p.weight).sum();
        if !total.is_finite() {
            return Err("the WEIGHTs add up to more than a number can hold: use smaller weights (they are relative)".into());
        }
        let ranges = parts.iter().map(|p| PacketRange { low: p.low, high: p.high, prob: p.weight }).collect();
        let dist = PacketDist::from_ranges(ranges).map_err(|e| e.to_string())?;
        Ok(LenDist { written: Written::Parts(parts), dist: Arc::new(dist) })
    }

    /// The parts as written (empty for a named workload: see [`LenDist::packets`]).
    pub fn parts(&self) -> &[LenPart] {
        match &self.written {
            Written::Parts(p) => p,
            Written::Named { .. } => &[],
        }
    }

    /// The distribution in packets that draws come from.
    pub fn packets(&self) -> &PacketDist {
        &self.dist
    }

    /// The named workload's name, reading, bytes per packet, checksum, source and commit
    /// (`None` for hand-written ranges).
    pub fn tag(&self) -> Option<&Tag> {
        self.dist.tag()
    }

    /// Mean length in packets.
    pub fn mean(&self) -> f64 {
        self.dist.mean()
    }

    /// Longest possible length.
    pub fn max_len(&self) -> u32 {
        self.dist.max_len()
    }

    /// Draws a length from `u` uniform in [0, 1): a part by weight, then a uniform integer in it.
    #[inline]
    pub fn sample(&self, u: f64) -> u32 {
        self.dist.sample(u)
    }
}

impl fmt::Display for LenDist {
    /// As written, canonically: `1-5:90,20:10`, or a workload with its reading and, for a byte
    /// table, its bytes per packet spelled out (`w3:step:1460`, `w5:step`), so that it parses
    /// back to the same distribution.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.written {
            Written::Named { name, reading, bytes_per_packet: Some(b) } => write!(f, "{name}:{}:{b}", reading.name()),
            Written::Named { name, reading, bytes_per_packet: None } => write!(f, "{name}:{}", reading.name()),
            Written::Parts(parts) => {
                for (k, p) in parts.iter().enumerate() {
                    if k > 0 {
                        write!(f, ",")?;
                    }
                    if p.low == p.high {
                        write!(f, "{}:{}", p.low, p.weight)?;
                    } else {
                        write!(f, "{}-{}:{}", p.low, p.high, p.weight)?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl serde::Serialize for LenDist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// What a result records about a named workload its traffic drew from (the type is the result
/// kinds' own, in `schedlab_report::results`, shared with the simulator's results).
pub use schedlab_report::results::workload::Workload;

/// The record of `d`, or `None` when `d` is hand-written ranges.
pub fn workload_used(d: &LenDist) -> Option<Workload> {
    let t = d.tag()?;
    Some(Workload {
        name: t.name.clone(),
        reading: t.reading.name().into(),
        bytes_per_packet: t.bytes_per_packet,
        checksum: t.checksum.clone(),
        source: t.source.clone(),
        commit: t.commit.clone(),
        unit: None,
        mean_size: None,
        mean_packets: d.mean(),
        written: Some(d.to_string()),
    })
}

/// A named workload's line as `sched` and `predict` print it: `workload w3 (step CDF, 1460
/// B/packet, mean 2.6 packets; fnv1a64:…; github.com/… @ ab09ecb…)`.
pub fn workload_line(w: &Workload) -> String {
    let mut out = format!("workload {} ({} CDF", w.name, w.reading);
    if let Some(b) = w.bytes_per_packet {
        out.push_str(&format!(", {b} B/packet"));
    }
    out.push_str(&format!(", mean {:.4} packets; {}; {} @ {})", w.mean_packets, w.checksum, w.source, w.commit));
    out
}

/// How bursts are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Gaps {
    /// Equal gaps (the seed's behaviour).
    #[default]
    Periodic,
    /// Exponential gaps with the same mean (Poisson arrivals).
    Poisson,
}

impl Gaps {
    /// `poisson` / `periodic`, or `None` for any other word.
    pub fn parse(s: &str) -> Option<Gaps> {
        match s {
            "poisson" => Some(Gaps::Poisson),
            "periodic" => Some(Gaps::Periodic),
            _ => None,
        }
    }
}

/// A client's random generator: seeded from the run's seed and the client's index, so that every
/// client draws an independent, reproducible stream.
pub fn client_rng(seed: u64, client: usize) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed ^ (client as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Draws the length of the next burst: `dist` if given, else `fixed`.
#[inline]
pub fn draw_len(dist: Option<&LenDist>, fixed: u32, rng: &mut Xoshiro256PlusPlus) -> u32 {
    match dist {
        Some(d) => d.sample(rng.random::<f64>()),
        None => fixed,
    }
}

/// Draws the gap to the next burst in picoseconds, from the mean gap `mean_ps` (`u64::MAX`:
/// silence).
#[inline]
pub fn draw_gap_ps(gaps: Gaps, mean_ps: u64, rng: &mut Xoshiro256PlusPlus) -> u64 {
    if mean_ps == u64::MAX {
        return u64::MAX;
    }
    match gaps {
        Gaps::Periodic => mean_ps,
        Gaps::Poisson => {
            let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
            (-u.ln() * mean_ps as f64).min(u64::MAX as f64 / 2.0) as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_report_mix() {
        let d = LenDist::parse("1-5:90,20:10").unwrap();
        assert_eq!(d.parts().len(), 2);
        assert!((d.mean() - 4.7).abs() < 1e-12);
        assert_eq!(d.max_len(), 20);
        assert_eq!(d, LenDist::parse("report").unwrap());
        assert_eq!(d.to_string(), "1-5:90,20:10");
        // Weights are relative.
        assert_eq!(LenDist::parse("1-5:9,20:1").unwrap().mean(), d.mean());
    }

    #[test]
    fn bad_distributions_are_refused() {
        for (s, want) in [
            ("", "empty"),
            ("1-5", "LOW-HIGH:WEIGHT"),
            ("0-5:1", "LOW '0'"),
            ("5-1:1", "below LOW"),
            ("1-5:x", "WEIGHT 'x'"),
            ("1-5:0", "positive"),
            ("1-5:-3", "positive"),
            ("2:1,x:1", "part 2"),
        ] {
            let e = LenDist::parse(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn samples_follow_the_weights() {
        let d = LenDist::parse("1-5:90,20:10").unwrap();
        let mut rng = client_rng(7, 0);
        let n = 200_000;
        let mut counts = [0u32; 21];
        let mut sum = 0u64;
        for _ in 0..n {
            let l = draw_len(Some(&d), 1, &mut rng);
            counts[l as usize] += 1;
            sum += u64::from(l);
        }
        assert!(counts[6..20].iter().all(|&c| c == 0) && counts[0] == 0);
        let f20 = f64::from(counts[20]) / n as f64;
        assert!((f20 - 0.10).abs() < 0.005, "{f20}");
        for (l, &c) in counts.iter().enumerate().take(6).skip(1) {
            let f = f64::from(c) / n as f64;
            assert!((f - 0.18).abs() < 0.005, "len {l}: {f}");
        }
        assert!((sum as f64 / n as f64 - 4.7).abs() < 0.05);
    }

    #[test]
    fn poisson_gaps_have_the_mean_and_seeds_reproduce() {
        let mut rng = client_rng(1, 3);
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| draw_gap_ps(Gaps::Poisson, 1_000_000, &mut rng) as f64).sum::<f64>() / n as f64;
        assert!((mean / 1e6 - 1.0).abs() < 0.01, "{mean}");
        assert_eq!(draw_gap_ps(Gaps::Periodic, 1234, &mut rng), 1234);
        assert_eq!(draw_gap_ps(Gaps::Poisson, u64::MAX, &mut rng), u64::MAX);
        let a: Vec<u64> = (0..5).map(|_| draw_gap_ps(Gaps::Poisson, 1000, &mut client_rng(9, 1))).collect();
        let mut r = client_rng(9, 1);
        let b: Vec<u64> = (0..5).map(|_| draw_gap_ps(Gaps::Poisson, 1000, &mut r)).collect();
        assert_eq!(a[0], b[0]);
        assert_ne!(client_rng(9, 1).random::<u64>(), client_rng(9, 2).random::<u64>());
    }

    /// A named workload draws through the workload crate; its record names the table.
    #[test]
    fn named_workloads_draw_their_packet_distribution() {
        let d = LenDist::parse("w2").unwrap();
        assert!(d.parts().is_empty());
        assert_eq!(d.to_string(), "w2:step:1460");
        assert_eq!(d, LenDist::parse("W2:step:1460").unwrap());
        assert_ne!(d, LenDist::parse("w2:interp").unwrap());
        let used = workload_used(&d).unwrap();
        assert!(used.checksum.starts_with("fnv1a64:") && used.source.contains("Google_SearchRPC"), "{used:?}");
        let line = workload_line(&used);
        assert!(line.starts_with("workload w2 (step CDF, 1460 B/packet, mean "), "{line}");
        assert_eq!((used.written.as_deref(), used.unit.as_deref(), used.mean_size), (Some("w2:step:1460"), None, None));
        assert_eq!(workload_used(&LenDist::parse("report").unwrap()), None);
        let mut rng = client_rng(3, 0);
        let n = 400_000;
        let sum: f64 = (0..n).map(|_| f64::from(draw_len(Some(&d), 1, &mut rng))).sum();
        // W2 in packets: mean about 1.2, a heavy tail (up to 2418 packets): 2% is many SDs.
        assert!((sum / f64::from(n) / d.mean() - 1.0).abs() < 0.02, "{} vs {}", sum / f64::from(n), d.mean());
        assert!(LenDist::parse("w9").unwrap_err().contains("unknown workload 'w9'"));
    }

    /// Fuzz regression (fuzz/regressions/sched_traffic): weights whose sum overflows to infinity
    /// gave a mean of 0 packets per burst (and NaN draws).
    #[test]
    fn weights_that_overflow_are_refused() {
        assert!(LenDist::parse("1:1e308,2:1e308").unwrap_err().contains("WEIGHTs add up"));
        let d = LenDist::parse("1:1e307,2:1e307").unwrap();
        assert!((d.mean() - 1.5).abs() < 1e-9);
    }
}
