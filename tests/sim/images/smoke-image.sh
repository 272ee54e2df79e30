#!/usr/bin/env bash
# Prove that a simulated-server image (tests/sim/images/build-image.sh) works as an Ansible target: boot it the way
# molecule does (systemd as PID 1, no --privileged, host network), wait for systemd to finish booting, check that
# no unit failed, that Python has what Ansible modules need, and that `docker stop` is fast.
#
#   tests/sim/images/smoke-image.sh accelops-sim/debian12:latest
#
# Prints one PASS/FAIL line per check and exits non-zero when any check fails.
# SMOKE_ALLOW_DEGRADED=1 accepts a `degraded` boot; SMOKE_APT=1 also runs `apt-get update` in the container
# (needs the Debian mirror); SMOKE_BOOT_TIMEOUT (seconds, default 60) bounds the wait for boot.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 IMAGE" >&2
  exit 2
fi
image=$1
boot_timeout=${SMOKE_BOOT_TIMEOUT:-60}
name=accelops-smoke-$$
failures=0

pass() { echo "PASS $*"; }
fail() {
  echo "FAIL $*"
  failures=$((failures + 1))
}
# Seconds since $1 (an $EPOCHREALTIME value), with one decimal.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
in_ct() { docker exec "$name" "$@"; }

finish() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  if [ "$failures" -eq 0 ]; then
    echo "smoke $image: all checks passed"
  else
    echo "smoke $image: $failures check(s) failed"
  fi
}
trap finish EXIT

if ! docker image inspect "$image" >/dev/null 2>&1; then
  fail "image $image exists (build it with tests/sim/images/build-image.sh)"
  exit 1
fi

# Exactly the container molecule creates: systemd needs its own /run and /run/lock tmpfs and the host's cgroup
# tree (read-only is enough); RTMIN+3 is systemd's "halt now" signal.
t0=$EPOCHREALTIME
if ! docker run -d --name "$name" --network host \
  --tmpfs /run --tmpfs /run/lock -v /sys/fs/cgroup:/sys/fs/cgroup:ro \
  --stop-signal RTMIN+3 "$image" /lib/systemd/systemd >/dev/null; then
  fail "container starts"
  exit 1
fi

# is-system-running answers `starting` while units are still being started, and fails to reach the bus in the
# first instants; stop waiting early when the container has died (systemd refused to run).
state=unknown
deadline=$((SECONDS + boot_timeout))
while [ "$SECONDS" -lt "$deadline" ]; do
  if [ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then
    state=exited
    break
  fi
  state=$(in_ct systemctl is-system-running 2>/dev/null) || true
  case $state in
    running | degraded) break ;;
  esac
  sleep 0.5
done
boot_s=$(since "$t0")

case $state in
  running) pass "boot: systemd reports running after ${boot_s} s" ;;
  degraded)
    if [ "${SMOKE_ALLOW_DEGRADED:-0}" = 1 ]; then
      pass "boot: systemd reports degraded after ${boot_s} s (allowed by SMOKE_ALLOW_DEGRADED)"
    else
      fail "boot: systemd reports degraded after ${boot_s} s"
    fi
    ;;
  exited)
    fail "boot: container exited; last lines of its log:"
    docker logs --tail 20 "$name" 2>&1 | sed 's/^/    /'
    exit 1
    ;;
  *)
    fail "boot: systemd still '${state:-unknown}' after ${boot_timeout} s; pending jobs:"
    in_ct systemctl list-jobs --no-pager 2>&1 | sed 's/^/    /' || true
    ;;
esac

if [ "$(in_ct cat /proc/1/comm 2>/dev/null)" = systemd ]; then
  pass "pid 1 is systemd"
else
  fail "pid 1 is systemd"
fi

failed_units=$(in_ct systemctl --failed --no-legend --plain 2>&1) || true
if [ -z "$failed_units" ]; then
  pass "no failed units"
else
  fail "failed units:"
  mapfile -t lines <<<"$failed_units"
  printf '    %s\n' "${lines[@]}"
fi

# Ansible's apt module imports python3-apt; roles build virtualenvs offline from ensurepip's wheels.
if out=$(in_ct python3 -c 'import apt, venv' 2>&1); then
  pass "python3 imports apt and venv"
else
  fail "python3 imports apt and venv: $out"
fi

if out=$(in_ct sh -c 'python3 -m venv /tmp/smoke-venv && /tmp/smoke-venv/bin/pip --version' 2>&1); then
  pass "python3 -m venv works offline: $out"
else
  fail "python3 -m venv works offline: $out"
fi

# become: sudo must exist and work for root without a password.
if in_ct sudo -n true >/dev/null 2>&1; then
  pass "sudo works"
else
  fail "sudo works"
fi

if [ "${SMOKE_APT:-0}" = 1 ]; then
  if out=$(in_ct apt-get -qq update 2>&1); then
    pass "apt-get update reaches the image's mirror"
  else
    fail "apt-get update reaches the image's mirror: $out"
  fi
fi

# Without the right stop signal systemd ignores SIGTERM and docker waits its 10 s before SIGKILL; every
# molecule destroy would pay that.
t0=$EPOCHREALTIME
docker stop "$name" >/dev/null
stop_s=$(since "$t0")
if awk -v s="$stop_s" 'BEGIN { exit !(s < 5) }'; then
  pass "docker stop takes ${stop_s} s"
else
  fail "docker stop takes ${stop_s} s (expected < 5 s)"
fi

[ "$failures" -eq 0 ]
