//! Exact statistics of a list of numbers, as the seed's `mmhistogram` printed them, plus
//! percentiles and trimming.

use std::fmt::Write as _;

use schedlab_report::Summary;

/// A bad line in the input.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{source_name}:{line}: '{text}' is not a number (expected one number per line)")]
pub struct ParseError {
    pub source_name: String,
    pub line: usize,
    pub text: String,
}

/// Reads one number per line; blank lines and lines starting with `#` are skipped.
pub fn parse_numbers(text: &str, source_name: &str) -> Result<Vec<f64>, ParseError> {
    let mut v = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        match t.parse::<f64>() {
            Ok(x) if x.is_finite() => v.push(x),
            _ => {
                return Err(ParseError { source_name: source_name.to_string(), line: i + 1, text: t.chars().take(40).collect() })
            }
        }
    }
    Ok(v)
}

/// Sorts and drops the slowest `percent`% of the values, rounding the number dropped down
/// (the seed kept `n - n*1/100` values).
pub fn trim_slowest(v: &mut Vec<f64>, percent: f64) {
    v.sort_by(f64::total_cmp);
    let drop = ((v.len() as f64) * percent / 100.0).floor() as usize;
    v.truncate(v.len() - drop.min(v.len()));
}

/// Parses `1%`, `1`, `0.5%` into a percentage in [0, 100).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) => Ok(p),
        _ => Err(format!("invalid percentage '{s}': expected e.g. 1% (at least 0, below 100)")),
    }
}

/// The seed's summary line: `min:.. avg:.. med=.. max:.. dev:.. count:..` (population std dev).
/// The seed's pipeline (`tr := "  " | awk '{print $6", "$10", "$2", "$8}'`) reads it unchanged.
pub fn mm_line(s: &Summary) -> String {
    format!("min:{:.2} avg:{:.2} med={:.2} max:{:.2} dev:{:.2} count:{}", s.min, s.mean, s.p50, s.max, s.stddev, s.count)
}

/// The percentile line (it never contains the word the seed's pipeline greps for).
pub fn percentile_line(s: &Summary) -> String {
    format!("p50:{:.2} p90:{:.2} p99:{:.2} p99.9:{:.2} p99.99:{:.2}", s.p50, s.p90, s.p99, s.p999, s.p9999)
}

/// The seed's CSV row `name, med, dev, min, max` (no newline), quoted by the project's one CSV
/// writer ([`schedlab_report::export::csv_line`]) so that a name with a comma, quote or line break is
/// quoted like everywhere else. The seed separates fields with `", "`: the numbers are cells
/// with a leading space, which keeps the bytes of ordinary rows exactly the seed's.
pub fn csv_row(name: &str, s: &Summary) -> String {
    schedlab_report::export::csv_line(&[
        name.to_string(),
        format!(" {:.2}", s.p50),
        format!(" {:.2}", s.stddev),
        format!(" {:.2}", s.min),
        format!(" {:.2}", s.max),
    ])
}

/// A log2 ASCII histogram: one line per power-of-two bucket from the smallest to the largest
/// value, with the count and a bar scaled to `width` characters.
pub fn log2_histogram(v: &[f64], width: usize) -> String {
    let bucket = |x: f64| if x < 1.0 { -1i32 } else { x.log2().floor() as i32 };
    let Some(lo) = v.iter().map(|&x| bucket(x)).min() else { return String::new() };
    let hi = v.iter().map(|&x| bucket(x)).max().unwrap_or(lo);
    let mut counts = vec![0usize; (hi - lo + 1) as usize];
    for &x in v {
        counts[(bucket(x) - lo) as usize] += 1;
    }
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut out = String::new();
    for (i, &c) in counts.iter().enumerate() {
        let b = lo + i as i32;
        let (a, z) = if b < 0 { (0.0, 1.0) } else { (2f64.powi(b), 2f64.powi(b + 1)) };
        let bar = (c * width).div_ceil(most);
        let _ = writeln!(out, "{a:>10} - {z:<10} [{c:>8}]: {}", "*".repeat(if c == 0 { 0 } else { bar.max(1) }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_reports_line() {
        assert_eq!(parse_numbers("1\n\n# c\n2.5\n", "f").unwrap(), vec![1.0, 2.5]);
        let e = parse_numbers("1\nabc\n", "data.txt").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("data.txt:2: 'abc'"), "{e}");
        assert!(parse_numbers("nan\n", "f").is_err());
    }

    #[test]
    fn trim_matches_seed_arithmetic() {
        let mut v: Vec<f64> = (1..=250).rev().map(f64::from).collect();
        trim_slowest(&mut v, 1.0);
        assert_eq!(v.len(), 248, "250 - 250*1/100 = 248");
        assert_eq!(*v.last().unwrap(), 248.0, "the slowest were dropped");
        let mut w = vec![5.0; 99];
        trim_slowest(&mut w, 1.0);
        assert_eq!(w.len(), 99, "99*1/100 rounds down to 0");
    }

    #[test]
    fn seed_pipeline_fields() {
        let s = Summary::of_f64(&[1.0, 2.0, 3.0, 4.0, 100.0]);
        let line = mm_line(&s);
        let f: Vec<&str> = line.split([':', '=', ' ']).collect();
        // awk '{print $6", "$10", "$2", "$8}' after tr := "  " — 1-based fields.
        assert_eq!((f[5], f[9], f[1], f[7]), ("3.00", &format!("{:.2}", s.stddev)[..], "1.00", "100.00"));
        assert_eq!(csv_row("naive", &s), format!("naive, 3.00, {:.2}, 1.00, 100.00", s.stddev));
        // The same bytes as the seed's hand-written format for ordinary names.
        for name in ["io_uring", "sockmap", "naive-busypoll"] {
            let hand = format!("{name}, {:.2}, {:.2}, {:.2}, {:.2}", s.p50, s.stddev, s.min, s.max);
            assert_eq!(csv_row(name, &s), hand);
        }
        assert!(!percentile_line(&s).contains("max"));
    }

    #[test]
    fn csv_row_quotes_like_the_project_writer_and_reads_back() {
        let s = Summary::of_f64(&[2.0, 4.0]);
        for name in ["a,b", "say \"hi\"", "x\ry", "two\nlines"] {
            let line = csv_row(name, &s);
            assert!(line.starts_with('"'), "{line}");
            let f = schedlab_report::export::split_csv(&line);
            assert_eq!(f.len(), 5, "{line}");
            assert_eq!(f[0], name);
            assert_eq!(f[1], format!(" {:.2}", s.p50));
            assert_eq!(f[4], " 4.00");
        }
    }

    #[test]
    fn histogram_buckets() {
        let h = log2_histogram(&[0.5, 1.0, 3.0, 3.5, 9.0], 10);
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines.len(), 5, "{h}");
        assert!(lines[0].contains("[       1]"), "{h}");
        assert!(lines[2].contains("[       2]") && lines[2].ends_with("**********"), "{h}");
        assert!(lines[3].contains("[       0]: ") && lines[3].ends_with(": "), "{h}");
        assert_eq!(parse_percent("1%").unwrap(), 1.0);
        assert!(parse_percent("100%").is_err() && parse_percent("x").is_err());
    }

    proptest! {
        #[test]
        fn histogram_counts_every_value(v in proptest::collection::vec(0.0f64..1e9, 1..200)) {
            let h = log2_histogram(&v, 20);
            let total: usize = h.lines().map(|l| {
                let a = l.find('[').unwrap();
                let b = l.find(']').unwrap();
                l[a + 1..b].trim().parse::<usize>().unwrap()
            }).sum();
            prop_assert_eq!(total, v.len());
        }

        #[test]
        fn trim_keeps_the_fastest(mut v in proptest::collection::vec(0.0f64..1e6, 0..500), p in 0.0f64..50.0) {
            let orig = v.clone();
            trim_slowest(&mut v, p);
            let kept_max = v.last().copied().unwrap_or(f64::NEG_INFINITY);
            let dropped = orig.len() - v.len();
            prop_assert!(orig.iter().filter(|&&x| x > kept_max).count() <= dropped);
        }
    }
}
