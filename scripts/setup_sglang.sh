#!/usr/bin/env bash
# Set up a CPU-only SGLang in its own virtual environment: $DRAFTGEN_CACHE/venv-sglang
# (default .cache/venv-sglang at the repo root). Used by tests, the demo and benchmarks.
#
#   scripts/setup_sglang.sh            # install (idempotent: a stamp makes reruns instant)
#   scripts/setup_sglang.sh --force    # reinstall into the existing venv
#   scripts/setup_sglang.sh --clean    # delete the venv and install from scratch
#   scripts/setup_sglang.sh --models   # also build the tiny test models (.cache/models)
#
# What it does, and why (see /work/shared/notes/sglang.md):
# * torch==2.13.0, the CPU build from this machine's disk (scripts/uv.sh). Every install carries the
#   constraint torch==2.13.0, so nothing can pull a CUDA torch.
# * sglang==0.5.23 with --no-deps (its metadata pins CUDA torch, flashinfer, sglang-kernel, ...),
#   then the runtime deps it really needs on the CPU path: scripts/sglang-requirements.txt.
# * torchvision==0.28.0 (the release built for torch 2.13) with --no-deps. PyPI's wheel is a CUDA
#   build whose native ops cannot load beside the CPU torch; torchvision then fails at import
#   ("operator torchvision::nms does not exist") because it registers fake kernels for ops that
#   were never defined. We patch those registrations to be skipped when the ops are missing, so
#   torchvision imports (transforms work; its native ops are absent).
# * No CPU build of sgl_kernel exists: a placeholder module (scripts/sgl_kernel_placeholder)
#   satisfies SGLang's module-level imports; none of its kernels runs on the plain-torch path.
set -euo pipefail

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/lib.sh
source "$(dirname "$SELF")/lib.sh"  # SCRIPT_DIR, CACHE, LIB, TORCH_VERSION; PYTHONSAFEPATH=1
use_venv venv-sglang
REQS="$SCRIPT_DIR/sglang-requirements.txt"
PLACEHOLDER="$SCRIPT_DIR/sgl_kernel_placeholder/sgl_kernel.py"

SGLANG_VERSION="0.5.23"
TORCHVISION_VERSION="0.28.0"

parse_setup_args 2,9p --models -- "$@"

build_models() {
  if [ "$models" = 1 ]; then
    (cd / && PYTHONSAFEPATH=1 HF_HUB_OFFLINE=1 DRAFTGEN_CACHE="$CACHE" \
      "$VENV/bin/python" "$SCRIPT_DIR/build_test_models.py")
  fi
}

# The recipe: this script, its helpers, the pinned requirements and the placeholder. Any change
# reinstalls.
want="$(cat "$SELF" "$LIB" "$SCRIPT_DIR/uv.sh" "$REQS" "$PLACEHOLDER" | sha256sum | cut -d' ' -f1)"

if up_to_date; then
  echo "sglang venv up to date: $VENV"
  build_models
  exit 0
fi

take_lock setup-sglang
cd "$CACHE"
if up_to_date; then
  echo "sglang venv up to date (set up by a concurrent run): $VENV"
  build_models
  exit 0
fi

t0=$(date +%s)
find_python311
prepare_venv
PIP_QUIET=('^sglang .* requires ' '^torchvision .* requires ')

echo "installing torch==$TORCH_VERSION (CPU build)"
pip_install "torch==$TORCH_VERSION"
echo "installing sglang runtime dependencies ($REQS)"
pip_install -r "$REQS"
echo "installing sglang==$SGLANG_VERSION and torchvision==$TORCHVISION_VERSION without deps"
pip_install --no-deps "sglang==$SGLANG_VERSION" "torchvision==$TORCHVISION_VERSION"

SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

# torchvision: skip fake-kernel registrations for native ops that did not load.
"$VENV/bin/python" - "$SITE/torchvision/_meta_registrations.py" <<'PYEOF'
import re, sys
path = sys.argv[1]
src = open(path).read()
pat = re.compile(r'^@torch\.library\.register_fake\(("torchvision::\w+")\)$', re.M)
new, n = pat.subn(
    r'@(torch.library.register_fake(\1) if torchvision.extension._has_ops() '
    r'else (lambda fn: fn))  # draftgen: CPU torch, no torchvision native ops', src)
if n:
    open(path, "w").write(new)
    import py_compile; py_compile.compile(path)  # its bytecode (uv's was of the unpatched file)
print(f"torchvision: patched {n} fake-kernel registrations")
PYEOF

# sgl_kernel placeholder, unless a real sgl_kernel is importable.
if [ -d "$SITE/sgl_kernel" ]; then
  echo "sgl_kernel package present; placeholder not installed"
else
  install -m 644 "$PLACEHOLDER" "$SITE/sgl_kernel.py"
fi

# Smoke test: the server's modules import on the CPU path.
SGLANG_USE_CPU_ENGINE=1 smoke_test "sglang's modules" '
import torch, torchvision, sglang, sglang.launch_server, sglang.srt.entrypoints.http_server
assert torch.__version__.split("+")[0] == "'"$TORCH_VERSION"'", torch.__version__
print("torch", torch.__version__, "| torchvision", torchvision.__version__, "| sglang", sglang.__version__)
'

finish_setup sglang
build_models
