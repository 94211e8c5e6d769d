//! Text cut to fit: a line clipped to a width, multi-line text bounded,
//! characters counted as a reader sees them, and the short forms of commits
//! and numbers every report and prompt shares.

/// Characters, not bytes: budgets are in characters.
pub fn chars(s: &str) -> usize {
    s.chars().count()
}

/// One line, at most `n` characters (an ellipsis marks a cut).
pub fn clip(s: &str, n: usize) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if chars(&line) <= n {
        line
    } else if n == 0 {
        String::new()
    } else {
        format!("{}…", line.chars().take(n - 1).collect::<String>())
    }
}

/// The characters of `clip(s, usize::MAX)` (`s` on one line, its runs of
/// whitespace as one space), counted without building it.
pub fn collapsed_chars(s: &str) -> usize {
    let (mut n, mut words) = (0usize, 0usize);
    for w in s.split_whitespace() {
        n += chars(w);
        words += 1;
    }
    n + words.saturating_sub(1)
}

pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(10)]
}

pub fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if (0.01..1e6).contains(&a) {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.4e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapsed_chars_counts_what_clip_builds() {
        for s in ["", "  ", "one", " a  b\n\tc ", "héllo  wörld", "x\u{3000}y"] {
            assert_eq!(collapsed_chars(s), chars(&clip(s, usize::MAX)), "{s:?}");
        }
    }
}
