"""Measures the two real programs of `benches/search_sim.rs` over their whole
knob grids, so the benchmark knows every point's true value.

  python3 benches/search/grid.py zstd        # writes benches/search/zstd-grid.json
  python3 benches/search/grid.py quickstart  # writes benches/search/quickstart-grid.json
  python3 benches/search/grid.py corpus      # builds the zstd corpus, prints its path

Points are measured in a shuffled order, once per repetition, so a slow
minute of the machine spreads over many points instead of biasing one.
Run it on a quiet machine: every value is a wall-clock time.

zstd compresses a 26 MiB corpus of the machine's own files (the first
26 MiB of the regular files under /usr/include and /usr/share, in sorted
path order) with `zstd -LEVEL -TTHREADS [--long]`; the metric is MB/s
(maximize) and the guard is a compression ratio of at least 5.0. The
quickstart is `examples/quickstart/main.rs`, built as its Brief builds it;
the metric is its `time_ms` (minimize), at the TILE values in TILES.
"""

import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "target", "search-corpus.bin")
CORPUS_BYTES = 26 * 1024 * 1024
MIN_RATIO = 5.0
# The quickstart's TILE is measured at 47 values, every one of 4..16 and then
# log-spaced to 480 (a run takes about 0.25 s, the whole 477 x 6 grid three
# times over would take an hour); the benchmark interpolates between them in
# log TILE.
TILES = sorted(set(list(range(4, 17)) + [round(16 * (480 / 16) ** (i / 34)) for i in range(35)]))


def corpus():
    """The first 26 MiB of the regular files under /usr/include and
    /usr/share, concatenated in sorted path order."""
    if os.path.exists(CORPUS) and os.path.getsize(CORPUS) == CORPUS_BYTES:
        return CORPUS
    os.makedirs(os.path.dirname(CORPUS), exist_ok=True)
    paths = []
    for top in ("/usr/include", "/usr/share"):
        for d, _, files in os.walk(top):
            for f in files:
                p = os.path.join(d, f)
                if os.path.isfile(p) and not os.path.islink(p):
                    paths.append(p)
    left = CORPUS_BYTES
    with open(CORPUS, "wb") as out:
        for p in sorted(paths):
            if left == 0:
                break
            try:
                data = open(p, "rb").read(left)
            except OSError:
                continue
            out.write(data)
            left -= len(data)
    return CORPUS


def zstd(reps):
    src = corpus()
    size = os.path.getsize(src)
    out = os.path.join(ROOT, "target", "search-out.zst")
    points = [(l, t, g) for l in range(1, 16) for t in range(1, 5) for g in ("off", "on")]
    values, invalid = {}, []
    random.seed(1)
    for rep in range(reps):
        order = points[:]
        random.shuffle(order)
        for (l, t, g) in order:
            args = ["zstd", "-q", "-c", f"-{l}", f"-T{t}"] + (["--long"] if g == "on" else [])
            with open(src, "rb") as f, open(out, "wb") as o:
                t0 = time.perf_counter()
                subprocess.run(args, stdin=f, stdout=o, check=True)
                dt = time.perf_counter() - t0
            key = f"LEVEL={l} LONG={g} THREADS={t}"
            values.setdefault(key, []).append(size / dt / 1e6)
            if rep == 0 and size / os.path.getsize(out) < MIN_RATIO:
                invalid.append(key)
        print(f"zstd: repetition {rep + 1} of {reps} done", flush=True)
    return {
        "direction": "maximize",
        "knobs": "  LEVEL: { int: [1, 15], default: 6 }\n  THREADS: { int: [1, 4], default: 1 }\n  LONG: { choice: [off, on], default: off }\n",
        "values": values,
        "invalid": sorted(invalid),
    }


def quickstart(reps):
    exe = os.path.join(ROOT, "target", "ooda-quickstart", "quickstart")
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    subprocess.run(
        ["rustc", "--edition", "2024", "-C", "opt-level=3", "-o", exe,
         os.path.join(ROOT, "examples", "quickstart", "main.rs")],
        check=True,
    )
    orders = ["ijk", "ikj", "jik", "jki", "kij", "kji"]
    points = [(o, t) for o in orders for t in TILES]
    values = {}
    random.seed(1)
    for rep in range(reps):
        order = points[:]
        random.shuffle(order)
        for (o, t) in order:
            env = dict(os.environ, LOOP_ORDER=o, TILE=str(t))
            res = subprocess.run([exe], env=env, capture_output=True, text=True, check=True)
            ms = next(float(w.split("=")[1]) for w in res.stdout.split() if w.startswith("time_ms="))
            values.setdefault(f"LOOP_ORDER={o} TILE={t}", []).append(ms)
        print(f"quickstart: repetition {rep + 1} of {reps} done", flush=True)
    return {
        "direction": "minimize",
        "knobs": "  LOOP_ORDER: { choice: [ijk, ikj, jik, jki, kij, kji], default: ijk }\n  TILE: { int: [4, 480], log: true, default: 480 }\n",
        "values": values,
        "invalid": [],
        "interpolate": "TILE",
    }


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if which == "corpus":
        print(corpus())
        return
    if which not in ("zstd", "quickstart"):
        sys.exit("usage: grid.py zstd|quickstart [repetitions] | grid.py corpus")
    grid = zstd(reps) if which == "zstd" else quickstart(reps)
    path = os.path.join(HERE, f"{which}-grid.json")
    with open(path, "w") as f:
        json.dump(grid, f, indent=0, sort_keys=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
