//! Numbers as the report and the listing print them (shared by every text writer).

/// `1234567` → `1,234,567` (the report's "packets = 5,928,080").
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// C's `%g` for the values the listing prints (traffic, α).
pub fn fmt_g(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e6 {
        return format!("{}", x as i64);
    }
    if x.abs() >= 1e6 || (x != 0.0 && x.abs() < 1e-4) {
        let s = format!("{x:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
