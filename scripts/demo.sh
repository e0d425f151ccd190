#!/usr/bin/env bash
# `make demo`: `draftgen generate --serve` starts a real SGLang server on the CPU serving tiny-kimi
# (random weights, Kimi-K2's special-token ids) with the operator's arguments for
# examples/demo.yaml, generates it with the live progress display and stops the server; then
# `draftgen stats`. The server's log is OUT.sglang.log.
#   DEMO_PORT   server port (default 30123)
#   DEMO_OUT    output directory (default out/demo; emptied first unless DEMO_RESUME=1)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.cache/venv/bin/python
DRAFTGEN=.cache/venv/bin/draftgen
MODEL=.cache/models/tiny-kimi
PORT="${DEMO_PORT:-30123}"
OUT="${DEMO_OUT:-out/demo}"

for need in "$PY" .cache/venv-sglang/bin/python "$MODEL/tokenizer.json"; do
  if [ ! -e "$need" ]; then
    echo "demo: $need is missing; run \`make demo\` (it builds the venvs and the models first)" >&2
    exit 1
  fi
done

if [ "${DEMO_RESUME:-0}" != 1 ]; then
  rm -rf "$OUT"
fi

started=$(date +%s)
# The same path a GPU box without Kubernetes takes (docs/first-run.md): `generate --serve` starts
# SGLang with the operator's arguments for the job, waits for it, generates and stops it. `--cpu`
# adds the CPU flags (the documented local override); the KV pool is kept small on purpose.
"$DRAFTGEN" generate examples/demo.yaml --serve --cpu --port "$PORT" \
  --server-arg=--max-total-tokens=8192 --output "$OUT" --health-timeout 300
echo "demo: generated in $(( $(date +%s) - started )) s"
echo
"$DRAFTGEN" stats "$OUT"
echo
echo "demo: records in $OUT/<dataset>/shard-*.jsonl, summaries in $OUT/manifest.json"
