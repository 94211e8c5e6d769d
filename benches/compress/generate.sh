#!/usr/bin/env bash
# Makes the compression corpus: real outputs of real tools, run on this
# machine on third-party code taken from the package registries (crates.io,
# PyPI, npm, Debian), broad rather than deep: many tools, a few outputs each.
# Each case directory under corpus/ holds:
#   command    the command a user (or an agent) ran
#   raw.log    what it printed (stdout and stderr as a terminal interleaves
#              them; no terminal, so no colour unless the tool forces it)
#   rtk        what RTK's own Claude Code hook rewrites that command to, or
#              `-` where the hook leaves it alone (RTK then passes the
#              output through untouched)
#   rec/       what the tools printed when RTK ran them (see ./shim), so the
#              benchmark can run RTK, as the proxy it is, on the same bytes
#   rtk-out.txt  what RTK printed (`compress_bench --rtk PATH --save`
#              writes it; the corpus test holds ooda to it without RTK)
# The must-survive items are not stored: the rule (./must_survive.rs)
# computes them from raw.log, and from rec/ for RTK.
#
# Needs: RTK_SRC=a checkout of github.com/rtk-ai/rtk built with `cargo build
# --release` (its hooks/rtk-rewrite.sh decides which commands RTK sees), jq,
# cargo with cargo-nextest and clippy, gcc, clang, make, cmake, python3 with
# pip, node with npm (npx fetches pnpm and yarn), go with Debian's
# golang-github-pkg-errors-dev and golang-github-stretchr-testify-dev, git,
# wget, curl, apt-get (run as root: one case reinstalls two small packages),
# and the network to the registries. `.ci/` does not run it: the outputs are
# committed, made once. ONLY="<case> ..." remakes those cases; takes ~15 minutes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${RTK_SRC:?set RTK_SRC to a built checkout of github.com/rtk-ai/rtk}"
rtk_bin="$RTK_SRC/target/release/rtk"
hook="$RTK_SRC/hooks/rtk-rewrite.sh"
[ -x "$rtk_bin" ] && [ -f "$hook" ] || { echo "no $rtk_bin or $hook" >&2; exit 2; }
corpus="$here/corpus"
work=$(mktemp -d /tmp/ooda-corpus.XXXXXX)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export GIT_AUTHOR_NAME=corpus GIT_AUTHOR_EMAIL=corpus@example.com
export GIT_COMMITTER_NAME=corpus GIT_COMMITTER_EMAIL=corpus@example.com
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
# As most people run them: no backtraces, no colour preferences of this shell.
unset RUST_BACKTRACE CARGO_TERM_COLOR NO_COLOR FORCE_COLOR CLICOLOR_FORCE
export npm_config_fund=false npm_config_update_notifier=false PIP_DISABLE_PIP_VERSION_CHECK=1
export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off GOCACHE="$work/gocache"
export npm_config_cache="$work/npm-cache"

# Tools installed for the corpus live in $work/tools; the real tools are
# found there first, then on the PATH.
tools="$work/tools"
mkdir -p "$tools/bin" "$work/home"
real_path="$tools/bin:$tools/node_modules/.bin:$PATH"
# RTK finds its tools through shims (recording) and itself by name.
bin="$work/shims"
mkdir -p "$bin"
ln -s "$rtk_bin" "$bin/rtk"
for t in cargo git npm npx pnpm yarn wget curl pytest python python3 ruff pip go tsc eslint mypy; do
  PATH="$real_path" command -v "$t" > /dev/null && ln -s "$here/shim" "$bin/$t"
done

# What RTK's hook makes of a command: the rewritten command, or nothing.
rewrite() {
  jq -n --arg c "$1" '{tool_name: "Bash", tool_input: {command: $c}}' \
    | PATH="$bin:$PATH" bash "$hook" 2>/dev/null \
    | jq -r '.hookSpecificOutput.updatedInput.command // empty' 2>/dev/null
}

# [TOOL=name] case_ NAME DIR PREP COMMAND (the tool is NAME up to its first -)
# PREP runs before each of the two runs (e.g. removing a build's target/).
case_() {
  local name=$1 dir=$2 prep=$3 cmd=$4
  if [ -n "${ONLY:-}" ]; then case " $ONLY " in *" $name "*) ;; *) return 0 ;; esac; fi
  local out="$corpus/$name"
  rm -rf "$out" && mkdir -p "$out"
  echo "$cmd" > "$out/command"
  echo "${TOOL:-${name%%-*}}" > "$out/tool"
  (cd "$dir" && sh -c "$prep" && PATH="$real_path" sh -c "$cmd" > "$out/raw.log" 2>&1) < /dev/null
  local r
  r=$(rewrite "$cmd")
  if [ -z "$r" ]; then
    echo - > "$out/rtk"
  else
    echo "$r" > "$out/rtk"
    (cd "$dir" && sh -c "$prep" && HOME="$work/home" PATH="$bin:$real_path" SHIM_MODE=record \
       SHIM_STORE="$out/rec" SHIM_REAL_PATH="$real_path" sh -c "$r" > /dev/null 2>&1) < /dev/null
  fi
  echo "$name: $(wc -c < "$out/raw.log") bytes; RTK: $(cat "$out/rtk")"
}

# flip FILE MARKER NTH... OLD NEW: in FILE, after the NTH occurrences of
# MARKER, the first OLD becomes NEW (an expectation made wrong, whatever
# its values).
flip() {
  python3 - "$@" <<'PY'
import sys, pathlib
path, marker, *rest = sys.argv[1:]
old, new, nths = rest[-2], rest[-1], [int(n) for n in rest[:-2]]
p = pathlib.Path(path)
src = p.read_text()
for nth in sorted(nths, reverse=True):
    i = -1
    for _ in range(nth):
        i = src.find(marker, i + 1)
        if i < 0:
            sys.exit(f"flip: {path} has fewer than {nth} of {marker!r}")
    j = src.find(old, i)
    if j < 0:
        sys.exit(f"flip: no {old!r} after {marker!r} #{nth} in {path}")
    src = src[:j] + new + src[j + len(old):]
p.write_text(src)
PY
}

fetch_crate() { # NAME VERSION DEST
  mkdir -p "$3" && curl -sfL "https://static.crates.io/crates/$1/$1-$2.crate" | tar -xz -C "$3"
}

# --- C: zlib's sources as the libz-sys crate ships them, zlib-ng's as --------
# libz-ng-sys does (with its CMake build)
fetch_crate libz-sys 1.1.20 "$work/crates"
fetch_crate libz-ng-sys 1.1.20 "$work/crates"
zlib="$work/crates/libz-sys-1.1.20/src/zlib"
zng="$work/crates/libz-ng-sys-1.1.20/src/zlib-ng"
cp -r "$zng" "$work/zng-make"
case_ make-build "$work/zng-make" 'rm -rf build && cmake -S . -B build -DZLIB_COMPAT=ON -DZLIB_ENABLE_TESTS=OFF -DWITH_GTEST=OFF -DBUILD_SHARED_LIBS=OFF > /dev/null' 'make -C build -j2'
cp -r "$zlib" "$work/zlib-gcc"
case_ gcc-warnings "$work/zlib-gcc" 'rm -f *.o' \
  'gcc -c -O2 -Wall -Wextra -Wconversion -Wsign-conversion -Wshadow *.c'
cp -r "$zlib" "$work/zlib-clang"
case_ clang-warnings "$work/zlib-clang" 'rm -f *.o' \
  'clang -c -O2 -Weverything -Wno-declaration-after-statement -Wno-unsafe-buffer-usage *.c'
cp -r "$zng" "$work/zng-err"
# Two functions' bodies broken: an undeclared name, a wrong argument count.
flip "$work/zng-err/adler32.c" "return (unsigned long)FUNCTABLE_CALL(adler32)" 1 "return" "return missing_symbol +"
flip "$work/zng-err/compress.c" "Z_DEFAULT_COMPRESSION);" 1 "Z_DEFAULT_COMPRESSION)" "Z_DEFAULT_COMPRESSION, 1)"
TOOL=make case_ make-gcc-error "$work/zng-err" 'rm -rf build && cmake -S . -B build -DZLIB_COMPAT=ON -DZLIB_ENABLE_TESTS=OFF -DWITH_GTEST=OFF -DBUILD_SHARED_LIBS=OFF > /dev/null' 'make -k -C build'
cp -r "$zng" "$work/zng-cmake"
case_ cmake-build "$work/zng-cmake" 'rm -rf build' \
  'cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DZLIB_COMPAT=ON -DZLIB_ENABLE_TESTS=OFF -DWITH_GTEST=OFF -DBUILD_SHARED_LIBS=OFF && cmake --build build -j2'

# --- Rust: the semver crate --------------------------------------------------
fetch_crate semver 1.0.23 "$work/rs"
variant() { rm -rf "$work/$1" && cp -r "$work/rs/semver-1.0.23" "$work/$1" && rm -f "$work/$1/Cargo.toml.orig"; }
variant rs-ok
variant rs-build
# A method's return type changed: every caller's use breaks.
flip "$work/rs-build/src/identifier.rs" "fn is_empty(&self)" 1 "-> bool" "-> Option<bool>"
variant rs-test
flip "$work/rs-test/tests/test_version.rs" "#[test]" 2 4 6 "assert_eq!(" "assert_ne!("
flip "$work/rs-test/tests/test_version_req.rs" "#[test]" 3 5 "assert_eq!(" "assert_ne!("
variant rs-cascade
# A type renamed away: one root cause, a cascade of errors that follow.
sed -i 's/^pub struct Prerelease {/pub struct PreRelease {/' "$work/rs-cascade/src/lib.rs"
clean='rm -rf target'
case_ cargo-build-pass "$work/rs-ok" "$clean" 'cargo build'
case_ cargo-build-fail "$work/rs-build" "$clean" 'cargo build'
case_ cargo-error-cascade "$work/rs-cascade" "$clean" 'cargo build'
case_ cargo-check-then-build "$work/rs-build" "$clean" 'cargo check; cargo build'
case_ cargo-test-pass "$work/rs-ok" "$clean" 'cargo test'
case_ cargo-test-fail "$work/rs-test" "$clean" 'cargo test'
# semver allows the pedantic lints itself; humantime is linted as it is.
fetch_crate humantime 2.1.0 "$work"
TOOL=clippy case_ cargo-clippy-pedantic "$work/humantime-2.1.0" "$clean" 'cargo clippy --all-targets -- -W clippy::pedantic'
case_ nextest-pass "$work/rs-ok" "$clean" 'cargo nextest run'
case_ nextest-fail "$work/rs-test" "$clean" 'cargo nextest run --no-fail-fast'

# --- Python: more-itertools (pytest, unittest), requests (mypy, ruff), pip ---
python3 -m venv "$work/venv"
PATH="$work/venv/bin:$PATH" pip install -q pytest mypy ruff > /dev/null
for t in pytest mypy ruff pip python python3; do ln -sf "$work/venv/bin/$t" "$tools/bin/$t"; done
mkdir -p "$work/py" && (cd "$work/py" && pip download -q --no-deps --no-binary :all: more-itertools==10.5.0 requests==2.32.3 > /dev/null \
  && tar -xzf more-itertools-10.5.0.tar.gz && tar -xzf requests-2.32.3.tar.gz)
mi="$work/py/more-itertools-10.5.0"
# Six expectations made wrong, in both test files: failures of several kinds.
sed -i -e '0,/self.assertEqual(list(mi.chunked(\[1, 2, 3, 4, 5, 6\], 3)), \[\[1, 2, 3\], \[4, 5, 6\]\])/s//self.assertEqual(list(mi.chunked([1, 2, 3, 4, 5, 6], 3)), [[1, 2, 3], [4, 5, 7]])/' \
  -e '0,/self.assertEqual(mi.first(\[0, 1, 2\]), 0)/s//self.assertEqual(mi.first([0, 1, 2]), 1)/' "$mi/tests/test_more.py"
python3 - "$mi/tests" <<'PY'
import re, sys, pathlib
# Break the first assertEqual of a few test classes, whatever its values.
for name, classes in [("test_recipes.py", ["TakeTests", "TabulateTests", "NthTests"]), ("test_more.py", ["IlenTests", "SpyTests"])]:
    p = pathlib.Path(sys.argv[1]) / name
    src = p.read_text()
    for c in classes:
        i = src.find(f"class {c}(")
        j = src.find("self.assertEqual(", i)
        if i < 0 or j < 0:
            continue
        k = src.find("\n", j)
        src = src[:j] + src[j:k].replace("self.assertEqual(", "self.assertNotEqual(", 1) + src[k:]
    p.write_text(src)
PY
pyclean='rm -rf .pytest_cache tests/__pycache__ .mypy_cache .ruff_cache'
case_ pytest-fail "$mi" "$pyclean" 'pytest tests'
case_ pytest-fail-verbose "$mi" "$pyclean" 'pytest -v tests'
case_ pytest-fail-quiet "$mi" "$pyclean" 'pytest -q tests'
case_ pytest-fail-tb-long "$mi" "$pyclean" 'pytest --tb=long tests/test_recipes.py'
case_ pytest-report-all "$mi" "$pyclean" 'pytest -rA tests/test_recipes.py'
TOOL=python-unittest case_ unittest-verbose "$mi" "$pyclean" 'python -m unittest -v tests.test_recipes'
rq="$work/py/requests-2.32.3"
case_ mypy-strict "$rq" "$pyclean" 'mypy --strict src/requests'
case_ ruff-check "$rq" "$pyclean" 'ruff check --no-cache --select E,F,W,B,UP,SIM,PL,RUF src'
mkdir -p "$work/pipenv"
case_ pip-install "$work/pipenv" 'rm -rf site' \
  'pip install --no-cache-dir --target=site flask==3.0.3 requests==2.32.3'
case_ pip-install-fail "$work/pipenv" 'rm -rf site' \
  'pip install --no-cache-dir --target=site flask==3.0.3 requests==99.0.0'

# --- JavaScript: packages from npm, their tools and tests of them ------------
js="$work/js"
mkdir -p "$js" && (cd "$js" && npm init -y > /dev/null)
case_ npm-install "$js" 'rm -rf node_modules package-lock.json' \
  'npm install express@4.21.1 request@2.88.2 lodash@4.17.21 semver@7.6.3 pino@9.5.0 pino-http@10.3.0 jest@29.7.0 vitest@3.0.5 eslint@9.17.0 @eslint/js@9.17.0 globals@15.14.0 typescript@5.7.2'
[ -d "$js/node_modules" ] || (cd "$js" && npm install -s express@4.21.1 request@2.88.2 lodash@4.17.21 semver@7.6.3 pino@9.5.0 pino-http@10.3.0 jest@29.7.0 vitest@3.0.5 eslint@9.17.0 @eslint/js@9.17.0 globals@15.14.0 typescript@5.7.2)
mkdir -p "$work/js-pm" && cat > "$work/js-pm/package.json" <<'JSON'
{ "name": "pm-case", "version": "1.0.0", "private": true,
  "dependencies": { "express": "4.21.1", "request": "2.88.2", "lodash": "4.17.21", "chalk": "4.1.2" } }
JSON
case_ pnpm-install "$work/js-pm" 'rm -rf node_modules pnpm-lock.yaml yarn.lock' 'npx -y pnpm@9.15.0 install'
case_ yarn-install "$work/js-pm" 'rm -rf node_modules pnpm-lock.yaml yarn.lock' 'npx -y yarn@1.22.22 install'
# Tests of the semver and lodash packages, a few expectations wrong.
mkdir -p "$js/test"
cat > "$js/test/semver.test.js" <<'JS'
const { test, describe } = require('node:test');
const assert = require('node:assert');
const semver = require('semver');
const cases = [
  ['1.2.3', '1.2.4', -1], ['2.0.0', '1.9.9', 1], ['1.0.0-alpha', '1.0.0', -1], ['1.0.0', '1.0.0', 0],
  ['1.0.0-rc.1', '1.0.0-rc.2', -1], ['0.0.1', '0.0.2', -1], ['10.0.0', '9.0.0', 1], ['1.2.3-beta', '1.2.3-alpha', 1],
];
describe('compare', () => {
  for (const [a, b, want] of cases) test(`${a} vs ${b}`, () => assert.strictEqual(semver.compare(a, b), want));
  test('prerelease sorts after release (wrong on purpose)', () => assert.strictEqual(semver.compare('1.0.0-alpha', '1.0.0'), 1));
});
describe('ranges', () => {
  test('caret', () => assert.ok(semver.satisfies('1.4.0', '^1.2.0')));
  test('tilde excludes minor (wrong on purpose)', () => assert.ok(semver.satisfies('1.3.0', '~1.2.0')));
  test('maxSatisfying', () => assert.deepStrictEqual(semver.maxSatisfying(['1.2.3', '1.2.4', '1.3.0'], '~1.2.0'), '1.2.5'));
  for (let i = 0; i < 30; i++) test(`valid 1.${i}.0`, () => assert.strictEqual(semver.valid(`1.${i}.0`), `1.${i}.0`));
});
JS
cat > "$js/test/lodash.test.js" <<'JS'
const _ = require('lodash');
describe('lodash', () => {
  test('chunk', () => expect(_.chunk([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]));
  test('chunk wrong on purpose', () => expect(_.chunk([1, 2, 3, 4], 3)).toEqual([[1, 2], [3, 4]]));
  test('debounce exists', () => expect(typeof _.debounce).toBe('function'));
  test('get deep', () => expect(_.get({ a: { b: [{ c: 3 }] } }, 'a.b[0].c')).toBe(4));
  test('merge', () => expect(_.merge({ a: 1 }, { b: 2 })).toEqual({ a: 1, b: 2 }));
  for (let i = 0; i < 25; i++) test(`range ${i}`, () => expect(_.range(i)).toHaveLength(i));
  test('camelCase', () => expect(_.camelCase('Foo Bar')).toBe('FooBar'));
});
JS
sed -e "s/const { test, describe } = require('node:test');/import { test, describe, expect } from 'vitest';/" \
    -e "s/const assert = require('node:assert');//" -e "s/const semver = require('semver');/import semver from 'semver';/" \
    -e 's/assert.strictEqual(\(.*\), \(.*\)))/expect(\1).toBe(\2))/' -e 's/assert.ok(\(.*\)))/expect(\1).toBe(true))/' \
    -e 's/assert.deepStrictEqual(\(.*\), \(.*\)))/expect(\1).toEqual(\2))/' "$js/test/semver.test.js" > "$js/test/semver.vitest.mjs"
echo 'export default { test: { include: ["test/*.vitest.mjs"] } };' > "$js/vitest.config.mjs"
TOOL=node-test case_ node-test-tap "$js" true 'node --test test/semver.test.js'
TOOL=node-test case_ node-test-spec "$js" true 'node --test --test-reporter=spec test/semver.test.js'
case_ jest-fail "$js" 'rm -rf /tmp/jest_*' 'npx jest test/lodash.test.js'
case_ vitest-fail "$js" true 'npx vitest run'
# Lint and type-check a real package's sources (express's lib, copied out
# of node_modules, which both tools skip).
mkdir -p "$js/src" && cp -r "$js/node_modules/express/lib/." "$js/src/"
cat > "$js/eslint.config.js" <<'JS'
const js = require('@eslint/js');
const globals = require('globals');
module.exports = [
  js.configs.recommended,
  { files: ['src/**/*.js'], languageOptions: { sourceType: 'commonjs', globals: globals.node },
    rules: { 'no-var': 'warn', 'prefer-const': 'warn', eqeqeq: 'error', 'no-unused-vars': 'error', curly: 'warn' } },
];
JS
case_ eslint "$js" true 'npx eslint src'
TOOL=tsc case_ tsc-checkjs "$js" true 'npx tsc --noEmit --allowJs --checkJs --strict --target es2020 --module commonjs --types node src/express.js'

# --- Go: Debian's sources of pkg/errors and testify, in GOPATH mode ----------
gp="$work/go"
mkdir -p "$gp/src" && cp -r /usr/share/gocode/src/. "$gp/src/" && chmod -R u+w "$gp"
pe="$gp/src/github.com/pkg/errors"
cp -r "$pe" "$gp/src/github.com/pkg/errorsbad"
# Two mistakes vet finds, and one the compiler refuses.
cat >> "$gp/src/github.com/pkg/errorsbad/errors.go" <<'GO'

func describe(err error) string {
	return fmt.Sprintf("%d: %s", err.Error(), err)
}

func describeAll(errs []error) string {
	s := ""
	for _, e := range errs {
		s += fmt.Sprintf("%s\n", e, len(errs))
	}
	return s
}
GO
cp -r "$gp/src/github.com/pkg/errorsbad" "$gp/src/github.com/pkg/errorsbroken"
sed -i 's/^func (f \*fundamental) Error() string { return f.msg }/func (f *fundamental) Error() string { return f.msg + 1 }/' "$gp/src/github.com/pkg/errorsbroken/errors.go"
sed -i 's/^\treturn s$/\treturn s, nil/' "$gp/src/github.com/pkg/errorsbroken/errors.go"
ta="$gp/src/github.com/stretchr/testify/assert"
# Three checks of testify's own tests turned around.
flip "$ta/assertions_test.go" "func TestTrue(" 1 "if !" "if "
flip "$ta/assertions_test.go" "func TestNotNil(" 1 "if !" "if "
flip "$ta/assertions_test.go" "func TestEqual(" 1 "if !" "if "
gogo="GO111MODULE=off GOPATH=$gp GOFLAGS="
case_ go-build-fail "$gp/src/github.com/pkg/errorsbroken" true "env $gogo go build ."
case_ go-vet "$gp/src/github.com/pkg/errorsbad" true "env $gogo go vet ."
case_ go-test-verbose-pass "$pe" true "env $gogo go test -v ."
case_ go-test-verbose-fail "$ta" true "env $gogo go test -v ."

# --- git: the semver crate's releases 1.0.0 to 1.0.23, one commit each --------
repo="$work/git-semver"
git init -q -b main "$repo"
for v in $(seq 0 23); do
  rm -rf "$work/rel" && fetch_crate semver "1.0.$v" "$work/rel"
  find "$repo" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
  cp -r "$work/rel/semver-1.0.$v/." "$repo/" && rm -f "$repo/Cargo.toml.orig" "$repo/.cargo_vcs_info.json"
  d="2021-$(printf '%02d' $((v / 2 + 1)))-$(printf '%02d' $((v % 2 * 14 + 1)))T12:00:00Z"
  git -C "$repo" add -A && GIT_AUTHOR_DATE=$d GIT_COMMITTER_DATE=$d git -C "$repo" commit -qm "Release 1.0.$v" -m "The crate as published on crates.io."
done
# Work in progress on top: edits, a deletion, a rename, new files.
(
  cd "$repo"
  sed -i 's/pub fn parse(/pub fn parse_str(/' src/lib.rs src/parse.rs 2>/dev/null
  sed -i 's/Error/Failure/g' src/error.rs
  git rm -q --cached tests/test_autotrait.rs && rm tests/test_autotrait.rs
  git mv README.md README.markdown
  mkdir -p src/extra && for i in 1 2 3; do echo "pub fn helper_$i() {}" > "src/extra/helper_$i.rs"; done
  echo '// scratch' > notes.rs
)
case_ git-status "$repo" true 'git status'
case_ git-diff "$repo" true 'git diff'
case_ git-log "$repo" true 'git log'
case_ git-log-patch "$repo" true 'git log -p -n 6 -- src'
case_ git-show "$repo" true 'git show HEAD~2'
case_ git-blame "$repo" true 'git blame src/parse.rs'
case_ git-clone-progress "$work" 'rm -rf clone' "git clone --progress --no-local file://$repo clone"

# --- apt-get: Debian's packages -----------------------------------------------
mkdir -p "$work/apt"
case_ apt-get-update "$work/apt" true 'apt-get update'
case_ apt-get-install "$work/apt" true 'DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall tree jq libonig5'
case_ apt-get-install-fail "$work/apt" true 'DEBIAN_FRONTEND=noninteractive apt-get install -y tree ooda-no-such-package'

# --- Servers and logs ---------------------------------------------------------
# A client that opens a new connection per request (a new port each time),
# a few requests failing, the failures spread out.
drive() { # PORT COUNT
  python3 - "$1" "$2" <<'PY'
import random, sys, urllib.request, urllib.error
port, n = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(11)
for i in range(n):
    r = rng.random()
    path = "/boom/%d" % rng.randrange(5) if r < 0.012 else "/missing/%d" % i if r < 0.05 else "/api/items?page=%d" % rng.randrange(40) if r < 0.3 else "/"
    try:
        urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10).read()
    except (urllib.error.HTTPError, urllib.error.URLError):
        pass
PY
}
await_port() { for _ in $(seq 50); do python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null && return 0; sleep 0.2; done; return 1; }
PATH="$work/venv/bin:$PATH" pip install -q uvicorn==0.32.1 flask==3.0.3 > /dev/null
logs="$work/logs"
mkdir -p "$logs"
cat > "$logs/asgi.py" <<'PY'
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path.startswith("/boom"):
        raise ValueError("item store unavailable for " + path)
    status = 404 if path.startswith("/missing") else 200
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})
PY
(cd "$logs" && exec "$work/venv/bin/uvicorn" asgi:app --port 8771 > uvicorn.log 2>&1) &
server=$!
await_port 8771 && drive 8771 1800
kill $server; wait $server 2>/dev/null
cat > "$logs/flaskapp.py" <<'PY'
from flask import Flask, abort
app = Flask(__name__)
@app.route("/")
def index():
    return "ok"
@app.route("/api/items")
def items():
    return {"items": []}
@app.route("/boom/<int:n>")
def boom(n):
    return {"ratio": 1 / (n - n)}
@app.route("/missing/<int:n>")
def missing(n):
    abort(404)
PY
(cd "$logs" && exec "$work/venv/bin/flask" --app flaskapp run --port 8772 > flask.log 2>&1) &
server=$!
await_port 8772 && drive 8772 1200
kill $server; wait $server 2>/dev/null
cat > "$js/server.js" <<'JS'
const express = require('express');
const pino = require('pino-http')();
const app = express();
app.use(pino);
app.get('/', (req, res) => res.send('ok'));
app.get('/api/items', (req, res) => res.json({ items: [] }));
app.get('/boom/:n', (req, res) => { throw new Error('item store unavailable for ' + req.params.n); });
app.listen(8773);
JS
(cd "$js" && exec node server.js > "$logs/app.jsonl" 2>&1) &
server=$!
await_port 8773 && drive 8773 500
kill $server; wait $server 2>/dev/null
TOOL=uvicorn case_ uvicorn-access-log "$logs" true 'cat uvicorn.log'
TOOL=flask case_ flask-log "$logs" true 'cat flask.log'
TOOL=pino case_ json-lines-log "$logs" true 'cat app.jsonl'

# --- Progress displays -------------------------------------------------------
www="$work/www"
mkdir -p "$www" && python3 -c "import os; open('$www/big.bin','wb').write(os.urandom(24 << 20))"
(cd "$www" && exec python3 -m http.server 8774 --bind 127.0.0.1 > /dev/null 2>&1) &
await_port 8774
mkdir -p "$work/dl"
case_ wget-progress "$work/dl" 'rm -f big.bin' \
  'wget --progress=bar:force:noscroll --limit-rate=6m --output-document=big.bin http://127.0.0.1:8774/big.bin'
case_ curl-progress "$work/dl" 'rm -f big.bin' 'curl --limit-rate 6m -o big.bin http://127.0.0.1:8774/big.bin'
