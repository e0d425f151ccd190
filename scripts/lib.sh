# Shared by scripts/setup_sglang.sh and scripts/setup_trainers.sh: sourced, not run. Each of them
# installs pinned packages into its own venv under $CACHE, behind a stamp (a hash of its recipe,
# $want) that makes reruns instant, a lock that serialises concurrent runs, and a smoke test.
#
# The caller sets SELF (its own path), calls use_venv, sets want, and PIP_QUIET (grep patterns of
# pip's harmless warnings about its own --no-deps installs).

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CACHE="${DRAFTGEN_CACHE:-$REPO_ROOT/.cache}"
LIB="$SCRIPT_DIR/lib.sh"
# Never let the current directory shadow modules: the repo root has top-level packages whose
# names clash with the standard library (e.g. `operator/`), and `python -m` puts cwd first.
export PYTHONSAFEPATH=1
# Both environments run the CPU build of torch, taken from this machine's disk where pip's
# find-links keep it (scripts/uv.sh).
TORCH_VERSION="2.13.0"

# use_venv NAME: VENV is $CACHE/NAME, STAMP its stamp.
use_venv() {
  VENV="$CACHE/$1"
  STAMP="$VENV/.draftgen-setup.stamp"
}

# parse_setup_args USAGE_LINES [--flag...] -- "$@": force and clean (--force: reinstall into the
# existing venv; --clean: delete it first); --help prints lines USAGE_LINES (sed's "2,8p" form)
# of $SELF; each extra --flag the caller names sets the variable of its name to 1.
parse_setup_args() {
  local usage="$1"; shift
  local extra=()
  while [ "$1" != "--" ]; do extra+=("$1"); shift; done
  shift
  force=0; clean=0
  local arg flag
  for flag in "${extra[@]}"; do printf -v "${flag#--}" 0; done
  for arg in "$@"; do
    case "$arg" in
      --force) force=1 ;;
      --clean) clean=1; force=1 ;;
      -h|--help) sed -n "$usage" "$SELF"; exit 0 ;;
      *)
        for flag in "${extra[@]}"; do
          [ "$arg" = "$flag" ] && { printf -v "${flag#--}" 1; continue 2; }
        done
        echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
  done
}

# The venv is current: the stamp says this recipe, and the interpreter is there.
up_to_date() {
  [ "$force" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]
}

# Serialise concurrent runs (e.g. two test sessions starting at once): holds fd 9 till exit.
take_lock() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.$1.lock"
  flock 9
}

# PY: a Python 3.11 interpreter (python3.11, else a python3 that is 3.11).
find_python311() {
  PY=""
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      PY="$(command -v "$cand")"; break
    fi
  done
  [ -n "$PY" ] || { echo "error: python3.11 not found" >&2; exit 1; }
}

# The venv, created with $PY (after deleting it under --clean), with its stamp removed until the
# install succeeds; CONSTRAINTS: a file pinning torch==$TORCH_VERSION for every pip call, so
# nothing can pull a CUDA torch.
prepare_venv() {
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
}

# pip_install ARGS...: `pip install ARGS` into $VENV with the torch constraint, by the project's
# uv (scripts/uv.sh); PIP_QUIET's lines (warnings about --no-deps installs) are dropped.
pip_install() {
  local quiet=(-e '^Using Python .* environment at')
  local p
  for p in "${PIP_QUIET[@]}"; do quiet+=(-e "$p"); done
  "$SCRIPT_DIR/uv.sh" pip install --quiet --python "$VENV/bin/python" \
    -c "$CONSTRAINTS" "$@" 2>&1 | { grep -v "${quiet[@]}" || true; }
  return "${PIPESTATUS[0]}"
}

# smoke_test WHAT CODE: CODE runs in the venv (outside the repo, so that no top-level package of
# ours can shadow a stdlib or third-party module) and its last line is printed; on failure its
# tail, and exit 1.
smoke_test() {
  echo "checking that $1 import"
  local out
  if ! out="$(cd / && "$VENV/bin/python" -W ignore -c "$2" 2>&1)"; then
    echo "$out" | tail -20 >&2
    echo "error: $1 do not import" >&2
    exit 1
  fi
  echo "$out" | tail -1
}

# The install succeeded: write the stamp and say how long it took (since $t0).
finish_setup() {
  echo "$want" >"$STAMP"
  echo "$1 venv ready: $VENV ($(du -sh "$VENV" | cut -f1), $(($(date +%s) - t0)) s)"
}
