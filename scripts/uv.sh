#!/usr/bin/env bash
# Run the project's pinned uv (installed on first use into $DRAFTGEN_CACHE/venv-uv with pip) with
# the project's settings. Every set-up step installs its Python packages through it:
#
#   scripts/uv.sh pip install --python .cache/venv/bin/python -c constraints.txt -e '.[test,lint]'
#
# Why uv and not pip: the same pinned packages land in each venv (same versions, checked by the
# set-up's smoke tests), but pip fetches, installs and compiles them one at a time; uv does each
# in parallel. A fresh clone's `make setup` on a 2-core machine went from 238 s to 195-218 s
# (docs/testing.md).
#
# Settings:
# * UV_CACHE_DIR under $CACHE (git-ignored, beside the venvs): a second set-up fetches nothing.
# * UV_COMPILE_BYTECODE=1: every file compiled at install, as pip does. Where
#   PYTHONDONTWRITEBYTECODE is set (this machine sets it), a venv without bytecode would compile
#   each module again in every process that imports it: every SGLang start, every test.
# * UV_LINK_MODE=copy: a venv never shares a file with the cache (setup_sglang.sh patches a file
#   of torchvision in place; a hard link would patch the cache too).
# * pip's find-links (PIP_FIND_LINKS, else pip's config) are uv's too: on a machine that keeps
#   the CPU build of torch on disk, uv takes it from there as pip would.
set -euo pipefail

UV_VERSION="0.9.30"
# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"  # CACHE, find_python311
TOOL="$CACHE/venv-uv"
UV="$TOOL/bin/uv"

uv_current() { [ -x "$UV" ] && [ "$("$UV" --version | cut -d' ' -f2)" = "$UV_VERSION" ]; }

if ! uv_current; then
  mkdir -p "$CACHE"
  # Not lib.sh's take_lock: that lock is held till exit, and this script ends by running uv.
  exec 8>"$CACHE/.setup-uv.lock"
  flock 8  # the set-up parts run side by side: one installs uv, the others wait for it
  if ! uv_current; then
    find_python311
    rm -rf "$TOOL"
    "$PY" -m venv "$TOOL"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$TOOL/bin/python" -m pip install --quiet "uv==$UV_VERSION" \
      2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
    uv_current || { echo "error: could not install uv==$UV_VERSION into $TOOL" >&2; exit 1; }
  fi
  exec 8>&-
fi

export UV_CACHE_DIR="${UV_CACHE_DIR:-$CACHE/uv-cache}"
export UV_LINK_MODE="${UV_LINK_MODE:-copy}"
export UV_COMPILE_BYTECODE="${UV_COMPILE_BYTECODE:-1}"
export UV_NO_PROGRESS=1
links="${PIP_FIND_LINKS:-$(PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip config get global.find-links 2>/dev/null || true)}"
if [ -n "$links" ] && [ -z "${UV_FIND_LINKS:-}" ]; then
  export UV_FIND_LINKS="${links// /,}"  # pip's list is space-separated, uv's comma-separated
fi
exec "$UV" "$@"
