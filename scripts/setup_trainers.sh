#!/usr/bin/env bash
# Install the drafter trainers whose loaders the export tests run, in their own environment:
# $DRAFTGEN_CACHE/venv-trainers (default .cache/venv-trainers at the repo root). Used by
# tests/export/test_trainer_loaders.py; see docs/export.md.
#
#   scripts/setup_trainers.sh            # install (idempotent: a stamp makes reruns instant)
#   scripts/setup_trainers.sh --force    # reinstall into the existing venv
#   scripts/setup_trainers.sh --clean    # delete the venv and install from scratch
#
# What it does, and why:
# * torch==2.13.0, the CPU build pip takes from this machine's disk; every pip call carries the
#   constraint torch==2.13.0, so nothing can pull a CUDA torch.
# * speculators==0.9.0 (vllm-project), specforge==0.2.0 (sgl-project) and hs-connectors==0.9.0
#   (speculators' hidden-state file transfer) with --no-deps: their metadata asks for sglang,
#   torchaudio, torchvision, wandb, flash-attention helpers and SpecForge's own torch==2.11.0;
#   their data loaders need none of it. What the loaders do import is pinned in
#   scripts/trainers-requirements.txt.
# * One environment for both: they agree on transformers 5.8.1 and datasets 5.1.0, and draftgen's
#   own venv stays free of trainer pins.
# Takes about 90 s of CPU: 75 s wall on an idle 2-core machine, 6-7 min on a busy one; 1.5 GB.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CACHE="${DRAFTGEN_CACHE:-$REPO_ROOT/.cache}"
VENV="$CACHE/venv-trainers"
STAMP="$VENV/.draftgen-setup.stamp"
REQS="$SCRIPT_DIR/trainers-requirements.txt"
SELF="$SCRIPT_DIR/$(basename "${BASH_SOURCE[0]}")"
# The repo root has top-level packages whose names clash with the standard library (operator/).
export PYTHONSAFEPATH=1

TORCH_VERSION="2.13.0"
SPECULATORS_VERSION="0.9.0"
SPECFORGE_VERSION="0.2.0"
HS_CONNECTORS_VERSION="0.9.0"

force=0; clean=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --clean) clean=1; force=1 ;;
    -h|--help) sed -n '2,8p' "$SELF"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

# The recipe: this script and the pinned requirements. Any change reinstalls.
want="$(cat "$SELF" "$REQS" | sha256sum | cut -d' ' -f1)"
up_to_date() {
  [ "$force" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]
}
if up_to_date; then
  echo "trainers venv up to date: $VENV"
  exit 0
fi

mkdir -p "$CACHE"
cd "$CACHE"
# Serialise concurrent runs (e.g. two test sessions starting at once).
exec 9>"$CACHE/.setup-trainers.lock"
flock 9
if up_to_date; then
  echo "trainers venv up to date (set up by a concurrent run): $VENV"
  exit 0
fi

t0=$(date +%s)
PY=""
for cand in python3.11 python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
     "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    PY="$(command -v "$cand")"; break
  fi
done
[ -n "$PY" ] || { echo "error: python3.11 not found" >&2; exit 1; }

if [ "$clean" = 1 ] && [ -d "$VENV" ]; then
  echo "removing $VENV"
  rm -rf "$VENV"
fi
rm -f "$STAMP"
if [ ! -x "$VENV/bin/python" ]; then
  echo "creating $VENV with $PY"
  "$PY" -m venv "$VENV"
fi

CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
echo "torch==$TORCH_VERSION" >"$CONSTRAINTS"

pip_install() {
  # The "Location ... is ignored" lines come from this machine's optional local indexes.
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet \
    -c "$CONSTRAINTS" "$@" 2>&1 | { grep -v -e 'is ignored: it is neither a file nor a directory' \
    -e "dependency resolver does not currently take into account" \
    -e '^\(speculators\|specforge\|hs-connectors\) .* requires ' || true; }
  return "${PIPESTATUS[0]}"
}

echo "installing torch==$TORCH_VERSION (CPU build)"
pip_install "torch==$TORCH_VERSION"
echo "installing the loaders' dependencies ($REQS)"
pip_install -r "$REQS"
echo "installing speculators==$SPECULATORS_VERSION, specforge==$SPECFORGE_VERSION and" \
  "hs-connectors==$HS_CONNECTORS_VERSION without deps"
pip_install --no-deps "speculators==$SPECULATORS_VERSION" "specforge==$SPECFORGE_VERSION" \
  "hs-connectors==$HS_CONNECTORS_VERSION"

# Smoke test: every entry point the export tests call imports (outside the repo, so that no
# top-level package of ours can shadow a stdlib or third-party module).
echo "checking that the trainers' loaders import"
if ! out="$(cd / && "$VENV/bin/python" -W ignore -c '
import importlib.metadata as md
import torch
from speculators.cli import app  # `speculators prepare-data`
from speculators.train.data import ArrowDataset, CollateFn
from specforge.config import load_config
from specforge.data.prompt_builder import prepare_prompt_tasks
from specforge.data.preprocessing import build_eagle3_dataset
assert torch.__version__.split("+")[0] == "'"$TORCH_VERSION"'", torch.__version__
print("torch", torch.__version__, "| speculators", md.version("speculators"),
      "| specforge", md.version("specforge"))
' 2>&1)"; then
  echo "$out" | tail -20 >&2
  echo "error: the trainers' loaders do not import" >&2
  exit 1
fi
echo "$out" | tail -1

echo "$want" >"$STAMP"
t1=$(date +%s)
echo "trainers venv ready: $VENV ($(du -sh "$VENV" | cut -f1), $((t1 - t0)) s)"
