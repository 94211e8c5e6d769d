//! The small human-friendly value syntaxes shared by Briefs, `ooda.yaml` and the command
//! line: durations (`1h30m`), percentages (`1%`) and counts (`3M`).
//!
//! They are deliberately narrow: `5 minutes` is refused rather than guessed at, because a
//! misread budget or timeout silently changes what an unattended night does.

use std::time::Duration;

use crate::validate::yaml::parse_float;

/// `90s`, `5m`, `8h`, `1h30m`, `2d`, `500ms`, `1.5h`; a bare number is seconds.
/// Components may be separated by spaces (`1h 30m`) but a number and its unit may not.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let t = s.trim();
    if let Some(secs) = parse_float(t) {
        return (secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).ok())
            .flatten();
    }
    let mut total = 0f64;
    let mut rest = t;
    let mut parts = 0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let unit_len = rest[num_len..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len() - num_len);
        let number: f64 = parse_float(&rest[..num_len])?;
        let unit = match &rest[num_len..num_len + unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return None,
        };
        total += number * unit;
        parts += 1;
        rest = rest[num_len + unit_len..].trim_start();
    }
    if parts == 0 {
        return None;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// The inverse of [`parse_duration`]: `1d2h3m4s`, `1m30s`, `250ms`, `0s`.
pub(crate) fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let millis = d.subsec_millis();
    let mut out = String::new();
    let (days, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    for (n, unit) in [(days, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if millis > 0 {
        out.push_str(&format!("{millis}ms"));
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// Dollars as people read a bill: `$1.25`, and a cost under a cent with
/// its digits (`$0.0045`), because a night of cheap calls shown as `$0.00`
/// reads as "nothing was charged" or "nothing was counted".
pub(crate) fn format_usd(x: f64) -> String {
    if x > 0.0 && x < 0.000_05 {
        "<$0.0001".to_string()
    } else if x > 0.0 && x < 0.01 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}

/// `1%` → 0.01; a bare number is already a fraction (`0.01`).
pub(crate) fn parse_percent(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.strip_suffix('%') {
        Some(p) => parse_float(p).map(|v| v / 100.0),
        None => parse_float(t),
    }
}

/// `3M`, `250k`, `1.5M`, `1G`, `3_000_000`, `40`. Suffixes are decimal (k = 1,000) and
/// the result must be a whole number.
pub(crate) fn parse_count(s: &str) -> Option<u64> {
    let t = s.trim().replace('_', "");
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().ok();
    }
    let (num, mult) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 1e3),
        (i, 'm' | 'M') => (&t[..i], 1e6),
        (i, 'g' | 'G' | 'b' | 'B') => (&t[..i], 1e9),
        (i, 't' | 'T') => (&t[..i], 1e12),
        _ => return None,
    };
    let value = parse_float(num)? * mult;
    if !(0.0..1.8e19).contains(&value) || (value - value.round()).abs() > 1e-6 {
        return None;
    }
    Some(value.round() as u64)
}

/// A count ([`parse_count`]) or a size: `64KiB`, `1MiB`, `1GiB`, or the
/// decimal `10MB`, `500KB`, `2GB`.
pub(crate) fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    for (suffix, mult) in [
        ("KiB", 1u64 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
        ("KB", 1_000),
        ("MB", 1_000_000),
        ("GB", 1_000_000_000),
    ] {
        if let Some(n) = t.strip_suffix(suffix) {
            return crate::validate::yaml::parse_int(n.trim())
                .and_then(|v| u64::try_from(v).ok())
                .and_then(|v| v.checked_mul(mult));
        }
    }
    parse_count(t)
}

/// A size for people: `1.0 GiB`, `10 MiB`, `512 B`.
pub(crate) fn format_bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return if n.is_multiple_of(size) {
                format!("{} {name}", n / size)
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{n} B")
}

#[cfg(test)]
mod tests {
    #[test]
    fn costs_under_a_cent_keep_their_digits() {
        assert_eq!(super::format_usd(0.0), "$0.00");
        assert_eq!(super::format_usd(0.00054), "$0.0005");
        assert_eq!(super::format_usd(0.0045), "$0.0045");
        assert_eq!(super::format_usd(0.00001), "<$0.0001");
        assert_eq!(super::format_usd(0.015), "$0.01");
        assert_eq!(super::format_usd(12.345), "$12.35");
    }

    use super::*;

    #[test]
    fn durations() {
        let s = Duration::from_secs;
        assert_eq!(parse_duration("90s"), Some(s(90)));
        assert_eq!(parse_duration("5m"), Some(s(300)));
        assert_eq!(parse_duration("8h"), Some(s(8 * 3600)));
        assert_eq!(parse_duration("1h30m"), Some(s(5400)));
        assert_eq!(parse_duration("1h 30m"), Some(s(5400)));
        assert_eq!(parse_duration("2d"), Some(s(2 * 86400)));
        assert_eq!(parse_duration("300"), Some(s(300)));
        assert_eq!(parse_duration("1.5h"), Some(s(5400)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        for bad in [
            "",
            "5 minutes",
            "5 m",
            "m",
            "5x",
            "-5s",
            "-3",
            "1h-3m",
            "1..5s",
            "∞",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn formatting_round_trips() {
        for text in [
            "0s", "90s", "1m30s", "1h30m", "2d", "1d2h3m4s", "250ms", "1s500ms",
        ] {
            let d = parse_duration(text).expect(text);
            let shown = format_duration(d);
            assert_eq!(parse_duration(&shown), Some(d), "{text} -> {shown}");
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_secs(8 * 3600)), "8h");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("1%"), Some(0.01));
        assert_eq!(parse_percent("0.01"), Some(0.01));
        assert_eq!(parse_percent("2.5 %"), Some(0.025));
        assert_eq!(parse_percent("one percent"), None);
        assert_eq!(parse_percent("%"), None);
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("3M"), Some(3_000_000));
        assert_eq!(parse_count("250k"), Some(250_000));
        assert_eq!(parse_count("1.5M"), Some(1_500_000));
        assert_eq!(parse_count("1G"), Some(1_000_000_000));
        assert_eq!(parse_count("40"), Some(40));
        assert_eq!(parse_count("3_000_000"), Some(3_000_000));
        for bad in ["", "M", "1.0001k", "-3M", "3 million", "1e30T", "2.5"] {
            assert_eq!(parse_count(bad), None, "{bad}");
        }
    }

    #[test]
    fn sizes_read_and_print() {
        assert_eq!(parse_bytes("10MiB"), Some(10 << 20));
        assert_eq!(parse_bytes("10MB"), Some(10_000_000));
        assert_eq!(parse_bytes("512"), Some(512));
        assert_eq!(parse_bytes("ten"), None);
        assert_eq!(format_bytes(10 << 20), "10 MiB");
        assert_eq!(format_bytes((1 << 30) + (1 << 29)), "1.5 GiB");
        assert_eq!(format_bytes(512), "512 B");
    }
}
