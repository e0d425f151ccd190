#!/usr/bin/env bash
# The stand-in Python base image (scripts/docker/base.Dockerfile) in the running engine, built once
# from Debian's packages and cached as a `docker save` tarball under .cache/, so later runs (and a
# fresh data root) only `docker load` it. Prints the image name.
#
#   DOCKER_HOST=... scripts/docker/base.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
C="$REPO/.cache/docker-base"
BASE="${DRAFTGEN_TEST_BASE_IMAGE:-draftgen-test/python:3.11-bookworm}"
DEBIAN=draftgen-test/debian:bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# The recipe's hash names the tarball: editing the recipe builds a new base.
RECIPE="$(cat "$REPO/scripts/docker/base.Dockerfile" "$0" | sha256sum | cut -c1-12)"
TARBALL="$C/base-$RECIPE.tar"
DOCKER="${DOCKER:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || echo docker)}"
export DOCKER_BUILDKIT=1
if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi

have() { [ "$("$DOCKER" image inspect --format '{{index .Config.Labels "draftgen.base.recipe"}}' "$1" 2>/dev/null)" = "$RECIPE" ]; }

if have "$BASE"; then echo "$BASE"; exit 0; fi
if [ -f "$TARBALL" ]; then
  "$DOCKER" load -q -i "$TARBALL" >&2
  if have "$BASE"; then echo "$BASE"; exit 0; fi
fi
mkdir -p "$C"
if ! "$DOCKER" image inspect "$DEBIAN" >/dev/null 2>&1; then
  rm -rf "$C/rootfs"
  echo "debootstrap bookworm (minbase) from $MIRROR ..." >&2
  $SUDO debootstrap --variant=minbase bookworm "$C/rootfs" "$MIRROR" >"$C/debootstrap.log" 2>&1 \
    || { tail -20 "$C/debootstrap.log" >&2; exit 1; }
  # debootstrap keeps the .debs it installed (about 120 MB): not part of an image.
  $SUDO rm -rf "$C/rootfs/var/cache/apt/archives/"*.deb "$C/rootfs/var/lib/apt/lists/"*
  $SUDO tar -C "$C/rootfs" -c . | "$DOCKER" import - "$DEBIAN" >&2
  $SUDO rm -rf "$C/rootfs"
fi
ctx="$C/context"
rm -rf "$ctx" && mkdir -p "$ctx"
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
"$DOCKER" build -q --network host --build-arg "DEBIAN_IMAGE=$DEBIAN" \
  --label "draftgen.base.recipe=$RECIPE" -t "$BASE" -f "$REPO/scripts/docker/base.Dockerfile" "$ctx" >&2
rm -rf "$ctx"
rm -f "$C"/base-*.tar
"$DOCKER" save -o "$TARBALL" "$BASE"
echo "$BASE"
