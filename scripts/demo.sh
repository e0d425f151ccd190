#!/usr/bin/env bash
# `make demo`: a real SGLang server on the CPU serving tiny-kimi (random weights, Kimi-K2's
# special-token ids), examples/demo.yaml generated against it with the live progress display,
# then `draftgen stats`. The server is stopped on exit, however the script ends.
#   DEMO_PORT   server port (default 30123)
#   DEMO_OUT    output directory (default out/demo; emptied first unless DEMO_RESUME=1)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.cache/venv/bin/python
DRAFTGEN=.cache/venv/bin/draftgen
MODEL=.cache/models/tiny-kimi
PORT="${DEMO_PORT:-30123}"
OUT="${DEMO_OUT:-out/demo}"
URL="http://127.0.0.1:${PORT}"
SERVER_LOG=.cache/demo-server.log

for need in "$PY" .cache/venv-sglang/bin/python "$MODEL/tokenizer.json"; do
  if [ ! -e "$need" ]; then
    echo "demo: $need is missing; run \`make demo\` (it builds the venvs and the models first)" >&2
    exit 1
  fi
done

if [ "${DEMO_RESUME:-0}" != 1 ]; then
  rm -rf "$OUT"
fi

echo "demo: starting SGLang on $URL (tiny-kimi, KV pool 8192 tokens; log in $SERVER_LOG)"
"$PY" -m draftgen.testing.sglang serve --model "$MODEL" --port "$PORT" \
  --max-total-tokens 8192 >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
stop_server() {
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "demo: stopping the SGLang server"
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# `draftgen generate` waits for /health_generate itself; give up early if the server died.
for _ in $(seq 240); do
  if curl -fs -o /dev/null "$URL/health_generate"; then break; fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "demo: the SGLang server exited while starting; its log:" >&2
    tail -n 40 "$SERVER_LOG" >&2
    exit 1
  fi
  sleep 1
done

started=$(date +%s)
"$DRAFTGEN" generate --job examples/demo.yaml --server "$URL" --output "$OUT" --health-timeout 300
echo "demo: generated in $(( $(date +%s) - started )) s"
echo
"$DRAFTGEN" stats "$OUT"
echo
echo "demo: records in $OUT/<dataset>/shard-*.jsonl, summaries in $OUT/manifest.json"
