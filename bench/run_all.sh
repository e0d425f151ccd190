#!/usr/bin/env bash
# Every benchmark, one after the other (`make bench`), then docs/benchmarks.md from their results.
# Each prints its own table. Sized for a 2-core machine: the saturation benchmarks alone take about
# 40 minutes (simulated 19, real CPU server 5 and 13 at 32,768), the others about 12.
# A benchmark that crashes does not stop the others; the script then exits 1.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.cache/venv/bin/python
export PYTHONUNBUFFERED=1
rm -rf .cache/bench/results
mkdir -p .cache/bench/results
start=$(date +%s)
failed=()
for bench in vs_standard_client budget_precision client_cost pretokenize_rate resume_cost operator_reconcile saturation saturation_real dp_ranks_real dp_ranks_sim; do
  echo
  echo "######## bench/$bench.py"
  t0=$(date +%s)
  if ! "$PY" "bench/$bench.py"; then
    failed+=("$bench")
  fi
  echo "######## bench/$bench.py: $(( $(date +%s) - t0 )) s"
done
# The real-server saturation again with a pool 4× as large: a long request's admission charge is
# then 5 % of it, as the seed's coding requests were of the seed's pool (8,192: 21 %).
echo
echo "######## bench/saturation_real.py --kv-tokens 32768"
"$PY" bench/saturation_real.py --kv-tokens 32768 || failed+=(saturation_real_32k)
# bench/budget_overshoot_real.py (the generator's own real-server check) prints its table only.
echo
echo "######## bench/budget_overshoot_real.py: budget overshoot against a real SGLang server at 64 in flight"
"$PY" bench/budget_overshoot_real.py --budget "${BENCH_BUDGET:-8000}" --in-flight 64 || failed+=(budget_overshoot_real)
"$PY" bench/report.py --total-seconds "$(( $(date +%s) - start ))" --failed "${failed[*]:-}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "benchmarks that crashed: ${failed[*]}" >&2
  exit 1
fi
