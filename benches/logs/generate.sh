#!/usr/bin/env bash
# Makes the corpus of real command outputs: every case runs a real tool on
# this machine (cargo, pytest, node's test runner through npm, git, Python's
# http.server, wget). Each case directory holds:
#   command    the command a user ran
#   raw.log    what it printed (stdout and stderr, as a terminal shows them)
#   rtk        the RTK invocation standing for that command, one word a line
#   rec/       what the real tools printed when RTK ran them (see ./shim), so
#              the benchmark can run RTK, as the proxy it is, on the same bytes
#   must.txt   the lines that must survive compression (./must_survive.py)
#   rtk-must.txt  the same, of what RTK was given (its tools' recorded output)
#   rtk-out.txt   what RTK printed (`compress_bench --rtk PATH --save` writes
#              it; the corpus test holds ooda to it without RTK at hand)
#
# Needs: cargo, git, python3 with pytest (PYTEST, default `pytest`), node and
# npm, wget, and RTK=path/to/rtk. Run from anywhere; takes a few minutes
# (ONLY=<case> remakes one case).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RTK=${RTK:?set RTK to the rtk binary (built from github.com/rtk-ai/rtk)}
PYTEST=${PYTEST:-pytest}
work=$(mktemp -d)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The tools keep their homes; RTK's tracking database goes to a scratch one.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export GIT_AUTHOR_NAME=corpus GIT_AUTHOR_EMAIL=corpus@example.com
export GIT_COMMITTER_NAME=corpus GIT_COMMITTER_EMAIL=corpus@example.com
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
# As most people run them: no backtraces, no colour preferences of this shell.
unset RUST_BACKTRACE CARGO_TERM_COLOR NO_COLOR FORCE_COLOR
bin="$work/bin"
mkdir -p "$bin" "$work/home"
for t in cargo git npm wget pytest; do ln -s "$here/shim" "$bin/$t"; done
real_path="$work/real:$PATH"
mkdir -p "$work/real" && ln -s "$(command -v "$PYTEST")" "$work/real/pytest"

# RTK is judged on the lines of what it was given: the recorded outputs of
# the tools it ran (other timings, other flags such as pytest's -q), or the
# raw log for a case where it reads a file itself.
rtk_must() {
  if ls "$1"/rec/*/out > /dev/null 2>&1; then
    cat "$1"/rec/*/out "$1"/rec/*/err > "$1/rtk-input.tmp"
  else
    cp "$1/raw.log" "$1/rtk-input.tmp"
  fi
  python3 "$here/must_survive.py" "$1/rtk-input.tmp" > "$1/rtk-must.txt"
  rm -f "$1/rtk-input.tmp"
}

# case NAME DIR PREP COMMAND -- RTK-ARGS...
# PREP runs before each of the two runs (e.g. removing a build's target/).
case_() {
  local name=$1 dir=$2 prep=$3 cmd=$4
  shift 5
  # ONLY=name remakes one case.
  if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ]; then return 0; fi
  local out="$here/$name"
  rm -rf "$out" && mkdir -p "$out"
  echo "$cmd" > "$out/command"
  printf '%s\n' "$@" > "$out/rtk"
  (cd "$dir" && sh -c "$prep" && PATH="$real_path" sh -c "$cmd" > "$out/raw.log" 2>&1) || true
  (cd "$dir" && sh -c "$prep" && HOME="$work/home" PATH="$bin:$real_path" SHIM_MODE=record \
     SHIM_STORE="$out/rec" SHIM_REAL_PATH="$real_path" "$RTK" "$@" > /dev/null 2>&1) || true
  python3 "$here/must_survive.py" "$out/raw.log" > "$out/must.txt"
  rtk_must "$out"
  echo "$name: $(wc -c < "$out/raw.log") bytes, $(wc -l < "$out/must.txt") must-survive lines"
}

# The Rust crate, as it is and broken three ways.
# Each in its own folder, all named calc: a folder name must not put a word
# like "fail" into the output.
variant() {
  rm -rf "$work/$1" && mkdir -p "$work/$1" && cp -r "$here/projects/calc" "$work/$1/calc"
}
variant r1
variant r2
sed -i 's|format!("precision {}", c.precision) // BREAK-BUILD|format!("precision {}", c.precision + 0.5) // BREAK-BUILD|' \
  "$work/r2/calc/src/lib.rs"
variant r3
sed -i -e 's|assert_eq!(add(2, 3), 5); // BREAK-TEST-add-1|assert_eq!(add(2, 3), 6); // BREAK-TEST-add-1|' \
  -e 's|assert_eq!(div(9, 3), Some(3)); // BREAK-TEST-div-2|assert_eq!(div(9, 0).unwrap(), 3); // BREAK-TEST-div-2|' \
  -e 's|assert_eq!(avg(4, 8), 6); // BREAK-TEST-avg-4|assert!(avg(4, 8) > 6, "avg rounds down"); // BREAK-TEST-avg-4|' \
  "$work/r3/calc/src/lib.rs"
variant r4
# One root cause (a type renamed away), a hundred errors that follow from it.
echo "pub mod gen;" >> "$work/r4/calc/src/lib.rs"
for i in $(seq 1 100); do
  echo "pub fn scaled_$i(c: &Settings, x: f64) -> f64 { x * f64::from(c.precision) * $i.0 }"
done > "$work/r4/calc/src/gen.rs"
clean='rm -rf target'
case_ cargo-build-pass "$work/r1/calc" "$clean" "cargo build" -- cargo build
case_ cargo-build-fail "$work/r2/calc" "$clean" "cargo build" -- cargo build
case_ cargo-test-pass "$work/r1/calc" "$clean" "cargo test" -- cargo test
case_ cargo-test-fail "$work/r3/calc" "$clean" "cargo test" -- cargo test
case_ rust-error-cascade "$work/r4/calc" "$clean" "cargo build" -- cargo build

# pytest: a suite with failures, and the 5 MB verbose run of a huge one.
cp -r "$here/projects/pyproj" "$work/pyproj"
pyclean='rm -rf .pytest_cache tests/__pycache__'
# RTK adds `-q --tb=short` to every pytest run, and its filter does not
# parse the `-q` report (whose summary line has no `===` around it).
# RTK reads a `-v` before `--` as its own verbosity, as its hook rewrites
# `pytest -v …` to: pytest-huge is that deployed form. After `--` pytest
# gets it, `-v` and `-q` cancel, and pytest prints the default report RTK's
# filter parses: pytest-fail-verbose shows RTK's filter at work.
case_ pytest-fail "$work/pyproj" "$pyclean" "pytest tests/test_calc.py" -- pytest tests/test_calc.py
case_ pytest-fail-verbose "$work/pyproj" "$pyclean" "pytest -v tests/test_calc.py" -- pytest -- -v tests/test_calc.py
case_ pytest-huge "$work/pyproj" "$pyclean" "pytest -v tests/test_huge.py" -- pytest -v tests/test_huge.py

# node's test runner through npm.
cp -r "$here/projects/jsproj" "$work/jsproj"
case_ npm-test-fail "$work/jsproj" true "npm test" -- npm test

# git status and git diff of a large change to a copy of a real source tree.
repo="$work/repo"
mkdir -p "$repo" && git -C "$here/../.." archive HEAD src | tar -x -C "$repo"
git -C "$repo" init -q -b main && git -C "$repo" add -A && git -C "$repo" commit -qm "the tree"
(
  cd "$repo"
  find src -name '*.rs' | sort | head -60 | xargs sed -i 's/Result</Outcome</g; s/pub(crate) fn/pub fn/g'
  find src -name '*.rs' | sort | tail -3 | xargs rm
  mkdir -p src/new && for i in 1 2 3 4 5; do echo "pub fn added_$i() {}" > "src/new/mod_$i.rs"; done
)
case_ git-status "$repo" true "git status" -- git status
case_ git-diff "$repo" true "git diff" -- git diff

# A web server's log: a timestamp on every line, a UUID and a hex trace id
# in every request, some 404s and 501s among them.
www="$work/www"
mkdir -p "$www/static" "$www/api"
echo 'console.log(1)' > "$www/static/app.js"
echo '{}' > "$www/api/health"
(cd "$www" && exec python3 -u -m http.server 8765 --bind 127.0.0.1 2> "$work/server.log" > /dev/null) &
server=$!
sleep 1
python3 - <<'PY'
import random, urllib.request, urllib.error, uuid
rng = random.Random(7)
for i in range(3000):
    rid = uuid.UUID(int=rng.getrandbits(128))
    trace = "%016x" % rng.getrandbits(64)
    r = rng.random()
    if r < 0.05:
        url, data = f"http://127.0.0.1:8765/api/items/{rid}?trace={trace}", None
    elif r < 0.07:
        url, data = f"http://127.0.0.1:8765/api/health?trace={trace}&req={rid}", b"x"
    else:
        url, data = f"http://127.0.0.1:8765/static/app.js?v={trace}&req={rid}", None
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=data)).read()
    except urllib.error.HTTPError:
        pass
PY
kill "$server"; wait "$server" 2>/dev/null || true
mkdir -p "$work/logcase" && cp "$work/server.log" "$work/logcase/raw.log"
# RTK reads the file itself: the benchmark gives it raw.log by that name.
case_ server-log "$work/logcase" true "cat raw.log" -- log raw.log

# A download's progress bar, redrawn hundreds of times.
python3 -c "import os; open('$www/big.bin','wb').write(os.urandom(40 << 20))"
(cd "$www" && exec python3 -m http.server 8765 --bind 127.0.0.1 > /dev/null 2>&1) &
sleep 1
mkdir -p "$work/dl"
url=http://127.0.0.1:8765/big.bin
case_ wget-progress "$work/dl" 'rm -f big.bin' \
  "wget --progress=bar:force:noscroll --limit-rate=8m --output-document=big.bin $url" \
  -- wget "$url" --progress=bar:force:noscroll --limit-rate=8m --output-document=big.bin
