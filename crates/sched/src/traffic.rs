//! Client traffic programs: the seed's configuration file syntax.
//!
//! ```text
//! # comment                     (also after an entry)
//! 1s   100M  64  1              DURATION RATE [PKTLEN [BURST]] [poisson] for the current thread
//! 2s 300M 1500 dist:1-5:90,20:10 poisson   message lengths drawn from a distribution (see workload)
//! thread 2                      switch the current thread (thread 0 at the start)
//! thread 1 3                    following entries go to threads 1, 2 and 3
//! thread 1 *                    ... to threads 1 up to the last one
//! thread all                    following entries go to every thread
//! 1s 100M 1500 dist:report poisson alpha:5   under -alg prio, every message of this entry has α = 5
//! 1s 1G 1500 dist:w3 poisson    lengths of a named workload (schedlab workloads), e.g. dist:w4:interp
//! ```
//! Durations take n/u/m/s suffixes (bare numbers are seconds), rates k/M/G/T (bits per second;
//! 0 means silence for that long), the packet length is in bytes (default
//! [`DEFAULT_PKT_LEN`]), the burst in packets (default 1) or a message-length distribution
//! `dist:...` (ranges, or a named workload `dist:NAME[:READING[:BYTES_PER_PACKET]]`), and a last field `poisson` spaces bursts by exponential gaps at the same mean rate
//! (see [`crate::workload`]); a last field `alpha:X` gives the entry's messages α = X under `-alg prio`
//! (§10; other policies ignore it). Entries for threads that do not exist are ignored with a warning.

use std::path::Path;

use crate::units::{parse_bps, parse_duration, Bps, Nanos};
use crate::workload::{workload_used, Gaps, LenDist, Workload};

/// Packet length when an entry gives none.
pub const DEFAULT_PKT_LEN: u32 = 1500;
/// Largest accepted packet length in bytes.
pub const MAX_PKT_LEN: u32 = 65_535;
/// Longest accepted program of one thread, in nanoseconds (so that a run's end time, its start
/// plus the longest program, cannot overflow).
pub const MAX_PROGRAM_NS: u64 = u64::MAX / 4;
/// Largest accepted burst in packets.
pub const MAX_BURST: u32 = 1 << 20;

/// The program run when there is no `-f` and no `./sched.txt`.
pub const DEFAULT_PROGRAM: &str = "\
# schedlab sched embedded default program: every client sends 1500-byte packets
# at 100 Mb/s for one second, one packet per burst.
thread all
1s 100M 1500 1
";

/// One step of a client's program.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Spec {
    pub duration: Nanos,
    pub rate: Bps,
    pub pkt_len: u32,
    /// Packets per burst; with `lengths`, the longest message the distribution can draw.
    pub burst: u32,
    /// Message lengths drawn per burst (`dist:...`); `None`: every burst is `burst` packets.
    pub lengths: Option<LenDist>,
    /// Equal or exponential gaps between bursts.
    pub gaps: Gaps,
    /// `alpha:X`: the α every message of this entry carries under `-alg prio` (§10); `None`: the
    /// policy's default ([`schedlab_policy::DEFAULT_ALPHA`]). Other policies ignore it.
    pub alpha: Option<f64>,
}

impl Spec {
    /// The seed's entry: `burst` packets every `burst × pkt_len × 8 / rate`.
    pub fn fixed(duration: Nanos, rate: Bps, pkt_len: u32, burst: u32) -> Spec {
        Spec { duration, rate, pkt_len, burst, lengths: None, gaps: Gaps::Periodic, alpha: None }
    }

    /// Mean packets per burst.
    pub fn mean_burst(&self) -> f64 {
        self.lengths.as_ref().map_or(f64::from(self.burst), LenDist::mean)
    }

    /// Mean time between two bursts, in picoseconds (`u64::MAX` when the rate is 0).
    pub fn gap_ps(&self) -> u64 {
        if self.rate.0 == 0 {
            return u64::MAX;
        }
        match &self.lengths {
            None => {
                let bits = u128::from(self.pkt_len) * u128::from(self.burst) * 8;
                (bits * 1_000_000_000_000 / u128::from(self.rate.0)).min(u128::from(u64::MAX)) as u64
            }
            Some(d) => {
                let bits = f64::from(self.pkt_len) * d.mean() * 8.0;
                (bits * 1e12 / self.rate.0 as f64).min(u64::MAX as f64 / 2.0) as u64
            }
        }
    }
}

/// A parsed traffic file: one program per client thread.
#[derive(Clone, Debug, PartialEq)]
pub struct Traffic {
    pub programs: Vec<Vec<Spec>>,
    pub warnings: Vec<String>,
}

impl Traffic {
    /// The named workloads (`dist:w3`) the entries draw from, each once (by how it is read), in
    /// the order of first use.
    pub fn workloads(&self) -> Vec<Workload> {
        let mut out: Vec<Workload> = Vec::new();
        for w in self.programs.iter().flatten().filter_map(|s| s.lengths.as_ref().and_then(workload_used)) {
            if !out.iter().any(|o| o.written == w.written) {
                out.push(w);
            }
        }
        out
    }

    /// Length of the longest program.
    pub fn longest(&self) -> Nanos {
        Nanos(self.programs.iter().map(|p| p.iter().fold(0u64, |a, s| a.saturating_add(s.duration.0))).max().unwrap_or(0))
    }
}

/// A traffic file error, naming the file, the line and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {field}: {msg}")]
pub struct TrafficError {
    pub file: String,
    pub line: usize,
    pub field: String,
    pub msg: String,
}

/// Parses `text` (named `file` in messages) for `threads` client threads.
pub fn parse(text: &str, file: &str, threads: usize) -> Result<Traffic, TrafficError> {
    let mut programs = vec![Vec::new(); threads];
    let mut totals = vec![0u64; threads];
    let mut warnings = Vec::new();
    let mut current = Target { lo: 0, hi: Some(0) };
    let mut warned = std::collections::BTreeSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("");
        let fields: Vec<&str> = content.split_whitespace().collect();
        let err = |field: &str, msg: String| TrafficError { file: file.into(), line, field: field.into(), msg };
        match parse_line(&fields).map_err(|(field, msg)| err(&field, msg))? {
            Line::Empty => {}
            Line::Thread(t) => current = t,
            Line::Entry(spec) => {
                let hi = current.hi.unwrap_or(usize::MAX);
                for (p, total) in programs.iter_mut().zip(totals.iter_mut()).take(hi.saturating_add(1)).skip(current.lo) {
                    *total = total.checked_add(spec.duration.0).filter(|&t| t <= MAX_PROGRAM_NS).ok_or_else(|| {
                        err(
                            "field 1 (duration)",
                            format!("the thread's program would last more than {MAX_PROGRAM_NS} ns (about 146 years)"),
                        )
                    })?;
                    p.push(spec.clone());
                }
                // Entries for threads that do not exist (`thread 5` with -t 2, or the part of a
                // range beyond the last thread) are ignored, with one warning per line range.
                if current.hi.map_or(current.lo >= threads, |h| h >= threads) && warned.insert((current.lo, hi)) {
                    let which = if current.hi.is_none() {
                        format!("threads {}.. do not exist", current.lo)
                    } else if current.lo == hi {
                        format!("thread {hi} does not exist")
                    } else {
                        format!("threads {}..={hi} do not all exist", current.lo)
                    };
                    warnings.push(format!("{file}:{line}: {which} (-t {threads}): entries for missing threads are ignored"));
                }
            }
        }
    }
    for (t, p) in programs.iter().enumerate() {
        if p.is_empty() {
            warnings.push(format!("{file}: thread {t} has no program: it generates no traffic"));
        }
    }
    Ok(Traffic { programs, warnings })
}

/// One line of a traffic file, parsed on its own.
// A transient parse result (one at a time, moved straight into the program): boxing `Spec` would
// only add an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// Blank or comment.
    Empty,
    /// `thread N`, `thread N M`, `thread N *`, `thread all`.
    Thread(Target),
    /// `DURATION RATE [PKTLEN [BURST|dist:...]] [poisson|periodic] [alpha:X]`.
    Entry(Spec),
}

/// The threads that the following entries program: `lo..=hi` (`hi` None: up to the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub lo: usize,
    pub hi: Option<usize>,
}

/// Parses one line's whitespace-separated fields (comments already removed): the one place
/// where an entry's syntax lives. An error is `(field name, message)`; [`parse`] adds the file
/// and line.
pub fn parse_line(fields: &[&str]) -> Result<Line, (String, String)> {
    let err = |field: &str, msg: String| (field.to_string(), msg);
    let Some(&first) = fields.first() else { return Ok(Line::Empty) };
    if first == "thread" {
        let number = |idx: usize, v: &str| {
            v.parse::<usize>().map_err(|_| {
                (
                    format!("field {} (thread number)", idx + 1),
                    format!("'{v}' is not a thread number >= 0 (write 'thread N', 'thread N M', 'thread N *' or 'thread all')"),
                )
            })
        };
        let target = match (fields.get(1), fields.get(2)) {
            (None, _) => return Err(err("field 2 (thread number)", "missing: write 'thread N' or 'thread all'".into())),
            (Some(&"all"), None) => Target { lo: 0, hi: None },
            (Some(&"all"), Some(x)) => return Err(err("field 3", format!("unexpected '{x}' after 'thread all'"))),
            (Some(n), None) => {
                let n = number(1, n)?;
                Target { lo: n, hi: Some(n) }
            }
            (Some(n), Some(&"*")) => Target { lo: number(1, n)?, hi: None },
            (Some(n), Some(m)) => {
                let (lo, hi) = (number(1, n)?, number(2, m)?);
                if hi < lo {
                    return Err(err(
                        "field 3 (last thread)",
                        format!("thread range {lo} {hi}: the last thread is below the first"),
                    ));
                }
                Target { lo, hi: Some(hi) }
            }
        };
        if let Some(x) = fields.get(3) {
            return Err(err("field 4", format!("unexpected '{x}' after the thread range")));
        }
        return Ok(Line::Thread(target));
    }
    // Last words (field 3 or later, in either order): `poisson`/`periodic` chooses the gaps,
    // `alpha:X` the α of the entry's messages under `prio`.
    let mut fields = fields.to_vec();
    let mut gaps = Gaps::Periodic;
    let mut alpha = None;
    while fields.len() > 2 {
        let idx = fields.len();
        let last = fields[idx - 1];
        if let (Some(g), false) = (Gaps::parse(last), fields[2..idx - 1].iter().any(|w| Gaps::parse(w).is_some())) {
            gaps = g;
        } else if let (Some(v), None) = (last.strip_prefix("alpha:"), alpha) {
            alpha = Some(parse_entry_alpha(v).map_err(|m| err(&format!("field {idx} (alpha)"), m))?);
        } else {
            break;
        }
        fields.pop();
    }
    if fields.len() > 4 {
        return Err(err(
            "field 5",
            format!("unexpected '{}': an entry is DURATION RATE [PKTLEN [BURST|dist:...]] [poisson] [alpha:X]", fields[4]),
        ));
    }
    let duration = parse_duration(fields[0], 1_000_000_000).map_err(|e| err("field 1 (duration)", e.to_string()))?;
    let rate = match fields.get(1) {
        None => return Err(err("field 2 (rate)", "missing: an entry is DURATION RATE [PKTLEN [BURST]]".into())),
        Some(r) => parse_bps(r).map_err(|e| err("field 2 (rate)", e.to_string()))?,
    };
    let int = |idx: usize, name: &str, default: u32, max: u32| -> Result<u32, (String, String)> {
        match fields.get(idx) {
            None => Ok(default),
            Some(v) => match v.parse::<u32>() {
                Ok(x) if (1..=max).contains(&x) => Ok(x),
                _ => Err(err(&format!("field {} ({name})", idx + 1), format!("'{v}' must be an integer in 1..={max}"))),
            },
        }
    };
    let pkt_len = int(2, "packet length", DEFAULT_PKT_LEN, MAX_PKT_LEN)?;
    let (burst, lengths) = match fields.get(3).and_then(|f| f.strip_prefix("dist:")) {
        Some(d) => {
            let d = LenDist::parse(d).map_err(|e| err("field 4 (length distribution)", e))?;
            if d.max_len() > MAX_BURST {
                return Err(err("field 4 (length distribution)", format!("lengths must be at most {MAX_BURST}")));
            }
            (d.max_len(), Some(d))
        }
        None => (int(3, "burst", 1, MAX_BURST)?, None),
    };
    Ok(Line::Entry(Spec { duration, rate, pkt_len, burst, lengths, gaps, alpha }))
}

/// The value of an entry's `alpha:X` column: a finite α >= 0 in the policy's range.
fn parse_entry_alpha(v: &str) -> Result<f64, String> {
    let x: f64 = v.parse().map_err(|_| format!("'alpha:{v}': '{v}' is not a number; write alpha:X with X >= 0, e.g. alpha:5"))?;
    schedlab_policy::Alpha::new(x).map_err(|e| format!("'alpha:{v}': {e}"))?;
    Ok(x)
}

/// Reads and parses a traffic file.
pub fn load(path: &Path, threads: usize) -> anyhow::Result<Traffic> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read traffic file {}: {e}", path.display()))?;
    Ok(parse(&text, &path.display().to_string(), threads)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_syntax() {
        let t = parse("# c\n1s 100M 64 1\nthread 1\n500m 1G 1500 4 # trailing\n\n2s 0\n", "f", 2).unwrap();
        assert_eq!(t.programs[0], vec![Spec::fixed(Nanos(1_000_000_000), Bps(100_000_000), 64, 1)]);
        assert_eq!(t.programs[1].len(), 2);
        assert_eq!(t.programs[1][0].duration, Nanos(500_000_000));
        assert_eq!(t.programs[1][0].burst, 4);
        assert_eq!(t.programs[1][1].pkt_len, DEFAULT_PKT_LEN);
        assert_eq!(t.programs[1][1].gap_ps(), u64::MAX);
        assert_eq!(t.longest(), Nanos(2_500_000_000));
        assert!(t.warnings.is_empty());
    }

    /// Fuzz regression (fuzz/regressions/sched_traffic): durations just under the per-entry
    /// limit (three of them) overflowed `longest()` (a panic in debug builds, a wrapped end time that
    /// stopped the run at once in release).
    #[test]
    fn program_length_is_bounded() {
        let e = parse("3e9s 1M\n3e9s 1M\n3e9s 1M\n", "f", 1).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "field 1 (duration)"));
        let e = parse("thread all\n3e9s 1M\nthread 1\n3e9s 1M\n", "f", 2).unwrap_err();
        assert_eq!(e.line, 4, "only thread 1's program is too long");
        let t = parse("4e9s 1M\n", "f", 1).unwrap();
        assert_eq!(t.longest(), Nanos(4_000_000_000_000_000_000));
    }

    #[test]
    fn gap_between_bursts() {
        let s = Spec::fixed(Nanos(1), Bps(100_000_000), 64, 2);
        assert_eq!(s.gap_ps(), 64 * 2 * 8 * 10_000); // 1024 bits at 100 Mb/s = 10.24 us
    }

    #[test]
    fn thread_all_and_missing_threads() {
        let t = parse("thread all\n1s 1M\nthread 5\n1s 1M\n1s 2M\n", "f", 2).unwrap();
        assert_eq!(t.programs[0].len(), 1);
        assert_eq!(t.programs[1].len(), 1);
        assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
        assert!(t.warnings[0].contains("f:4") && t.warnings[0].contains("thread 5"));
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = parse("1s 1M\n1s -5M 64\n", "x.txt", 1).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "field 2 (rate)"));
        assert!(e.to_string().starts_with("x.txt:2: field 2 (rate):"), "{e}");
        assert_eq!(parse("1q 1M\n", "f", 1).unwrap_err().field, "field 1 (duration)");
        assert_eq!(parse("1s 1M 0\n", "f", 1).unwrap_err().field, "field 3 (packet length)");
        assert_eq!(parse("1s 1M 64 x\n", "f", 1).unwrap_err().field, "field 4 (burst)");
        assert_eq!(parse("1s\n", "f", 1).unwrap_err().field, "field 2 (rate)");
        assert_eq!(parse("thread x\n", "f", 1).unwrap_err().line, 1);
        assert_eq!(parse("1s 1M 64 1 9\n", "f", 1).unwrap_err().field, "field 5");
    }

    #[test]
    fn thread_ranges_of_the_original_sched_txt() {
        // The original's own example file.
        let orig = "# example configuration file\n#\n#\tlength  bw\tpktsize\tburst-size\nthread 0\n\t10\t1920K\t60      1\nthread 1 *\n\t10\t50000G\t60\t1\n#thread all\n";
        let t = parse(orig, "sched.txt", 4).unwrap();
        assert_eq!(t.programs[0][0].rate, Bps(1_920_000));
        for p in &t.programs[1..] {
            assert_eq!(p.len(), 1);
            assert_eq!(p[0].rate, Bps(50_000_000_000_000));
        }
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        let t = parse("thread 1 2\n1s 1M\nthread 3 *\n1s 2M\n1s 3M\n", "f", 5).unwrap();
        let lens: Vec<usize> = t.programs.iter().map(Vec::len).collect();
        assert_eq!(lens, vec![0, 1, 1, 2, 2]);
        // A range reaching beyond -t: the existing part is programmed, with a warning.
        let t = parse("thread 1 6\n1s 1M\n", "f", 3).unwrap();
        assert_eq!(t.programs.iter().map(Vec::len).collect::<Vec<_>>(), vec![0, 1, 1]);
        assert!(t.warnings.iter().any(|w| w.contains("f:2") && w.contains("1..=6")), "{:?}", t.warnings);
        let e = parse("thread 3 1\n", "f", 4).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "field 3 (last thread)"));
        assert_eq!(parse("thread 1 x\n", "f", 4).unwrap_err().field, "field 3 (thread number)");
        assert_eq!(parse("thread 1 2 3\n", "f", 4).unwrap_err().field, "field 4");
        assert_eq!(parse("thread all 2\n", "f", 4).unwrap_err().field, "field 3");
    }

    #[test]
    fn message_workload_entries() {
        let t = parse(
            "2s 300M 1500 dist:1-5:90,20:10 poisson\n1s 1M 64 4 poisson\n1s 1M poisson\n1s 1M 100 dist:report periodic\n",
            "f",
            1,
        )
        .unwrap();
        let p = &t.programs[0];
        assert_eq!(p[0].gaps, Gaps::Poisson);
        assert_eq!(p[0].burst, 20, "burst is the longest length");
        assert!((p[0].mean_burst() - 4.7).abs() < 1e-12);
        // Mean gap: 4.7 packets of 1500 bytes at 300 Mb/s = 188 us.
        assert!((p[0].gap_ps() as f64 - 188e6).abs() < 2.0, "{}", p[0].gap_ps());
        assert_eq!((p[1].burst, p[1].lengths.as_ref(), p[1].gaps), (4, None, Gaps::Poisson));
        assert_eq!((p[2].pkt_len, p[2].gaps), (DEFAULT_PKT_LEN, Gaps::Poisson));
        assert_eq!(p[3].gaps, Gaps::Periodic);
        assert_eq!(p[3].lengths, p[0].lengths);
        let e = |s: &str| parse(s, "w.txt", 1).unwrap_err();
        assert_eq!(e("1s 1M 1500 dist:1-5:x\n").field, "field 4 (length distribution)");
        assert!(e("\n1s 1M 1500 dist:0:1\n").to_string().starts_with("w.txt:2: field 4 (length distribution):"));
        assert_eq!(e("1s 1M 1500 4 poisson x\n").field, "field 5");
        assert_eq!(e("1s 1M 1500 4 poison\n").field, "field 5");
        assert_eq!(e("1s poisson\n").field, "field 2 (rate)");
    }

    /// `dist:NAME`: every named workload, with its reading and bytes per packet; any number of
    /// ranges; errors name the file, the line and the field.
    #[test]
    fn named_workloads_and_long_range_lists() {
        for name in schedlab_workload::names() {
            let t = parse(&format!("thread all\n1s 1G 1500 dist:{name} poisson\n"), "f", 2).unwrap();
            let s = &t.programs[0][0];
            let d = s.lengths.as_ref().unwrap();
            let w = schedlab_workload::named(name).unwrap();
            let exact = w.packet_mean(w.default_reading, schedlab_workload::DEFAULT_BYTES_PER_PACKET);
            assert!((s.mean_burst() - exact).abs() < 1e-9 * exact, "{name}");
            assert_eq!(s.burst, d.max_len(), "{name}: burst is the longest length");
            assert_eq!(LenDist::parse(&d.to_string()).as_ref(), Ok(d), "{name}: prints back to itself");
            let used = t.workloads();
            assert_eq!(used.len(), 1, "{name}: one workload, on two threads");
            assert_eq!((used[0].name.as_str(), used[0].checksum.clone()), (w.name, w.checksum_hex()));
            assert_eq!(used[0].commit, w.provenance.commit);
        }
        let t = parse("1s 1G 1500 dist:w4:interp:1442\n1s 1G 1500 dist:w3\n1s 1G 1500 dist:1-5:1\n", "f", 1).unwrap();
        let used = t.workloads();
        assert_eq!(
            used.iter().map(|u| u.written.as_deref().unwrap_or_default()).collect::<Vec<_>>(),
            ["w4:interp:1442", "w3:step:1460"]
        );
        assert_eq!(used[0].bytes_per_packet, Some(1442));
        // W3: 842 sizes in one entry, no cap on the number of parts.
        assert_eq!(schedlab_workload::named("w3").unwrap().points(), 842);
        let many: Vec<String> = (1..=40).map(|k| format!("{k}:1")).collect();
        let t = parse(&format!("1s 1G 1500 dist:{}\n", many.join(",")), "f", 1).unwrap();
        let s = &t.programs[0][0];
        assert_eq!((s.burst, s.lengths.as_ref().unwrap().parts().len()), (40, 40));
        assert!((s.mean_burst() - 20.5).abs() < 1e-12);
        let e = |s: &str| parse(s, "w.txt", 1).unwrap_err();
        let x = e("# c\n1s 1G 1500 dist:w9 poisson\n");
        assert_eq!((x.line, x.field.as_str()), (2, "field 4 (length distribution)"));
        assert!(x.to_string().starts_with("w.txt:2: field 4 (length distribution): unknown workload 'w9'"), "{x}");
        assert!(e("1s 1G 1500 dist:w2:smooth\n").to_string().contains("reading 'smooth'"));
        assert!(e("1s 1G 1500 dist:w2:step:0\n").to_string().contains("bytes per packet 0"));
    }

    /// A bytes per packet on a table in packets (W5, pFabric) is refused on its line, naming the
    /// value and the workload; it used to be recorded as "w5:step:1442" with no bytes per packet.
    /// Without one, a packet table is written back without one (`w5:step`).
    #[test]
    fn bytes_per_packet_on_a_packet_table_is_refused() {
        let e = |s: &str| parse(s, "w.txt", 1).unwrap_err();
        let x = e("# w5\n1s 1G 1500 dist:w5:step:1442 poisson\n");
        assert_eq!((x.line, x.field.as_str()), (2, "field 4 (length distribution)"));
        assert!(
            x.to_string().starts_with(
                "w.txt:2: field 4 (length distribution): w5 is measured in packets, so bytes per packet 1442 does not apply: drop it"
            ),
            "{x}"
        );
        let x = e("1s 1G 1500 dist:pfabric-datamining:interp:1460\n");
        assert!(x.to_string().contains("pfabric-datamining is measured in packets, so bytes per packet 1460"), "{x}");
        let t = parse("1s 1G 1500 dist:w5\n1s 1G 1500 dist:websearch:step\n1s 1G 1500 dist:w2:interp:1442\n", "f", 1).unwrap();
        let used = t.workloads();
        assert_eq!(
            used.iter().map(|u| (u.written.as_deref().unwrap_or_default(), u.bytes_per_packet)).collect::<Vec<_>>(),
            [("w5:step", None), ("pfabric-websearch:step", None), ("w2:interp:1442", Some(1442))]
        );
    }

    #[test]
    fn the_alpha_column_of_prio() {
        let t = parse("1s 1M 1500 dist:report poisson alpha:5\n1s 1M 64 2 alpha:0.5 poisson\n1s 1M 64 alpha:3\n1s 1M\n", "f", 1)
            .unwrap();
        let p = &t.programs[0];
        assert_eq!((p[0].alpha, p[0].gaps, p[0].burst), (Some(5.0), Gaps::Poisson, 20));
        assert_eq!((p[1].alpha, p[1].gaps, p[1].burst), (Some(0.5), Gaps::Poisson, 2));
        assert_eq!((p[2].alpha, p[2].pkt_len), (Some(3.0), 64));
        assert_eq!(p[3].alpha, None);
        let e = |s: &str| parse(s, "a.txt", 1).unwrap_err();
        let x = e("\n1s 1M 1500 4 poisson alpha:x\n");
        assert_eq!((x.line, x.field.as_str()), (2, "field 6 (alpha)"));
        assert!(x.to_string().contains("a.txt:2: field 6 (alpha): 'alpha:x'"), "{x}");
        assert_eq!(e("1s 1M 1500 alpha:-1\n").field, "field 4 (alpha)");
        assert_eq!(e("1s 1M 1500 alpha:inf\n").field, "field 4 (alpha)");
        assert_eq!(e("1s 1M 1500 4 alpha:1 alpha:2\n").field, "field 5");
        assert_eq!(e("1s 1M 1500 4 poisson poisson\n").field, "field 5");
    }

    #[test]
    fn default_program_parses_for_any_thread_count() {
        let t = parse(DEFAULT_PROGRAM, "<default>", 3).unwrap();
        assert!(t.programs.iter().all(|p| p.len() == 1));
        assert!(t.warnings.is_empty());
    }
}
