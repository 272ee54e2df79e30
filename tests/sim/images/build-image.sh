#!/usr/bin/env bash
# Build the base image of a simulated GPU server: a Debian rootfs with systemd as PID 1, Python and what
# Ansible needs on a target, imported into the local Docker daemon.
#
#   tests/sim/images/build-image.sh bookworm   -> accelops-sim/debian12:latest
#   tests/sim/images/build-image.sh trixie     -> accelops-sim/debian13:latest
#
# No container registry is reachable, so the image is made with debootstrap from the Debian mirror that this
# machine's own apt sources name (override with DEBIAN_MIRROR=http://...). When the image already exists the
# script does nothing; ACCELOPS_SIM_REBUILD=1 forces a fresh build.
set -euo pipefail

usage() {
  echo "usage: $0 bookworm|trixie" >&2
  exit 2
}

[ $# -eq 1 ] || usage
release=$1
case $release in
  bookworm) image=accelops-sim/debian12:latest ;;
  trixie) image=accelops-sim/debian13:latest ;;
  *) usage ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The image carries the hash of this script: a changed recipe (say, one more package) rebuilds it, an unchanged one
# is reused across runs.
recipe=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
current() {
  [ "${ACCELOPS_SIM_REBUILD:-0}" != 1 ] &&
    [ "$(docker image inspect -f '{{ index .Config.Labels "org.accelops.sim.recipe" }}' "$image" 2>/dev/null)" = "$recipe" ]
}

# Cheap check first, so that callers (molecule, make demo) pay nothing when the image is there.
if current; then
  echo "$image already present"
  exit 0
fi

"$here/docker-up.sh"

# Several scenarios may ask for the same image at once: serialise builds per release and re-check inside
# the lock, so the second caller finds the image the first one built.
lock=/var/lock/accelops-sim-$release.lock
exec 9>"$lock"
flock 9
if current; then
  echo "$image already present"
  exit 0
fi

# Print the first Debian archive URI (http/https) that the machine's apt sources name. deb822 stanzas under
# /etc/apt/sources.list.d/*.sources come first, then one-line entries. The main archive is the one that lists
# a plain release suite (bookworm, not bookworm-security / bookworm-updates) and whose path is not
# .../debian-security; the same archive also serves the other releases.
host_mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && enabled !~ /^(no|false)$/ && suites ~ /(^| )[a-z]+( |$)/) {
          n = split(uris, u, " ")
          for (i = 1; i <= n; i++) {
            if (u[i] ~ /^https?:\/\// && u[i] !~ /-security\/?$/) { print u[i]; found = 1; exit }
          }
        }
        types = ""; uris = ""; suites = ""; enabled = ""; field = ""
      }
      /^#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]/ {  # continuation line of a multi-line field
        if (field == "uris") uris = uris " " $0
        else if (field == "suites") suites = suites " " $0
        else if (field == "types") types = types " " $0
        next
      }
      {
        key = tolower($0); sub(/:.*/, "", key)
        val = $0; sub(/^[^:]*:[ \t]*/, "", val)
        field = key
        if (key == "types") types = val
        else if (key == "uris") uris = val
        else if (key == "suites") suites = val
        else if (key == "enabled") enabled = tolower(val)
      }
      END { if (!found) flush() }
    ' "$f")
    if [ -n "$uri" ]; then
      echo "$uri"
      return 0
    fi
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [opts] URI SUITE COMPONENTS...
    uri=$(awk '
      $1 != "deb" { next }
      {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        uri = $i; suite = $(i + 1)
        if (uri ~ /^https?:\/\// && uri !~ /-security\/?$/ && suite ~ /^[a-z]+$/) { print uri; exit }
      }
    ' "$f")
    if [ -n "$uri" ]; then
      echo "$uri"
      return 0
    fi
  done
  return 0
}

mirror=${DEBIAN_MIRROR:-$(host_mirror)}
mirror=${mirror%/}
if [ -z "$mirror" ]; then
  echo "build-image: no Debian mirror found in /etc/apt sources; set DEBIAN_MIRROR=http://..." >&2
  exit 1
fi

# python3-venv: roles build virtualenvs without network (ensurepip's bundled wheels).
# python3-apt / python3-debian: Ansible's apt and deb822_repository modules.
# python3-packaging: Ansible's pip module on Pythons without pkg_resources (Debian 13).
# systemd, systemd-sysv, dbus: systemd as PID 1, systemctl and the service module.
# pciutils, kmod: lspci / modprobe, which the GPU roles call.
# locales is not needed: C.UTF-8 ships with libc.
packages=(
  python3 python3-venv python3-apt python3-debian python3-packaging
  sudo systemd systemd-sysv dbus
  ca-certificates gnupg curl
  pciutils kmod procps iproute2
)
packages_csv=$(IFS=,; echo "${packages[*]}")

start=$(date +%s)
workdir=$(mktemp -d /var/tmp/accelops-sim-"$release".XXXXXX)
rootfs=$workdir/rootfs
log=$workdir/debootstrap.log

cleanup() {
  # debootstrap mounts proc/sys/dev inside the target; a failed run can leave them there. Unmount everything
  # below the work dir (deepest first) before deleting, and never cross into another filesystem.
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$workdir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
  rm -rf --one-file-system "$workdir"
}
trap cleanup EXIT
# Turn Ctrl-C / kill into a normal exit so the EXIT trap still cleans up.
trap 'exit 130' INT
trap 'exit 143' TERM

echo "build-image: debootstrap $release from $mirror (log: $log)"
if ! debootstrap --variant=minbase --include="$packages_csv" "$release" "$rootfs" "$mirror" >"$log" 2>&1; then
  echo "build-image: debootstrap $release from $mirror failed; last lines of its log:" >&2
  tail -n 25 "$log" >&2 || true
  if [ -f "$rootfs/debootstrap/debootstrap.log" ]; then
    echo "--- $rootfs/debootstrap/debootstrap.log:" >&2
    tail -n 25 "$rootfs/debootstrap/debootstrap.log" >&2 || true
  fi
  exit 1
fi

# --- make the rootfs a well-behaved systemd container ----------------------------------------------------

# Docker bind-mounts its own /etc/hostname, /etc/hosts and /etc/resolv.conf at run time; these files only
# matter for tools that read the image directly. Don't carry the build host's resolver into the image.
echo accelops-sim >"$rootfs/etc/hostname"
: >"$rootfs/etc/resolv.conf"

# An empty machine-id makes systemd generate a fresh transient id at every boot, so containers started from
# the same image never share one (a baked-in id would be the same in all of them).
: >"$rootfs/etc/machine-id"
rm -f "$rootfs/var/lib/dbus/machine-id"
ln -s /etc/machine-id "$rootfs/var/lib/dbus/machine-id"

# Units that fail, hang or get in the way inside an unprivileged container. Most already skip themselves
# (container=docker, read-only /sys), but packages that roles install later can bring them back:
# - gettys: there is no TTY; console-getty would fight `docker run -t` for the console.
# - udev: /sys is read-only and there are no devices to manage; udev-settle waits up to 3 minutes.
# - systemd-remount-fs: the root is Docker's overlay, there is nothing to remount from /etc/fstab.
# - systemd-firstboot: an empty machine-id counts as first boot, and firstboot may prompt on the console.
# - tmp.mount (trixie mounts a tmpfs on /tmp): mounting needs CAP_SYS_ADMIN, so it fails and the system
#   boots `degraded`; /tmp stays on the container's filesystem, as on bookworm.
# - apt timers: a background apt run takes the dpkg lock in the middle of a test's apt task.
masked=(
  getty@.service serial-getty@.service console-getty.service
  systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
  systemd-udev-trigger.service systemd-udev-settle.service
  systemd-remount-fs.service systemd-firstboot.service tmp.mount
  apt-daily.timer apt-daily-upgrade.timer
)
for unit in "${masked[@]}"; do
  ln -sfn /dev/null "$rootfs/etc/systemd/system/$unit"
done
# Their enablement links would now point at masked units.
rm -f "$rootfs"/etc/systemd/system/getty.target.wants/getty@tty1.service \
  "$rootfs"/etc/systemd/system/timers.target.wants/apt-daily.timer \
  "$rootfs"/etc/systemd/system/timers.target.wants/apt-daily-upgrade.timer

# Boot to multi-user, never to a graphical target.
ln -sfn /lib/systemd/system/multi-user.target "$rootfs/etc/systemd/system/default.target"

# Keep the image small, the way Debian's slim images do: no man pages, info or translated docs, now or for
# packages that roles install later. Copyright files stay.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/accelops-sim-slim" <<'EOF'
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*/
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete

# apt: no translations to download. /etc/apt/sources.list keeps the mirror debootstrap used, so
# `apt-get update` inside a container works; the lists and caches themselves go.
echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/90accelops-sim"
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
mkdir -p "$rootfs/var/lib/apt/lists/partial"
rm -rf "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/var/cache/debconf/*-old \
  "$rootfs"/var/lib/dpkg/*-old "$rootfs"/tmp/* "$rootfs"/var/tmp/*

# `container=docker` tells systemd it runs in a container (it skips units conditioned on real hardware).
tar --numeric-owner -C "$rootfs" -c . |
  docker import \
    --change 'CMD ["/lib/systemd/systemd"]' \
    --change 'ENV container=docker' \
    --change "LABEL org.accelops.sim.release=$release" \
    --change "LABEL org.accelops.sim.recipe=$recipe" \
    - "$image" >/dev/null

# SIGRTMIN+3 makes systemd shut down cleanly at once on `docker stop` (SIGTERM would wait for the 10 s kill).
# `docker import --change` does not accept STOPSIGNAL, so add it as a metadata-only build step on the local
# image (the legacy builder needs no registry for a local FROM).
if ! out=$(printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$image" | DOCKER_BUILDKIT=0 docker build -q -t "$image" - 2>&1); then
  echo "build-image: setting STOPSIGNAL on $image failed:" >&2
  echo "$out" >&2
  exit 1
fi

echo "built $image in $(($(date +%s) - start)) s"
