#!/usr/bin/env bash
# Installs Debian's redis-server when it is missing: the tests of the shared session
# store start a real redis-server on a free port (internal/sidecar/redistest), never an
# in-process fake. CI runs as root with apt reachable; elsewhere, install the package
# by hand (or set REDIS_SERVER to a redis-server binary).
set -euo pipefail

if [ -n "${REDIS_SERVER:-}" ] || command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "redis-server is missing and this is not root: run 'apt-get install -y redis-server' (or set REDIS_SERVER)" >&2
	exit 1
fi
echo "installing redis-server with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends redis-server >/dev/null
# The package starts a system service where an init system runs; the tests start
# their own servers and need none.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet redis-server 2>/dev/null; then
	systemctl stop redis-server || true
fi
command -v redis-server
