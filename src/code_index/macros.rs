//! The macros C and C++ code hides its declarations behind, so that the
//! grammar sees the declarations.
//!
//! A parser without a preprocessor reads `char * ZEXPORT gzgets(f, buf)`
//! or `local int gz_load OF((gz_statep, unsigned))` as errors, and every
//! definition such a file holds is lost (zlib: 46 of 53 files). Real
//! preprocessing needs the build's flags; what is enough is what ctags
//! asks its users to list by hand (`-I`), found here from the code's own
//! `#define`s: a macro that expands to nothing or to qualifiers only
//! (`#define ZEXPORT`, `#define local static`, `#define ZEXTERN extern`,
//! `__declspec(dllexport)`) is blanked, and a macro that expands to its
//! argument (`#define OF(args) args`) is replaced by that argument.
//! Blanking writes spaces of the same length, so every byte offset and
//! line of the tree stays that of the file on disk, and the text an answer
//! shows is the file's own.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Words a declaration may carry that change nothing the index records.
const QUALIFIERS: &[&str] = &[
    "static",
    "extern",
    "inline",
    "const",
    "volatile",
    "register",
    "__inline",
    "__inline__",
    "__forceinline",
    "__cdecl",
    "__stdcall",
    "__fastcall",
    "WINAPI",
    "far",
    "near",
    "FAR",
    "NEAR",
];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Macros {
    /// Expand to nothing the index needs: blanked.
    pub blank: BTreeSet<String>,
    /// Expand to their one argument: the name and its parentheses blanked.
    pub identity: BTreeSet<String>,
}

impl Macros {
    pub(crate) fn is_empty(&self) -> bool {
        self.blank.is_empty() && self.identity.is_empty()
    }

    /// Learns the macros a file defines. Run over every header first: a
    /// macro defined as another blank macro (`#define ZEXPORTVA ZEXPORT`)
    /// is found on a second pass.
    pub(crate) fn scan(&mut self, src: &str) {
        for line in src.lines() {
            let l = line.trim_start();
            let Some(rest) = l.strip_prefix('#') else {
                continue;
            };
            let Some(rest) = rest.trim_start().strip_prefix("define") else {
                continue;
            };
            if !rest.starts_with([' ', '\t']) {
                continue;
            }
            let rest = rest.trim_start();
            let name_end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (name, after) = rest.split_at(name_end);
            if name.is_empty() {
                continue;
            }
            if let Some(params) = after.strip_prefix('(') {
                // `#define OF(args) args`: the expansion is the argument.
                let Some((param, body)) = params.split_once(')') else {
                    continue;
                };
                let (param, body) = (param.trim(), strip_comment(body).trim());
                if !param.is_empty()
                    && param.chars().all(|c| c.is_alphanumeric() || c == '_')
                    && body == param
                {
                    self.identity.insert(name.to_string());
                }
                continue;
            }
            let body = strip_comment(after).trim();
            let blank = body.is_empty()
                || body.split_whitespace().all(|w| {
                    QUALIFIERS.contains(&w)
                        || self.blank.contains(w)
                        || w.starts_with("__declspec(")
                        || w.starts_with("__attribute__")
                        || w.starts_with("__visibility__")
                });
            if blank && name.chars().any(|c| c.is_alphabetic()) {
                self.blank.insert(name.to_string());
            }
        }
    }

    /// `src` with the macros blanked, byte for byte as long.
    pub(crate) fn apply(&self, src: &[u8]) -> Vec<u8> {
        let mut out = src.to_vec();
        if self.is_empty() {
            return out;
        }
        let mut i = 0;
        let mut line_start = true;
        let mut directive = false;
        while i < out.len() {
            let c = out[i];
            if c == b'\n' {
                // A directive continues over a trailing backslash.
                if !(directive && i > 0 && out[i - 1] == b'\\') {
                    directive = false;
                }
                line_start = true;
                i += 1;
                continue;
            }
            if line_start && !c.is_ascii_whitespace() {
                directive = c == b'#';
                line_start = false;
            }
            let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
            if directive || !(c.is_ascii_alphabetic() || c == b'_') || (i > 0 && ident(out[i - 1]))
            {
                i += 1;
                continue;
            }
            let start = i;
            while i < out.len() && ident(out[i]) {
                i += 1;
            }
            let word = std::str::from_utf8(&out[start..i]).unwrap_or("");
            if self.blank.contains(word) {
                out[start..i].fill(b' ');
            } else if self.identity.contains(word) {
                let mut j = i;
                while j < out.len() && out[j].is_ascii_whitespace() {
                    j += 1;
                }
                if j < out.len()
                    && out[j] == b'('
                    && let Some(close) = matching(&out, j)
                {
                    out[start..i].fill(b' ');
                    out[j] = b' ';
                    out[close] = b' ';
                }
            }
        }
        out
    }
}

fn strip_comment(s: &str) -> &str {
    let cut = [s.find("/*"), s.find("//")].into_iter().flatten().min();
    cut.map_or(s, |c| &s[..c])
}

/// The index of the `)` matching the `(` at `open`.
fn matching(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_identity_macros_are_found_and_applied_in_place() {
        let mut m = Macros::default();
        let header = "#ifndef ZCONF_H\n#define ZCONF_H\n#  define ZEXPORT\n#define ZEXTERN extern /* x */\n#define local static\n#define OF(args)  args\n#define MAX(a,b) ((a)>(b))\n#define Z_OK 0\n#define ZEXPORTVA ZEXPORT\n";
        m.scan(header);
        m.scan(header);
        assert_eq!(
            m.blank.iter().collect::<Vec<_>>(),
            ["ZCONF_H", "ZEXPORT", "ZEXPORTVA", "ZEXTERN", "local"]
        );
        assert_eq!(m.identity.iter().collect::<Vec<_>>(), ["OF"]);
        let src = b"#ifndef ZCONF_H\nlocal int gz_load OF((gz_statep, unsigned));\nchar * ZEXPORT gzgets(file, buf)\n    gzFile file;\n{ return Z_OK; }\n";
        let out = m.apply(src);
        assert_eq!(out.len(), src.len());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "#ifndef ZCONF_H\n      int gz_load    (gz_statep, unsigned) ;\nchar *         gzgets(file, buf)\n    gzFile file;\n{ return Z_OK; }\n"
        );
    }
}
