#!/usr/bin/env bash
# Build the draftgen image, tagged with the package version (= the chart's appVersion), with the
# engine that runs (DOCKER_HOST, the default socket) or else the project's own daemon
# (scripts/docker/engine.sh). Prints the tag. The build reuses the engine's layer cache, so a
# rebuild after a source change redoes only the small layers.
#
#   scripts/docker/image.sh                      # base: PYTHON_IMAGE, else the Dockerfile's default
#   PYTHON_IMAGE=local scripts/docker/image.sh   # base: the stand-in built from Debian (base.sh)
#
# With the project's own daemon (no Docker Hub here) the stand-in base is the default.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOCKER="${DOCKER:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || echo docker)}"
export DOCKER_BUILDKIT=1
VERSION="$(python3 -c "import tomllib; print(tomllib.load(open('$REPO/pyproject.toml', 'rb'))['project']['version'])")"
IMAGE="${IMAGE:-ghcr.io/draftgen/draftgen}"
TAG="$IMAGE:$VERSION"

# A daemon started here is stopped again at the end (its data root keeps the image and the layer
# cache); DRAFTGEN_DOCKER_KEEP=1 leaves it running, for `docker run` by hand.
unset DRAFTGEN_DOCKER_STARTED
eval "$("$REPO/scripts/docker/engine.sh" start)"
export DOCKER_HOST
if [ -n "${DRAFTGEN_DOCKER_STARTED:-}" ] && [ -z "${DRAFTGEN_DOCKER_KEEP:-}" ]; then
  trap '"$REPO/scripts/docker/engine.sh" stop' EXIT
fi
PYTHON_IMAGE="${PYTHON_IMAGE:-}"
if [ -z "$PYTHON_IMAGE" ] && [ "$DOCKER_HOST" = "$("$REPO/scripts/docker/engine.sh" own)" ]; then
  PYTHON_IMAGE=local
fi
args=()
if [ "$PYTHON_IMAGE" = local ]; then
  PYTHON_IMAGE="$("$REPO/scripts/docker/base.sh")"
fi
[ -n "$PYTHON_IMAGE" ] && args+=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE")
start=$(date +%s)
"$DOCKER" build --network host "${args[@]}" -t "$TAG" "$REPO" >&2
echo "built $TAG in $(( $(date +%s) - start )) s; $("$DOCKER" image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}')" >&2
echo "$TAG"
