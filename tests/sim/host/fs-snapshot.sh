# shellcheck shell=bash
# Lists every file, link and directory of the parts of a node that roles may change, with size, mode and
# modification time, into $SNAPSHOT. Two snapshots differ exactly when something there was written.
# Paths that do not exist on this node are skipped (find reports them and exits 1; that is expected).
set -euo pipefail
# Ansible's own remote temp dir (/root/.ansible/tmp) changes with every task and is left out.
{ find /etc /opt /usr /srv /var/lib/dpkg /var/lib/apt/extended_states /root -xdev -path /root/.ansible -prune -o \
    \( -type f -o -type l -o -type d \) -printf '%p %y %s %m %T@\n' 2>/dev/null || true; } | LC_ALL=C sort >"$SNAPSHOT"
test -s "$SNAPSHOT"
