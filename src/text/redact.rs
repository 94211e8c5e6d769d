//! Secret redaction: what must never reach a file, a prompt or a report.
//!
//! Two strengths, for two costs of a mistake. [`redact`] may over-redact an
//! artifact at no cost, so it replaces every value of a secret-named
//! environment variable (and its base64 forms), every known key shape and
//! every secret-looking assignment. [`adds_secret`] decides whether a change
//! may be kept, where a false positive blocks ordinary code, so it counts a
//! key-name assignment only when its literal is as random as a key.

use std::sync::LazyLock;

use regex::Regex;

/// Redaction rules: (pattern, replacement). Specific token shapes come first so that a
/// `KEY=sk-…` line reads `KEY=[REDACTED]`, not a half-replaced token.
// ASCII word boundaries (`(?-u:\b)`): a Unicode one makes the regex crate
// leave its DFA for a slow engine at the first non-ASCII byte, and every
// prompt (θ₁, dashes) and many logs have one. A key's alphabet is ASCII;
// a letter like `é` before it now counts as a boundary, which redacts more.
static SECRETS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // Anthropic and OpenAI API keys (sk-ant-…, sk-proj-…, sk-…).
        (r"(?-u:\b)sk-[A-Za-z0-9_\-]{16,}", "[REDACTED]"),
        // GitHub tokens: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained.
        (r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{20,}", "[REDACTED]"),
        (r"(?-u:\b)github_pat_[A-Za-z0-9_]{20,}", "[REDACTED]"),
        // AWS access key ids.
        (r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)", "[REDACTED]"),
        // Private key blocks inside escaped JSON (a tool call's arguments
        // as the event log stores them): `\n` is two characters there, so
        // the block below would stop at its first line.
        (
            r"-----BEGIN[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----(?:\\[rn])+(?:\\[rn]|[A-Za-z0-9+/=:, -])*(?:-----END[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----)?",
            "[REDACTED PRIVATE KEY]",
        ),
        // Private key blocks (PEM, OpenSSH, PGP), also cut off before their end.
        (
            r"-----BEGIN[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----|(?:\r?\n[A-Za-z0-9+/=:, -]*)*)",
            "[REDACTED PRIVATE KEY]",
        ),
        // JSON web tokens: header.payload.signature, the first two base64 JSON.
        (
            r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
            "[REDACTED]",
        ),
        // Stripe secret and restricted keys.
        (r"(?-u:\b)(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{20,}", "[REDACTED]"),
        // Google API keys.
        (r"(?-u:\b)AIza[0-9A-Za-z_-]{35}", "[REDACTED]"),
        // Slack tokens.
        (r"(?-u:\b)xox[baprs]-[A-Za-z0-9\-]{10,}", "[REDACTED]"),
        // Authorization headers and the like.
        (r"(?i)(?-u:\b)(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*", "${1}[REDACTED]"),
        // Basic auth: only in the header, where "basic" is no English word.
        (
            r"(?i)(?-u:\b)((?:proxy-)?authorization(?::[ \t]*|=)basic(?:[ \t]+|%20))[A-Za-z0-9+/]{8,}=*",
            "${1}[REDACTED]",
        ),
        // Credentials in URLs: scheme://user:password@host.
        (r"(://[^/\s:@]+:)[^@\s/]+@", "${1}[REDACTED]@"),
        // Assignments whose key names a secret: API_KEY=…, GITHUB_TOKEN: …,
        // "client_secret": "…", password=…. Keys must end in the secret word, so
        // max_tokens=100 and $PWD stay.
        // `.env` names too, in their UPPER_CASE only (DB_PASS, MYSQL_PWD,
        // STRIPE_KEY): in code, `sort_key = …` and `first_pass = …` are no
        // secrets. SECRET_KEY_BASE, GPG_PASSPHRASE, a private_key. A value
        // in escaped quotes (`\"…\"`, inside a JSON string) is taken whole.
        (
            r#"(?i)(?-u:\b)((?:[A-Za-z0-9_.\-]*(?:api_?key|token|secret|secret_key_base|password|passwd|passphrase|access_key|private_key)|(?-i:[A-Z][A-Z0-9_]*(?:_PASS|_PWD|_KEY)))(?:\\?["'])?\s*[=:]\s*)(\\"(?:[^"\\\n]|\\[^"])*\\"|"[^"\n]*"|'[^'\n]*'|[^\s,;&"'\\]+)"#,
            "${1}[REDACTED]",
        ),
    ]
    .into_iter()
    .map(|(re, with)| (Regex::new(re).expect("static regex is valid"), with))
    .collect()
});

/// Words of 40 characters from the base64 alphabet: an AWS secret access key
/// has that shape and no prefix. Checked in code ([`aws_secret`]): the
/// regex crate has no look-around to say "not part of a longer word".
static FORTY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9/+]{40,}").expect("static regex is valid"));

/// A bare AWS secret access key: exactly 40 characters of its alphabet,
/// mixing upper case, lower case and digits, as random as a key (at least
/// 4.4 bits per character: 99% of random keys are above 4.47, and a path
/// like `src/driver/Surrogate1/Module2/Component3` is at 4.23). Pure hex
/// (commit hashes fill the archive) and longer base64 runs are not.
fn aws_secret(token: &str) -> bool {
    token.len() == 40
        && token.bytes().any(|b| b.is_ascii_uppercase())
        && token.bytes().any(|b| b.is_ascii_lowercase())
        && token.bytes().any(|b| b.is_ascii_digit())
        && entropy(token) >= 4.4
}

/// Shannon entropy of a string's bytes, in bits per byte.
fn entropy(s: &str) -> f64 {
    let mut counts = [0usize; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// Environment variables whose name says they hold a secret: `…_KEY`,
/// `…TOKEN`, `…SECRET`, `…PASSWORD` (`PGPASSWORD` too), `…_PWD`, `…_PASS`,
/// `…_PAT`. Not `PWD`/`OLDPWD` (the working directory), and not
/// `…_CREDENTIALS`, which names a file path.
static SECRET_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:(?:^|_)(?:key|api_?key|pass|pat)|token|secret|passw(?:or)?d|_pwd|^otel_exporter_otlp(?:_traces|_metrics|_logs)?_headers)$",
    )
        .expect("static regex is valid")
});

/// Values shorter than this are not redacted by value: `KEY=1` would
/// otherwise blank every digit 1.
const MIN_SECRET_VALUE: usize = 8;
/// Pure-hex values shorter than this are not redacted by value (a short
/// hex value is as likely an id or a hash prefix); longer ones are keys.
const MIN_HEX_SECRET: usize = 16;

/// The values of this process's secret-named environment variables, with
/// their base64 encodings: what an agent or a benchmark would echo or
/// encode. Read once: ooda does not change its own environment.
static SECRET_VALUES: LazyLock<Vec<String>> = LazyLock::new(|| secret_values(std::env::vars()));

/// The values to redact for an environment: each secret-named variable's
/// value (at least [`MIN_SECRET_VALUE`] long, not pure hex) and its standard
/// and URL-safe base64 forms, longest first so no value is half-replaced.
pub(crate) fn secret_values(env: impl IntoIterator<Item = (String, String)>) -> Vec<String> {
    use base64::Engine;
    let mut out: Vec<String> = Vec::new();
    for value in secret_env(env) {
        // Reversed, hex and base64: what a benchmark that prints the key
        // "disguised" would print.
        for v in [value.clone(), value.chars().rev().collect()] {
            out.extend([
                base64::engine::general_purpose::STANDARD.encode(&v),
                base64::engine::general_purpose::STANDARD_NO_PAD.encode(&v),
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&v),
                hex(&v),
                hex(&v).to_ascii_uppercase(),
            ]);
            out.push(v);
        }
    }
    out.sort_by_key(|v| std::cmp::Reverse(v.len()));
    out.dedup();
    out
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The length of a stretch of a secret (or of its reversed or hex form)
/// that is redacted wherever it stands: a key printed in two halves, or
/// with a character changed, still shows stretches this long.
const FRAGMENT: usize = 12;

/// The forms a fragment is looked for in, and one regex of all their
/// stretches of [`FRAGMENT`] characters. Secrets shorter than 16 are
/// matched whole only.
pub(crate) struct Fragments {
    forms: Vec<String>,
    re: Option<Regex>,
}

impl Fragments {
    pub(crate) fn of(env: impl IntoIterator<Item = (String, String)>) -> Fragments {
        let mut forms = Vec::new();
        // As random as a key: a path or a word list (`/home/alice/…`) would
        // blank every mention of its folders.
        for value in secret_env(env)
            .into_iter()
            .filter(|v| v.len() >= 16 && !v.contains('/') && entropy(v) >= 3.5)
        {
            let rev: String = value.chars().rev().collect();
            forms.extend([hex(&value), hex(&rev), value, rev]);
        }
        let mut stretches: Vec<String> = forms
            .iter()
            .filter(|f| f.is_ascii())
            .flat_map(|f| {
                (0..=f.len().saturating_sub(FRAGMENT))
                    .map(move |i| regex::escape(&f[i..i + FRAGMENT]))
            })
            .collect();
        stretches.sort();
        stretches.dedup();
        let re = (!stretches.is_empty())
            .then(|| Regex::new(&stretches.join("|")).ok())
            .flatten();
        Fragments { forms, re }
    }

    /// `text` with every stretch of a known secret replaced, each grown to
    /// as much of the secret as stands there.
    pub(crate) fn redact(&self, text: &str) -> String {
        let Some(re) = &self.re else {
            return text.to_string();
        };
        if !re.is_match(text) {
            return text.to_string();
        }
        let inside = |s: &str| self.forms.iter().any(|f| f.contains(s));
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for m in re.find_iter(text) {
            let (mut a, mut b) = (m.start(), m.end());
            while b < text.len() && text.is_char_boundary(b + 1) && inside(&text[a..b + 1]) {
                b += 1;
            }
            while a > 0 && text.is_char_boundary(a - 1) && inside(&text[a - 1..b]) {
                a -= 1;
            }
            match ranges.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => ranges.push((a, b)),
            }
        }
        mask(text, ranges)
    }
}

/// `text` with each of `ranges` (byte ranges in order; one that overlaps
/// the one before is skipped) replaced by `[REDACTED]`.
fn mask(text: &str, ranges: impl IntoIterator<Item = (usize, usize)>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (a, b) in ranges {
        if a < at {
            continue;
        }
        out.push_str(&text[at..a]);
        out.push_str("[REDACTED]");
        at = b;
    }
    out.push_str(&text[at..]);
    out
}

static FRAGMENTS: LazyLock<Fragments> = LazyLock::new(|| Fragments::of(std::env::vars()));

/// The values of the secret-named variables of `env`, as they are.
fn secret_env(env: impl IntoIterator<Item = (String, String)>) -> Vec<String> {
    env.into_iter()
        .filter(|(name, value)| {
            let hex = value.bytes().all(|b| b.is_ascii_hexdigit());
            SECRET_NAME.is_match(name)
                && !name.eq_ignore_ascii_case("PWD")
                && !name.eq_ignore_ascii_case("OLDPWD")
                && value.len() >= MIN_SECRET_VALUE
                && !(hex && value.len() < MIN_HEX_SECRET)
        })
        .map(|(_, value)| value)
        .collect()
}

/// Replaces secrets with `[REDACTED]`: the values of this process's
/// secret-named environment variables (also base64-encoded), then common key
/// shapes, keeping the name of an assignment (`API_KEY=[REDACTED]`) so the
/// reader still knows what was there.
pub(crate) fn redact(text: &str) -> String {
    let once = |t: &str| {
        FRAGMENTS.redact(&redact_cores(
            &redact_with(t, &SECRET_VALUES),
            &SECRET_CORES,
        ))
    };
    unescaped(&once(text), once)
}

/// `text` redacted once more line by line with JSON's whitespace escapes
/// undone (`\n` read as a line break), for the lines that hold them: a
/// tool call stored as escaped JSON carries a private key on one line,
/// where the rules that read a block line by line do not see it. What
/// changes is escaped again, so the line stays the JSON it was.
fn unescaped(text: &str, once: impl Fn(&str) -> String) -> String {
    if !text.contains('\\') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let open = unescape_ws(line);
        if open == line {
            out.push_str(line);
            continue;
        }
        let clean = once(&open);
        if clean == open {
            out.push_str(line);
        } else {
            out.push_str(&escape_ws(&clean));
        }
    }
    out
}

/// `\n`, `\r` and `\t` as the characters they stand for (`\\` stays).
fn unescape_ws(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('n') => {
                chars.next();
                out.push('\n');
            }
            Some('r') => {
                chars.next();
                out.push('\r');
            }
            Some('t') => {
                chars.next();
                out.push('\t');
            }
            Some('\\') => {
                chars.next();
                out.push_str("\\\\");
            }
            _ => out.push('\\'),
        }
    }
    out
}

/// The inverse of [`unescape_ws`] on a line that held no raw line break.
fn escape_ws(text: &str) -> String {
    text.replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t")
}

/// See [`secret_cores`]. Read once, like [`SECRET_VALUES`].
static SECRET_CORES: LazyLock<Vec<String>> = LazyLock::new(|| secret_cores(std::env::vars()));

/// The shortest stretch of base64 worth searching for: one of eight
/// characters turns up by chance once in about 10^14 positions, and a
/// secret of a dozen bytes inside `user:secret` still yields one.
const MIN_CORE: usize = 8;

/// What base64-encoding a secret *inside* a longer string always yields
/// (`user:secret` in a Basic auth header, a key in an encoded JSON blob):
/// at each of the three alignments the secret can start at, the encoding
/// minus its first and last groups of four characters, which depend on the
/// neighbouring bytes. Standard and URL-safe alphabets, longest first.
pub(crate) fn secret_cores(env: impl IntoIterator<Item = (String, String)>) -> Vec<String> {
    use base64::Engine;
    let mut out = Vec::new();
    for value in secret_env(env) {
        for k in 0..3 {
            let mut bytes = vec![0u8; k];
            bytes.extend_from_slice(value.as_bytes());
            for engine in [
                base64::engine::general_purpose::STANDARD_NO_PAD,
                base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ] {
                let enc = engine.encode(&bytes);
                let skip = if k == 0 { 0 } else { 4 };
                if enc.len() >= skip + 4 + MIN_CORE {
                    out.push(enc[skip..enc.len() - 4].to_string());
                }
            }
        }
    }
    out.sort_by_key(|v| std::cmp::Reverse(v.len()));
    out.dedup();
    out
}

/// Replaces every occurrence of a base64 core ([`secret_cores`]), wherever
/// it is: inside a blob its neighbours are base64 too.
pub(crate) fn redact_cores(text: &str, cores: &[String]) -> String {
    let mut out = text.to_string();
    for c in cores {
        if out.contains(c.as_str()) {
            out = out.replace(c.as_str(), "[REDACTED]");
        }
    }
    out
}

/// Redacts a JSON value in place and keeps it JSON: every string is
/// redacted, and a string or number under a key that names a secret
/// (`client_secret`, `api_key`) is replaced whatever it looks like, which
/// text redaction of the serialized form would do but break the JSON.
pub(crate) fn redact_json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            let r = redact(s);
            if r != *s {
                *s = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact_json),
        serde_json::Value::Object(o) => {
            for (k, val) in o.iter_mut() {
                let secret_key = SECRET_NAME.is_match(k) && !k.eq_ignore_ascii_case("pwd");
                if secret_key && (val.is_string() || val.is_number()) {
                    *val = serde_json::Value::String("[REDACTED]".into());
                } else {
                    redact_json(val);
                }
            }
        }
        _ => {}
    }
}

/// Redacts a file an agent wrote, in place: as JSON when it parses (so it
/// stays JSON), else as text (bytes that are not UTF-8 replaced). Returns
/// what the file held before, when it was UTF-8 text: the one read of it.
pub(crate) fn redact_file(path: &std::path::Path) -> crate::error::Result<Option<String>> {
    // Bounded: what an agent wrote may be a FIFO or gigabytes long.
    let Ok((bytes, false)) = crate::atomic::read_capped(path, 16 << 20) else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    let clean = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(mut v) => {
            let before = v.clone();
            redact_json(&mut v);
            (v != before)
                .then(|| serde_json::to_string_pretty(&v).unwrap_or_else(|_| redact(&text)))
        }
        Err(_) => Some(redact(&text)).filter(|c| *c != text),
    };
    if let Some(clean) = clean {
        crate::atomic::write_atomic(path, clean.as_bytes())?;
    }
    Ok(String::from_utf8(bytes).ok())
}

/// Whether `text` holds a secret a change must not add. Stricter than
/// [`redact`], which may over-redact an artifact at no cost: here a false
/// positive blocks ordinary code (`token = tokens[i]`, `self.password =
/// password`). So the key-name rule counts only a quoted literal of 16 or
/// more characters as random as a key (≥ 3.5 bits per character); the
/// shape rules (key families, private-key blocks, JWTs, AWS secrets) and
/// the secret environment values count as they are.
pub(crate) fn adds_secret(text: &str) -> bool {
    let values = &*SECRET_VALUES;
    if values.iter().any(|v| replace_words(text, v) != text)
        || SECRET_CORES.iter().any(|c| text.contains(c.as_str()))
    {
        return true;
    }
    let (assign, shapes) = SECRETS.split_last().expect("the rules are not empty");
    if shapes.iter().any(|(re, _)| re.is_match(text)) {
        return true;
    }
    if FORTY
        .find_iter(text)
        .any(|m| aws_secret_at(text, m.start(), m.end()))
    {
        return true;
    }
    assign.0.captures_iter(text).any(|c| {
        let v = &c[2];
        let quoted = v.len() >= 2 && (v.starts_with('"') || v.starts_with('\''));
        let inner = &v[usize::from(quoted)..v.len() - usize::from(quoted)];
        quoted && inner.len() >= 16 && !inner.contains(' ') && entropy(inner) >= 3.5
    })
}

/// [`redact`] with the secret values given.
pub(crate) fn redact_with(text: &str, values: &[String]) -> String {
    let mut out = text.to_string();
    for v in values {
        if out.contains(v.as_str()) {
            out = replace_words(&out, v);
        }
    }
    for (re, with) in SECRETS.iter() {
        if re.is_match(&out) {
            out = re.replace_all(&out, *with).into_owned();
        }
    }
    if FORTY
        .find_iter(&out)
        .any(|m| aws_secret_at(&out, m.start(), m.end()))
    {
        let found: Vec<(usize, usize)> = FORTY
            .find_iter(&out)
            .filter(|m| aws_secret_at(&out, m.start(), m.end()))
            .map(|m| (m.start(), m.end()))
            .collect();
        out = mask(&out, found);
    }
    out
}

/// Part of a word: a value found inside a longer one (`postgres` in
/// `postgresql`) is not that value.
fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Replaces `value` where it stands as a whole word (or is bounded by
/// non-word characters): `DB_PASSWORD=postgres` must not turn `postgresql`
/// into `[REDACTED]ql`.
fn replace_words(text: &str, value: &str) -> String {
    let bytes = text.as_bytes();
    let whole = text.match_indices(value).filter_map(|(at, _)| {
        let end = at + value.len();
        let before = at > 0 && word_byte(bytes[at - 1]) && word_byte(value.as_bytes()[0]);
        let after = end < bytes.len()
            && word_byte(bytes[end])
            && value.as_bytes().last().copied().is_some_and(word_byte);
        (!before && !after).then_some((at, end))
    });
    mask(text, whole)
}

/// A 40-character run at `start..end` that is an AWS secret key, and not a
/// stretch of a longer token (URL-safe base64 continues with `-`, `_`, `=`).
fn aws_secret_at(text: &str, start: usize, end: usize) -> bool {
    let b = text.as_bytes();
    let joined = |i: usize| matches!(b[i], b'-' | b'_' | b'=' | b'.');
    aws_secret(&text[start..end])
        && !(start > 0 && joined(start - 1))
        && !(end < b.len() && joined(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_api_keys() {
        assert_eq!(
            redact("key sk-ant-api03-AbCdEf0123456789xyz_- end"),
            "key [REDACTED] end"
        );
        assert_eq!(redact("sk-proj-1234567890abcdefXYZ"), "[REDACTED]");
        assert_eq!(redact("sk-1234567890abcdefghij"), "[REDACTED]");
        // Short or embedded look-alikes stay.
        assert_eq!(
            redact("task-1234567890abcdefghij"),
            "task-1234567890abcdefghij"
        );
        assert_eq!(redact("sk-short"), "sk-short");
    }

    #[test]
    fn redacts_github_aws_slack() {
        let ghp = format!("ghp_{}", "a1B2".repeat(9));
        assert_eq!(redact(&format!("token {ghp}.")), "token [REDACTED].");
        let gho = format!("gho_{}", "Z9".repeat(18));
        assert_eq!(redact(&gho), "[REDACTED]");
        let pat = format!("github_pat_11AB_{}", "c".repeat(60));
        assert_eq!(redact(&pat), "[REDACTED]");
        assert_eq!(redact("id AKIAIOSFODNN7EXAMPLE."), "id [REDACTED].");
        assert_eq!(redact("AKIAIOSFODNN7EXAMPL"), "AKIAIOSFODNN7EXAMPL");
        assert_eq!(
            redact("slack xoxb-123456789012-abcdefABCDEF"),
            "slack [REDACTED]"
        );
    }

    #[test]
    fn redacts_the_other_key_families() {
        // A bare AWS secret access key, with no name beside it.
        assert_eq!(
            redact("then wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok"),
            "then [REDACTED] ok"
        );
        // Commit hashes, path-like words and longer base64 runs stay.
        let hash = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(redact(hash), hash);
        let path = "src/driver/Surrogate1/Module2/Component3";
        assert_eq!(redact(path), path);
        // 40 characters inside a longer URL-safe token are not a key.
        let digest = "1X_n63pQ2Y2d0HMdhUb3JrmscoqhcQ6Vfohx9wbxLo0=";
        assert_eq!(redact(digest), digest);
        let long = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9w";
        assert_eq!(redact(long), long);
        let pem = "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\ny";
        assert_eq!(redact(pem), "x\n[REDACTED PRIVATE KEY]\ny");
        let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA";
        assert_eq!(redact(cut), "[REDACTED PRIVATE KEY]");
        // A header with no key after it takes only itself, not the rest.
        let mention = "const HEADER = \"-----BEGIN RSA PRIVATE KEY-----\";\nerror: parse failed";
        assert_eq!(
            redact(mention),
            "const HEADER = \"[REDACTED PRIVATE KEY]\";\nerror: parse failed"
        );
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(redact(&format!("t={jwt};")), "t=[REDACTED];");
        assert_eq!(redact(&format!("jwt {jwt}")), "jwt [REDACTED]");
        let stripe = format!("sk_live_{}", "4eC39HqLyjWDarjtT1zdp7dc");
        assert_eq!(redact(&format!("stripe {stripe}")), "stripe [REDACTED]");
        let google = format!("AIza{}", "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY");
        assert_eq!(redact(&format!("g {google} x")), "g [REDACTED] x");
    }

    #[test]
    fn redacts_secret_environment_values_and_their_base64() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let env = [
            pair("MY_SERVICE_TOKEN", "plain-looking-value-42"),
            pair("DB_PASSWORD", "correct horse"),
            pair("PGPASSWORD", "postgres"),
            pair("DD_API_KEY", "0123456789abcdef0123456789abcdef"),
            // Not secret by name, too short, or short hex: left alone.
            pair("HOME", "/root/home/dir"),
            pair("PWD", "/work/checkout"),
            pair("GOOGLE_APPLICATION_CREDENTIALS", "/etc/gcp.json"),
            pair("SHORT_KEY", "abc"),
            pair("BUILD_TOKEN", "deadbeef1"),
        ];
        let values = secret_values(env);
        let text = "echo plain-looking-value-42; b64 cGxhaW4tbG9va2luZy12YWx1ZS00Mg==; pw correct horse; \
                    db postgres in postgresql; dd 0123456789abcdef0123456789abcdef; \
                    /root/home/dir /work/checkout /etc/gcp.json deadbeef1 abc";
        assert_eq!(
            redact_with(text, &values),
            "echo [REDACTED]; b64 [REDACTED]; pw [REDACTED]; \
             db [REDACTED] in postgresql; dd [REDACTED]; \
             /root/home/dir /work/checkout /etc/gcp.json deadbeef1 abc"
        );
    }

    #[test]
    fn a_secret_base64_encoded_inside_a_longer_string_is_found() {
        use base64::Engine;
        let env = [(
            "MY_SERVICE_TOKEN".to_string(),
            "plain-looking-value-42-and-more".to_string(),
        )];
        let cores = secret_cores(env);
        // At each alignment, in either alphabet, within a longer encoding.
        for prefix in ["user:", "ab:", "{\"token\": \""] {
            let inner = format!("{prefix}plain-looking-value-42-and-more\", \"x\": 1}}");
            for engine in [
                base64::engine::general_purpose::STANDARD,
                base64::engine::general_purpose::URL_SAFE,
            ] {
                let blob = engine.encode(inner.as_bytes());
                let text = format!("Authorization: Basic {blob}");
                let out = redact_cores(&text, &cores);
                assert!(out.contains("[REDACTED]"), "{prefix}: {out}");
                assert!(!out.contains(&blob), "{prefix}: {out}");
            }
        }
        // Another value's encoding is left alone.
        let other =
            base64::engine::general_purpose::STANDARD.encode(b"user:an unrelated value here");
        assert_eq!(redact_cores(&other, &cores), other);
    }

    #[test]
    fn json_is_redacted_and_stays_json() {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"client_secret": "abc", "n": 1, "nested": [{"apiKey": 12345}, "sk-1234567890abcdefghij"]}"#,
        )
        .unwrap();
        redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"client_secret": "[REDACTED]", "n": 1, "nested": [{"apiKey": "[REDACTED]"}, "[REDACTED]"]})
        );
    }

    #[test]
    fn redacts_bearer_and_url_credentials() {
        assert_eq!(
            redact("Authorization: Bearer eyJhbGciOi.J9.abc-_def=="),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(redact("bearer abcdefgh12345"), "bearer [REDACTED]");
        // How OTEL_EXPORTER_OTLP_HEADERS writes it (W3C baggage encoding).
        assert_eq!(
            redact("OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic%20cGs6c2s6MTIzNDU2"),
            "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic%20[REDACTED]"
        );
        assert!(
            secret_values([(
                "OTEL_EXPORTER_OTLP_HEADERS".to_string(),
                "x-api-key=lf_abcdefgh".to_string()
            )])
            .contains(&"x-api-key=lf_abcdefgh".to_string())
        );
        assert_eq!(
            redact("git clone https://user:hunter2@example.com/r.git"),
            "git clone https://user:[REDACTED]@example.com/r.git"
        );
    }

    #[test]
    fn a_known_secret_is_found_reversed_in_hex_in_base64_and_in_halves() {
        let key = "sk-live-9fQ2xLr7Vb3Nw8Kp4Tz6Hm1Dc5Ys0Ja";
        let env = || [("MY_SERVICE_TOKEN".to_string(), key.to_string())];
        let values = secret_values(env());
        let frags = Fragments::of(env());
        let scrub = |t: &str| frags.redact(&redact_with(t, &values));
        let rev: String = key.chars().rev().collect();
        let hexed: String = rev.bytes().map(|b| format!("{b:02x}")).collect();
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&rev);
        for leak in [
            key.to_string(),
            rev.clone(),
            hexed.clone(),
            b64,
            format!("first {} then {}", &key[..18], &key[18..]),
            format!("{}\n{}", &hexed[..30], &hexed[30..]),
        ] {
            let out = scrub(&format!("out: {leak} end"));
            for part in [
                &key[..12],
                &key[12..24],
                &key[24..],
                &hexed[..20],
                &hexed[40..60],
            ] {
                assert!(!out.contains(part), "{leak} → {out}");
            }
            assert!(out.starts_with("out: ") && out.ends_with(" end"), "{out}");
        }
        // A value that is a path is no key: its stretches are not sought.
        let f = Fragments::of([(
            "SSL_KEY".to_string(),
            "/home/alice/.ssh/server.key".to_string(),
        )]);
        assert_eq!(
            f.redact("built /home/alice/project"),
            "built /home/alice/project"
        );
        // Ordinary text beside it stays.
        assert_eq!(scrub("commit 0123456789abcdef"), "commit 0123456789abcdef");
    }

    #[test]
    fn a_private_key_in_escaped_json_is_redacted_whole() {
        let body =
            "MIIEowIBAAKCAQEA7s9Qk2lXnZ3vB8rT5yW1hJ4mC6pD0fG2aK9eL3uN7oP1qR5sT8vX2zY4bW6cE0dF";
        let args = serde_json::json!({
            "path": "k.pem",
            "content": format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\n-----END RSA PRIVATE KEY-----\n"),
        })
        .to_string();
        let out = redact(&args);
        assert!(!out.contains(&body[..20]), "{out}");
        assert!(out.contains("[REDACTED PRIVATE KEY]"), "{out}");
        // Still the JSON it was, less the key.
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["path"], "k.pem");
        // A password in escaped quotes inside a JSON string.
        let line = serde_json::json!({"cmd": "DB_PASS=\"hunter2 horse\" ./run"}).to_string();
        let out = redact(&line);
        assert!(!out.contains("hunter2"), "{out}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
    }

    #[test]
    fn code_with_key_and_pass_names_is_not_a_secret() {
        for code in [
            "sort_key = lambda r: r.score",
            "cache_key = \"user_profile_settings_v2\"",
            "first_pass = \"warmup_iteration_cache\"",
            "partition_key='events_by_customer_id'",
        ] {
            assert_eq!(redact(code), code);
            assert!(!adds_secret(code), "{code}");
        }
    }

    #[test]
    fn dot_env_assignments_are_redacted() {
        for (line, clean) in [
            ("DB_PASS=correcthorse", "DB_PASS=[REDACTED]"),
            ("MYSQL_PWD=correcthorse", "MYSQL_PWD=[REDACTED]"),
            ("STRIPE_KEY=rk_abcdef123", "STRIPE_KEY=[REDACTED]"),
            ("SECRET_KEY_BASE=abcdef0123", "SECRET_KEY_BASE=[REDACTED]"),
            ("GPG_PASSPHRASE='two words'", "GPG_PASSPHRASE=[REDACTED]"),
        ] {
            assert_eq!(redact(line), clean);
        }
    }

    #[test]
    fn redacts_secret_assignments() {
        assert_eq!(redact("API_KEY=abc123"), "API_KEY=[REDACTED]");
        assert_eq!(
            redact("export GITHUB_TOKEN=xyz && run"),
            "export GITHUB_TOKEN=[REDACTED] && run"
        );
        assert_eq!(redact("AWS_SECRET=s3cr3t"), "AWS_SECRET=[REDACTED]");
        assert_eq!(
            redact("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG"),
            "aws_secret_access_key = [REDACTED]"
        );
        assert_eq!(redact("password=hunter2"), "password=[REDACTED]");
        assert_eq!(redact("DB_PASSWORD: 'a b c'"), "DB_PASSWORD: [REDACTED]");
        assert_eq!(
            redact(r#"{"client_secret": "abc", "n": 1}"#),
            r#"{"client_secret": [REDACTED], "n": 1}"#
        );
        assert_eq!(
            redact("OPENAI_API_KEY=sk-abcdefghijklmnop1234"),
            "OPENAI_API_KEY=[REDACTED]"
        );
        // Not secrets.
        assert_eq!(redact("max_tokens=100"), "max_tokens=100");
        assert_eq!(redact("tokens: 5120"), "tokens: 5120");
        assert_eq!(redact("PWD=/home/x"), "PWD=/home/x");
        assert_eq!(redact("plain text"), "plain text");
    }

    #[test]
    fn a_secret_added_to_code_is_told_from_code_about_secrets() {
        for code in [
            "token = tokens[i]",
            "let token: Token = next();",
            "next_token = self.peek()",
            "max_token=100",
            "self.password = password",
            "API_KEY = os.environ[\"API_KEY\"]",
            "password = \"changeme\"",
            "commit 0123456789abcdef0123456789abcdef01234567",
        ] {
            assert!(!adds_secret(code), "{code}");
        }
        for secret in [
            "API_KEY = \"sk-ant-api03-Zq8vXw2LmN4pR7sT1uY6bC9dE3fG5hJ0kA\"",
            "client_secret: 'q8F3kLm2Zx9Pw4Rt7Vb1Nc6Hj0Ds5'",
            "-----BEGIN RSA PRIVATE KEY-----",
            "key = AKIAIOSFODNN7EXAMPLE",
        ] {
            assert!(adds_secret(secret), "{secret}");
        }
    }
}
