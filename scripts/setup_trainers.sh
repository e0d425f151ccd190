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
# * torch==2.13.0, the CPU build from this machine's disk (scripts/uv.sh); every install carries the
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

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/lib.sh
source "$(dirname "$SELF")/lib.sh"  # SCRIPT_DIR, CACHE, LIB, TORCH_VERSION; PYTHONSAFEPATH=1
use_venv venv-trainers
REQS="$SCRIPT_DIR/trainers-requirements.txt"

SPECULATORS_VERSION="0.9.0"
SPECFORGE_VERSION="0.2.0"
HS_CONNECTORS_VERSION="0.9.0"

parse_setup_args 2,8p -- "$@"

# The recipe: this script, its helpers and the pinned requirements. Any change reinstalls.
want="$(cat "$SELF" "$LIB" "$SCRIPT_DIR/uv.sh" "$REQS" | sha256sum | cut -d' ' -f1)"
if up_to_date; then
  echo "trainers venv up to date: $VENV"
  exit 0
fi

take_lock setup-trainers
cd "$CACHE"
if up_to_date; then
  echo "trainers venv up to date (set up by a concurrent run): $VENV"
  exit 0
fi

t0=$(date +%s)
find_python311
prepare_venv
PIP_QUIET=('^\(speculators\|specforge\|hs-connectors\) .* requires ')

echo "installing torch==$TORCH_VERSION (CPU build)"
pip_install "torch==$TORCH_VERSION"
echo "installing the loaders' dependencies ($REQS)"
pip_install -r "$REQS"
echo "installing speculators==$SPECULATORS_VERSION, specforge==$SPECFORGE_VERSION and" \
  "hs-connectors==$HS_CONNECTORS_VERSION without deps"
pip_install --no-deps "speculators==$SPECULATORS_VERSION" "specforge==$SPECFORGE_VERSION" \
  "hs-connectors==$HS_CONNECTORS_VERSION"

# Smoke test: every entry point the export tests call imports.
smoke_test "the trainers' loaders" '
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
'

finish_setup trainers
