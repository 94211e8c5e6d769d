#!/bin/sh
# The search benchmark: ooda's builtin search against Optuna's TPE sampler and
# random search at equal wall time and equal benchmark runs
# (benches/search_sim.rs).
# Installs Optuna from PyPI into target/search-venv on first use.
set -eu
cd "$(dirname "$0")/../.."
venv=target/search-venv
if ! "$venv/bin/python" -c 'import optuna' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'optuna==5.0.0'
fi
exec cargo bench --bench search_sim -- --python "$venv/bin/python" "$@"
