#!/usr/bin/env bash
# `make docker` (part of `make setup`): Debian's Docker engine installed, and the stand-in Python
# base built and cached as a tarball (scripts/docker/base.sh), ready for the tests marked `image`.
# A daemon this script had to start is stopped again; the tests start their own (tests/image).
# Where an engine already runs (a CI runner's, a workstation's) nothing is installed: the image
# then builds on the Dockerfile's default base, pulled from Docker Hub.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ENGINE="$REPO/scripts/docker/engine.sh"
if running="$("$ENGINE" running)" && [ "$running" != "$("$ENGINE" own)" ]; then
  echo "docker: using the engine at $running"
  exit 0
fi
"$ENGINE" install
unset DRAFTGEN_DOCKER_STARTED
eval "$("$ENGINE" start)"
export DOCKER_HOST
if [ -n "${DRAFTGEN_DOCKER_STARTED:-}" ]; then trap '"$ENGINE" stop' EXIT; fi
"$REPO/scripts/docker/base.sh" >/dev/null
