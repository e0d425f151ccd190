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
# * torch==2.13.0, the CPU build pip takes from this machine's disk. Every pip call carries the
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

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CACHE="${DRAFTGEN_CACHE:-$REPO_ROOT/.cache}"
VENV="$CACHE/venv-sglang"
STAMP="$VENV/.draftgen-setup.stamp"
REQS="$SCRIPT_DIR/sglang-requirements.txt"
PLACEHOLDER="$SCRIPT_DIR/sgl_kernel_placeholder/sgl_kernel.py"
SELF="$SCRIPT_DIR/$(basename "${BASH_SOURCE[0]}")"
# Never let the current directory shadow modules: the repo root has top-level packages whose
# names clash with the standard library (e.g. `operator/`), and `python -m` puts cwd first.
export PYTHONSAFEPATH=1

TORCH_VERSION="2.13.0"
SGLANG_VERSION="0.5.23"
TORCHVISION_VERSION="0.28.0"

force=0; clean=0; models=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --clean) clean=1; force=1 ;;
    --models) models=1 ;;
    -h|--help) sed -n '2,9p' "$SELF"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

build_models() {
  if [ "$models" = 1 ]; then
    (cd / && PYTHONSAFEPATH=1 HF_HUB_OFFLINE=1 DRAFTGEN_CACHE="$CACHE" \
      "$VENV/bin/python" "$SCRIPT_DIR/build_test_models.py")
  fi
}

# The recipe: this script, the pinned requirements and the placeholder. Any change reinstalls.
recipe_hash() {
  cat "$SELF" "$REQS" "$PLACEHOLDER" | sha256sum | cut -d' ' -f1
}
want="$(recipe_hash)"

if [ "$force" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
  echo "sglang venv up to date: $VENV"
  build_models
  exit 0
fi

mkdir -p "$CACHE"
cd "$CACHE"
# Serialise concurrent runs (e.g. two test sessions starting at once).
exec 9>"$CACHE/.setup-sglang.lock"
flock 9
if [ "$force" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "sglang venv up to date (set up by a concurrent run): $VENV"
  build_models
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
    -e "dependency resolver does not currently take into account" -e '^sglang .* requires ' \
    -e '^torchvision .* requires ' || true; }
  return "${PIPESTATUS[0]}"
}

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
print(f"torchvision: patched {n} fake-kernel registrations")
PYEOF

# sgl_kernel placeholder, unless a real sgl_kernel is importable.
if [ -d "$SITE/sgl_kernel" ]; then
  echo "sgl_kernel package present; placeholder not installed"
else
  install -m 644 "$PLACEHOLDER" "$SITE/sgl_kernel.py"
fi

# Smoke test: the server's modules import on the CPU path (outside the repo, so that no
# top-level package of ours can shadow a stdlib or third-party module).
echo "checking that sglang imports"
if ! out="$(cd / && SGLANG_USE_CPU_ENGINE=1 PYTHONSAFEPATH=1 "$VENV/bin/python" -W ignore -c '
import torch, torchvision, sglang, sglang.launch_server, sglang.srt.entrypoints.http_server
assert torch.__version__.split("+")[0] == "'"$TORCH_VERSION"'", torch.__version__
print("torch", torch.__version__, "| torchvision", torchvision.__version__, "| sglang", sglang.__version__)
' 2>&1)"; then
  echo "$out" | tail -20 >&2
  echo "error: sglang does not import on the CPU path" >&2
  exit 1
fi
echo "$out" | tail -1

echo "$want" >"$STAMP"
t1=$(date +%s)
echo "sglang venv ready: $VENV ($(du -sh "$VENV" | cut -f1), $((t1 - t0)) s)"
build_models
