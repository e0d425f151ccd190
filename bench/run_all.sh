#!/usr/bin/env bash
# Every benchmark, one after the other (`make bench`). Each prints its own table.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.cache/venv/bin/python

echo "== budget overshoot of admission at 64+ requests in flight (target <= 1%)"
$PY bench/budget_overshoot.py --seeds "${BENCH_SEEDS:-10}"
