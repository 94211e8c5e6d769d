#!/usr/bin/env python3
"""Send a real night to a real collector and read it back.

Starts Arize Phoenix (from PyPI) on a free port with a scratch working
directory, runs the quickstart Brief in a scratch clone of this repository
with OTEL_EXPORTER_OTLP_ENDPOINT pointing at it (OTLP/HTTP, protobuf, while
the loop runs), then reads every span back through Phoenix's REST API and
checks it against `ooda export --otlp -` of the same log: the same span ids,
one trace, every parent present, the GenAI attributes intact.

With --stored, the night runs without a collector and is sent afterwards
with `ooda export quickstart --otlp-endpoint URL --gzip` (the run's own
span included), then sent a second time: Phoenix must hold each span once.

    python3 -m venv /tmp/phx && /tmp/phx/bin/pip install arize-phoenix
    cargo build --release
    /tmp/phx/bin/python benches/otlp/phoenix_roundtrip.py --ooda target/release/ooda

Not part of `cargo test` (it installs a server from the network); run it
when the exporter changes. Exit 0 when everything matches.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ooda", default="target/release/ooda")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--stored", action="store_true",
                    help="run without a collector, then send the stored night with export")
    args = ap.parse_args()
    ooda = os.path.abspath(args.ooda)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    phoenix = shutil.which("phoenix", path=os.path.dirname(sys.executable)) or shutil.which("phoenix")
    if not phoenix:
        sys.exit("phoenix is not installed for this python: pip install arize-phoenix")

    work = tempfile.mkdtemp(prefix="ooda-phoenix-")
    port, grpc = free_port(), free_port()
    env = dict(os.environ, PHOENIX_WORKING_DIR=os.path.join(work, "phoenix"),
               PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(grpc), PHOENIX_HOST="127.0.0.1")
    log = open(os.path.join(work, "phoenix.log"), "w")
    server = subprocess.Popen([phoenix, "serve"], env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
                break
            except OSError:
                time.sleep(1)
        else:
            sys.exit(f"phoenix did not start; see {work}/phoenix.log")

        clone = os.path.join(work, "repo")
        subprocess.run(["git", "clone", "-q", repo, clone], check=True)
        run_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        if not args.stored:
            run_env["OTEL_EXPORTER_OTLP_ENDPOINT"] = base
        run = subprocess.run([ooda, "run", "briefs/quickstart.md", "--max-iterations",
                              str(args.iterations), "-q"], cwd=clone, env=run_env,
                             capture_output=True, text=True)
        if "could not send spans" in run.stderr:
            sys.exit("the exporter reported a failure:\n" + run.stderr)
        if args.stored:
            # Twice: the second send must not add a span.
            for _ in range(2):
                sent = subprocess.run([ooda, "export", "quickstart", "--otlp-endpoint", base,
                                       "--gzip"], cwd=clone, env=run_env,
                                      capture_output=True, text=True)
                if sent.returncode != 0:
                    sys.exit(f"export --otlp-endpoint failed ({sent.returncode}):\n{sent.stderr}")
                print(sent.stderr.strip())
        exported = subprocess.run([ooda, "export", "quickstart", "--otlp", "-"], cwd=clone,
                                  capture_output=True, text=True, check=True).stdout
        want = {}
        for line in exported.splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for s in ss["spans"]:
                        want[s["spanId"]] = s
        # Without a stop the run's own span is not sent live (it has not
        # ended); a stored night sends it.
        root = [k for k, s in want.items() if "parentSpanId" not in s]
        if not args.stored:
            for k in root:
                del want[k]

        got, rows = {}, 0
        for _ in range(30):
            got, cursor, rows = {}, None, 0
            while True:
                url = f"{base}/v1/projects/default/spans?limit=1000"
                if cursor:
                    url += f"&cursor={cursor}"
                page = get(url)
                for s in page["data"]:
                    got[s["context"]["span_id"]] = s
                    rows += 1
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            if len(got) >= len(want):
                break
            time.sleep(1)

        problems = []
        missing = set(want) - set(got)
        if missing:
            problems.append(f"{len(missing)} exported span(s) not in Phoenix, e.g. "
                            + ", ".join(want[m]["name"] for m in list(missing)[:5]))
        traces = {s["context"]["trace_id"] for s in got.values()}
        if len(traces) != 1:
            problems.append(f"{len(traces)} traces in Phoenix, expected 1")
        ids = set(got) | set(root)
        for s in got.values():
            if s.get("parent_id") and s["parent_id"] not in ids:
                problems.append(f"{s['name']}: parent {s['parent_id']} unknown")
        for k, s in want.items():
            g = got.get(k)
            if not g:
                continue
            if g["name"] != s["name"]:
                problems.append(f"{k}: name {g['name']!r} != {s['name']!r}")
            for a in s["attributes"]:
                if a["key"].startswith("gen_ai.") and a["key"] not in g["attributes"]:
                    problems.append(f"{s['name']}: {a['key']} lost")
        if rows != len(got):
            problems.append(f"{rows} rows for {len(got)} span ids: a span was stored twice")
        print(f"phoenix {base}: {len(got)} spans read back ({rows} rows), {len(want)} exported "
              f"({'the run span included' if args.stored else 'the run span excluded'}), "
              f"{len(traces)} trace(s)")
        kinds = {}
        for s in got.values():
            kinds[s["span_kind"]] = kinds.get(s["span_kind"], 0) + 1
        print("span kinds as Phoenix reads them:", dict(sorted(kinds.items())))
        if problems:
            print("\n".join(problems[:20]))
            sys.exit(1)
        print("round trip: ok")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
