#!/usr/bin/env python3
"""Writes conversation.json: the scripted 30-step tool conversation that
benches/context_bench.rs replays with and without the llm driver's
context layers.

Written and committed before the layers were built, so they are not tuned
to it. Deterministic (seeded). Each step is one assistant turn: a decision
text, one tool call, and the tool's result as the tool would return it.
`needs` lists exact values the model must have at that step (ids copied
from earlier results: the 15-item array, a UUID buried in a 60 KB log, a
commit hash), so the benchmark can tell whether each value survived.
"""
import json, random, uuid

rng = random.Random(20261202)
def uid():
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))
def hexid(n=40):
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))

steps = []
def step(tool, args, result, text="", needs=()):
    steps.append({"text": text, "tool": tool, "arguments": args,
                  "result": result, "needs": list(needs)})

files = sorted([f"src/{m}.rs" for m in ["orders", "parse", "index", "cache", "http", "json", "db", "auth",
        "queue", "retry", "metrics", "log", "config", "cli", "render", "sort"]] +
        [f"tests/{t}.rs" for t in ["orders", "parse", "cache", "http", "db"]] +
        ["Cargo.toml", "bench.sh", "README.md", "query.sh"] +
        [f"benches/b{i}.rs" for i in range(15)])
def code(name, lines):
    out = []
    for i in range(lines):
        if i % 25 == 0:
            out.append(f"pub fn {name}_{i}(input: &[u8]) -> Result<Vec<u32>, Error> {{")
        elif i % 25 == 24:
            out.append("}")
        else:
            out.append(f"    let v{i} = input.iter().map(|b| u32::from(*b) * {i}).sum::<u32>(); // {name}")
    return "\n".join(out) + "\n"

orders = [{"order_id": uid(), "sku": f"SKU-{rng.randint(1000, 9999)}", "qty": rng.randint(1, 9),
           "cents": rng.randint(100, 99999)} for _ in range(15)]
request_id = uid()
commit = hexid()
log_lines = []
for i in range(900):
    log_lines.append(f"2026-11-30T02:{i // 60 % 60:02d}:{i % 60:02d}.{i:03d}Z INFO bench run={i // 30} "
                     f"iter={i % 30} parse_ns={rng.randint(9000, 15000)} alloc={rng.randint(100, 900)}")
log_lines[611] = (f"2026-11-30T02:10:11.611Z WARN bench slow path taken request_id={request_id} "
                  f"parse_ns=48211 (cold cache)")
big_log = "\n".join(log_lines) + "\nMETRIC p95_parse_ns=13102\n"

step("list_files", {"dir": "."}, json.dumps(files),
     "<decision>goal: find the parser | options: list files; search for parse | choice: list files | why: first look | expected: src/parse.rs</decision>")
step("read_file", {"path": "src/parse.rs"}, code("parse", 320),
     "<decision>goal: see the hot loop | options: read parse.rs; profile | choice: read | why: cheap | expected: the tokenizer</decision>")
step("run_command", {"command": "./query.sh orders"}, json.dumps(orders, indent=1),
     "The benchmark input is the orders table; fetch it.")
step("search_files", {"pattern": "fn parse"},
     json.dumps([f"src/{f}.rs:{rng.randint(1, 400)}: pub fn parse_{i}(input: &[u8])" for i, f in
                 enumerate(["parse"] * 12 + ["json"] * 8 + ["http"] * 5)]),
     "Where else is parsing done?")
step("run_command", {"command": "./bench.sh"}, big_log, "Measure the baseline.")
for k, name in enumerate(["cache", "index", "json", "http", "db", "sort", "render", "queue"]):
    step("read_file", {"path": f"src/{name}.rs"}, code(name, 60 + 15 * k),
         f"Read {name}.rs to see whether it touches the parser.")
    if k == 2:
        step("run_command", {"command": "git log -1 --format=%H"}, commit + "\n", "Which commit is measured?")
    if k == 4:
        step("add_insight", {"text": "parse_ns dominates; cache misses only on cold start"}, "kept", "Note it.")
step("search_files", {"pattern": "alloc"},
     json.dumps([f"src/{rng.choice(['parse', 'json', 'db'])}.rs:{rng.randint(1, 300)}: let buf = Vec::with_capacity(n);" for _ in range(18)]),
     "Find allocations in the hot path.")
step("read_file", {"path": "src/parse.rs", "start": 100, "end": 160}, code("parse", 320).split("\n")[99:160] and "\n".join(code("parse", 320).split("\n")[99:160]) + "\n",
     "Read the inner loop again.")
step("edit_file", {"path": "src/parse.rs", "old": "let v101 = input", "new": "let v101 = input /* reuse */"},
     "edited src/parse.rs: 1 replacement (1 lines → 1 lines)", "Apply the change.")
step("run_command", {"command": "cargo test --quiet"},
     "exit 0\n" + "\n".join(f"test tests::case_{i} ... ok" for i in range(60)) + "\ntest result: ok. 60 passed; 0 failed\n",
     "Tests must stay green.")
step("run_command", {"command": "./bench.sh"}, big_log.replace("13102", "11870"), "Measure again.")
for name in ["metrics", "log", "config", "cli", "auth", "retry", "orders", "tests/parse"]:
    path = f"{name}.rs" if "/" in name else f"src/{name}.rs"
    step("read_file", {"path": path}, code(name.replace("/", "_"), 80), f"Check {path} for callers.")
step("run_command", {"command": "./query.sh orders --ids"}, "ok\n",
     "Now the answer must list every order id exactly.",
     needs=[o["order_id"] for o in orders])
step("finish", {"answer": {"change": "reuse the buffer in parse_100"}}, "",
     "Report the request id of the slow run and the commit measured.",
     needs=[request_id, commit])
assert len(steps) == 30, len(steps)
json.dump({"steps": steps}, open("conversation.json", "w"), indent=1)
print(f"{len(steps)} steps, {sum(len(s['result']) for s in steps)} result chars")
