#!/usr/bin/env bash
# A Docker engine for building and testing the image: the one already running, else the
# project's own daemon under .cache/docker/ (Debian's docker.io, installed here when missing).
#
#   scripts/docker/engine.sh install   # Debian's docker.io (dockerd + the 20.10 CLI) and debootstrap
#   scripts/docker/engine.sh start     # prints `export DOCKER_HOST=...`; starts our daemon if none
#                                      # runs, and then also prints `export DRAFTGEN_DOCKER_STARTED=1`
#   scripts/docker/engine.sh stop      # stops our daemon (by its pid file), if it runs
#   scripts/docker/engine.sh host      # prints the DOCKER_HOST to use (running engine, else ours)
#   scripts/docker/engine.sh running   # prints the running engine's DOCKER_HOST, exit 1 if none
#   scripts/docker/engine.sh own       # prints our daemon's DOCKER_HOST
#
# Our daemon touches nothing else on the machine: its own data and exec roots, its own socket,
# no iptables and no bridge (containers run with --network host). Storage: overlay2 where the
# kernel lets us mount an overlay here (a new container then costs nothing), else vfs (which copies
# the whole image for every container: about a minute for this image on two busy cores).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
D="${DRAFTGEN_DOCKER_DIR:-$REPO/.cache/docker}"
OWN_HOST="unix://$D/docker.sock"
if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
# Debian's client: it builds with the engine's built-in BuildKit (DOCKER_BUILDKIT=1); some
# preinstalled newer clients have no buildx plugin and refuse to.
DOCKER="${DOCKER:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || command -v docker || echo docker)}"

reachable() {  # $1: a DOCKER_HOST value
  DOCKER_HOST="$1" timeout 20 "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

running_host() {  # an engine that already runs: $DOCKER_HOST, the default socket, or ours
  if [ -n "${DOCKER_HOST:-}" ] && reachable "$DOCKER_HOST"; then echo "$DOCKER_HOST"; return 0; fi
  if [ -S /var/run/docker.sock ] && reachable unix:///var/run/docker.sock; then
    echo unix:///var/run/docker.sock; return 0
  fi
  if [ -S "$D/docker.sock" ] && reachable "$OWN_HOST"; then echo "$OWN_HOST"; return 0; fi
  return 1
}

install() {
  if [ -x /usr/sbin/dockerd ] && [ -x "$DOCKER" ] && command -v debootstrap >/dev/null; then
    return 0
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    docker.io debootstrap >/dev/null
}

storage_driver() {
  if [ -n "${DRAFTGEN_DOCKER_STORAGE_DRIVER:-}" ]; then echo "$DRAFTGEN_DOCKER_STORAGE_DRIVER"; return; fi
  local t="$D/overlay-probe"
  $SUDO rm -rf "$t" && mkdir -p "$t"/{l,u,w,m}
  if $SUDO mount -t overlay overlay -o "lowerdir=$t/l,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null; then
    $SUDO umount "$t/m"; echo overlay2
  else
    echo vfs
  fi
  $SUDO rm -rf "$t"
}

start() {
  local host
  if host="$(running_host)"; then echo "export DOCKER_HOST=$host"; return 0; fi
  install
  mkdir -p "$D/data" "$D/exec"
  rm -f "$D/docker.sock" "$D/pid"
  local driver
  driver="$(storage_driver)"
  # setsid: the daemon outlives this script and ignores the caller's terminal signals.
  $SUDO setsid /usr/sbin/dockerd --data-root "$D/data" --exec-root "$D/exec" --pidfile "$D/pid" \
    -H "$OWN_HOST" --storage-driver "$driver" --iptables=false --ip6tables=false --bridge=none \
    >"$D/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 120); do
    if [ -S "$D/docker.sock" ] && reachable "$OWN_HOST"; then
      [ -n "$SUDO" ] && $SUDO chown "$(id -u)" "$D/docker.sock"
      echo "export DOCKER_HOST=$OWN_HOST"
      echo "export DRAFTGEN_DOCKER_STARTED=1"
      return 0
    fi
    sleep 0.5
  done
  echo "dockerd did not come up; see $D/dockerd.log" >&2
  tail -20 "$D/dockerd.log" >&2 || true
  return 1
}

stop() {
  [ -f "$D/pid" ] || return 0
  local pid
  pid="$(cat "$D/pid")"
  $SUDO kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  rm -f "$D/pid"
  # dockerd leaves its network-namespace bind mount (exec/netns/default) behind: unmount what is
  # left under our folder, or the clone cannot be removed.
  local m
  for m in $(awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r); do
    $SUDO umount -l "$m" 2>/dev/null || true
  done
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  host) running_host || echo "$OWN_HOST" ;;
  running) running_host ;;  # exit 1 when no engine runs
  own) echo "$OWN_HOST" ;;
  *) echo "usage: $0 install|start|stop|host|running|own" >&2; exit 2 ;;
esac
