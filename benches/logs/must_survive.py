#!/usr/bin/env python3
"""The lines of a command's output that compression must keep.

Written, and the lists made with it, before ooda's compressor was tuned on
the corpus, so the lists are not fitted to the compressor. A line must
survive when, with ANSI escapes removed, progress redraws resolved (the
last segment after a carriage return) and surrounding whitespace trimmed,
it is not blank and it

1. names a problem: a word starting with error, warn, fail, panic, fatal,
   exception, traceback or assert (any case), or a pytest/TAP marker
   (`FAILED`, `ERROR`, `not ok`), or an HTTP error a server logged
   (`code 4xx`/`code 5xx`, or a request line whose status is 4xx/5xx);
2. is a tool's summary: `test result:` (cargo), `Finished` (cargo build),
   pytest's closing `=== … in Ns ===` line, node's `# tests`/`# pass`/
   `# fail` counts, wget's `saved [`, git's `On branch`;
3. details the failure it follows: a failed assertion's `left:`/`right:`
   (Rust), `E   ` lines (pytest), `expected:`/`actual:` (node);
4. names a file a change touched: git status's `modified:`/`deleted:`/
   `new file:`/`renamed:` lines and its untracked paths, git diff's
   `diff --git` headers.

Lines that differ only in volatile tokens — timestamps, UUIDs, hex ids of
eight or more characters with a letter among them, or twelve or more
(commit hashes, trace ids; a plain number such as 20240101 is not one) — are
one line: the first is listed, and the check (`compress_bench`, the tests)
compares with those tokens replaced by `<T>`, `<U>` and `<H>` on both sides.
Plain numbers are not replaced: a count such as `3 failed` matters. Each
line is listed once, in first-seen order.
"""
import re
import sys

PROBLEM = re.compile(
    r"(?i)\b(error|warn|fail|panic|fatal|exception|traceback|assert)\w*"
    r"|\bFAILED\b|\bERROR\b|^not ok\b"
    r"|\bcode [45]\d\d\b|\" [45]\d\d "
)
SUMMARY = re.compile(
    r"^test result:|^Finished\b|^=+ .* in [\d.]+s.* =+$|^# (tests|pass|fail) \d+"
    r"|saved \[|^On branch "
)
DETAIL = re.compile(r"^(left|right):|^E\s|^(expected|actual):")
FILES = re.compile(r"^(modified|deleted|new file|renamed):|^diff --git ")
# Order matters: a timestamp or UUID first, then what is left of hex ids.
VOLATILE = [
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<T>"),
    (re.compile(r"\d{2}/[A-Z][a-z]{2}/\d{4}[ :]\d{2}:\d{2}:\d{2}"), "<T>"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<T>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<U>"),
    (re.compile(r"\b[0-9a-fA-F]{8,}\b"), "<H>"),
]
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[()*+][0-9A-Za-z]|\x1b[@-_]")


def lines(text):
    for raw in ANSI.sub("", text).split("\n"):
        shown = next((s for s in reversed(raw.split("\r")) if s), "")
        yield shown.strip()


def shape(line):
    for pattern, token in VOLATILE:
        if token == "<H>":
            # Only with a letter among the digits, or 12+ long: 20240101 is no id.
            line = pattern.sub(lambda m: token if len(m.group(0)) >= 12 or re.search("[a-fA-F]", m.group(0)) else m.group(0), line)
        else:
            line = pattern.sub(token, line)
    return " ".join(line.split())


def must_survive(text):
    out, seen, untracked = [], set(), False
    for line in lines(text):
        if line.startswith("Untracked files:"):
            untracked = True
        elif untracked and not line:
            untracked = False
        keep = bool(line) and (
            PROBLEM.search(line)
            or SUMMARY.search(line)
            or DETAIL.search(line)
            or FILES.search(line)
            or (untracked and not line.startswith("("))
        )
        if keep and shape(line) not in seen:
            seen.add(shape(line))
            out.append(line)
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        for line in must_survive(f.read()):
            print(line)
