"""The peers of `benches/search_sim.rs`: Optuna's TPE sampler and random
search, driven through Optuna's ask/tell interface.

The Rust benchmark owns the objectives and the noise; this process only
samples. It reads one JSON request per line on stdin and answers each on
stdout:

  {"op": "study", "sampler": "tpe"|"random", "seed": 7,
   "direction": "minimize", "knobs": [...], "start": {...}}  -> {"ok": true}
  {"op": "ask"}                                -> {"params": {...}, "cpu": 0.004}
  {"op": "tell", "value": 12.5}          (or "value": null for a failed trial)
                                               -> {"ok": true, "cpu": 0.001}

"cpu" is the CPU seconds the sampler spent on the request (this process's
`time.process_time()`), which the benchmark charges to the peer's night as
it charges ooda's plans to ooda's.

Knobs are {"name", "int": [lo, hi], "log"}, {"name", "float": [lo, hi],
"log"} or {"name", "choice": [...]}. The start point (the Brief's defaults)
is enqueued as the first trial, as ooda's night starts from it.
"""

import json
import sys
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)


def distributions(knobs):
    out = {}
    for k in knobs:
        if "int" in k:
            lo, hi = k["int"]
            out[k["name"]] = optuna.distributions.IntDistribution(lo, hi, log=k["log"])
        elif "float" in k:
            lo, hi = k["float"]
            out[k["name"]] = optuna.distributions.FloatDistribution(lo, hi, log=k["log"])
        else:
            out[k["name"]] = optuna.distributions.CategoricalDistribution(k["choice"])
    return out


def main():
    study = None
    dists = None
    trial = None
    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        began = time.process_time()
        if op == "study":
            sampler = (
                optuna.samplers.TPESampler(seed=req["seed"])
                if req["sampler"] == "tpe"
                else optuna.samplers.RandomSampler(seed=req["seed"])
            )
            study = optuna.create_study(direction=req["direction"], sampler=sampler)
            dists = distributions(req["knobs"])
            study.enqueue_trial(req["start"])
            reply = {"ok": True}
        elif op == "ask":
            trial = study.ask(dists)
            reply = {"params": trial.params}
        elif op == "tell":
            if req["value"] is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, req["value"])
            reply = {"ok": True}
        else:
            reply = {"error": f"unknown op {op}"}
        reply["cpu"] = time.process_time() - began
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
