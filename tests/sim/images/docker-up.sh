#!/usr/bin/env bash
# Make sure a Docker daemon answers on this machine: install docker.io when it is missing and start dockerd
# in the background when nothing runs it. A no-op when `docker info` already answers.
set -euo pipefail

log=${DOCKERD_LOG:-/var/log/accelops-dockerd.log}

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  echo "docker-up: installing docker.io and debootstrap from the distribution" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io debootstrap ca-certificates >/dev/null
fi

mkdir -p /etc/docker
if [ ! -f /etc/docker/daemon.json ]; then
  # No bridge, no iptables: every container runs with host networking and talks only to 127.0.0.0/8.
  echo '{"bridge": "none", "iptables": false, "ip-forward": false, "ip-masq": false}' >/etc/docker/daemon.json
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "docker-up: starting dockerd (log: $log)" >&2
  setsid dockerd >"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    exit 0
  fi
  sleep 1
done
echo "docker-up: dockerd did not answer within 60 s; last lines of $log:" >&2
tail -n 20 "$log" >&2 || true
exit 1
