# shellcheck shell=sh
# PID 1 of a simulated GPU node whose Slurm jobs are confined to their GPUs (molecule/slurm): it readies the
# container's own cgroups for slurmd's cgroup plugins, then becomes systemd.
#
# The container runs unprivileged with its own cgroup namespace (cgroupns_mode: private) and CAP_SYS_ADMIN, on a host
# with cgroup v1 controllers. Docker mounts the container's cgroups read-only; remounted read-write, they let systemd
# and slurmd create cgroups below the container's own, never elsewhere in the host's tree. Writing devices.deny or
# devices.allow takes CAP_SYS_ADMIN.
#
# Docker's device cgroup allows a container only a short list of devices, so opening /dev/nvidia<N> (major 195) is
# refused in the container before any job. Each GPU minor is allowed here, one by one: cgroup v1 removes a denied
# device from a list of exact entries, and a wildcard (c 195:*) would leave slurmd's `devices.deny` of one GPU without
# effect. Exceptions reach only the cgroups created after them, so this runs before systemd makes any.
# MIG capability files (nvidia-caps, major 236 on the simulated nodes) are allowed as a whole: slurmd must be able to
# allow them to a job, and they are not what the confinement check looks at.
# Nothing is fatal here: on a host without the v1 devices controller systemd still boots, unconfined.
for mount in $(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts); do
  mount -o remount,bind,rw "$mount" || echo "confined-init: cannot make $mount writable" >&2
done
devices=/sys/fs/cgroup/devices/devices.allow
if [ -w "$devices" ]; then
  for minor in $(seq 0 31) 255; do
    echo "c 195:$minor rwm" >"$devices" || echo "confined-init: cannot allow c 195:$minor" >&2
  done
  echo "c 236:* rwm" >"$devices" || echo "confined-init: cannot allow c 236:*" >&2
fi
exec /lib/systemd/systemd
