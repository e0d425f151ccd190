#!/usr/bin/env bash
# System packages from Debian: promtool and a Prometheus server for the alert and dashboard tests,
# tmux for driving `draftgen top` in a real terminal (tests/top).
set -euo pipefail
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 \
  && command -v tmux >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus tmux >/dev/null
command -v promtool
command -v tmux
