#!/bin/sh
# Five seeded 24-iteration nights of the builtin driver on zstd, for real:
# a fresh git repository in a temporary folder, a benchmark that compresses
# the 26 MiB corpus of benches/search/grid.py (MB/s, maximize), a guard that
# keeps the compression ratio at least 5.0, and knobs LEVEL 1-15, THREADS
# 1-4, LONG off/on. Prints each night's stop, final setting and confirmed
# gain; compare the setting with benches/search/zstd-grid.json.
#
#   benches/search/zstd-nights.sh [SEEDS...]     (default: 1 2 3 4 5)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
cargo build --release --quiet
ooda="$here/target/release/ooda"
corpus=$(python3 benches/search/grid.py corpus)
dir=$(mktemp -d /tmp/ooda-zstd-nights.XXXXXX)
cd "$dir"
git init -q
cat > bench.sh <<EOF
#!/bin/sh
set -eu
out=\$(mktemp /tmp/ooda-zstd-out.XXXXXX)
long=""; [ "\${LONG:-off}" = on ] && long=--long
t0=\$(date +%s%N)
zstd -q -c "-\${LEVEL:-3}" "-T\${THREADS:-1}" \$long < "$corpus" > "\$out"
t1=\$(date +%s%N)
rm -f "\$out"
size=\$(stat -c %s "$corpus")
awk -v s="\$size" -v a="\$t0" -v b="\$t1" 'BEGIN { printf "METRIC mbps=%.3f\n", s / ((b - a) / 1e9) / 1e6 }'
EOF
cat > ratio.sh <<EOF
#!/bin/sh
set -eu
long=""; [ "\${LONG:-off}" = on ] && long=--long
c=\$(zstd -q -c "-\${LEVEL:-3}" "-T\${THREADS:-1}" \$long < "$corpus" | wc -c)
s=\$(stat -c %s "$corpus")
awk -v s="\$s" -v c="\$c" 'BEGIN { r = s / c; printf "ratio %.3f\n", r; exit (r >= 5.0 ? 0 : 1) }'
EOF
chmod +x bench.sh ratio.sh
mkdir briefs
seeds=${*:-1 2 3 4 5}
for s in $seeds; do
    cat > "briefs/z$s.md" <<EOF
---
metric:
  name: mbps
  command: ./bench.sh
  parse: metric-line
  direction: maximize
  timeout: 60s
guards:
  - ./ratio.sh
knobs:
  LEVEL: { int: [1, 15], default: 6 }
  THREADS: { int: [1, 4], default: 1 }
  LONG: { choice: [off, on], default: off }
agent: builtin
budget: { iterations: 24, wall: 2h }
seed: $s
---
# Goal

Compress the corpus faster with zstd by choosing its level, thread count and long mode.

# Success

Higher MB/s than the start, confirmed.

# Must not break

The compression ratio stays at least 5.0 (./ratio.sh).
EOF
done
git add -A
git -c user.email=nights@ooda -c user.name=nights commit -qm "zstd nights"
for s in $seeds; do
    code=0
    started=$(date +%s)
    "$ooda" run "briefs/z$s.md" > "night$s.log" 2>&1 || code=$?
    seconds=$(( $(date +%s) - started ))
    status=$(grep -m1 '^\*\*Status' "iterations/z$s/summary.md")
    confirmed=$(grep -m1 'confirmed gain' "iterations/z$s/summary.md" | cut -d'|' -f3)
    setting=$(git show "ooda/z$s:ooda.knobs.env" 2>/dev/null | grep -v '^#' | tr '\n' ' ' || echo "start")
    echo "seed $s: exit $code after ${seconds}s; $setting;$confirmed; $status"
done
echo "archives in $dir"
