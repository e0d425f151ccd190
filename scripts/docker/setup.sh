#!/usr/bin/env bash
# `make docker` (part of `make setup`): Debian's Docker engine installed, and the stand-in Python
# base built and cached as a tarball (scripts/docker/base.sh), ready for the tests marked `image`.
# A daemon this script had to start is stopped again; the tests start their own (tests/image).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
"$REPO/scripts/docker/engine.sh" install
out="$("$REPO/scripts/docker/engine.sh" start)"
eval "$out"
export DOCKER_HOST
trap '[ -n "${DRAFTGEN_DOCKER_STARTED:-}" ] && "$REPO/scripts/docker/engine.sh" stop' EXIT
"$REPO/scripts/docker/base.sh" >/dev/null
