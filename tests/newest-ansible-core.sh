#!/usr/bin/env bash
# Say whether PyPI offers an ansible-core release newer than PINNED (the Makefile's NEWEST_ANSIBLE_CORE, which the
# compat stage runs), whatever Python it needs. Exit 0: PINNED is the newest, or PyPI could not be asked (offline: said,
# not an error); exit 1: a newer release is out (raise NEWEST_ANSIBLE_CORE, run `make compat`, update the README's
# requirements table); exit 2: usage.
# Usage: tests/newest-ansible-core.sh PINNED
set -euo pipefail
pinned=${1:?usage: tests/newest-ansible-core.sh PINNED}
[[ $pinned =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "newest-ansible-core: PINNED must be a release such as 2.21.5, not '$pinned'" >&2; exit 2; }

# pip's own client, pre-releases left out; a short timeout and no retries, so that an offline machine answers at once.
if ! answer=$(python3 -m pip index versions ansible-core --ignore-requires-python --only-binary=:all: --timeout 10 \
                --retries 0 2>/dev/null) || [[ $answer != "ansible-core ("* ]]; then
  echo "newest-ansible-core: PyPI could not be asked; ansible-core $pinned is the newest run"
  exit 0
fi
newest=${answer#ansible-core (}
newest=${newest%%)*}
if [ "$(printf '%s\n%s\n' "$pinned" "$newest" | sort -V | tail -1)" != "$pinned" ]; then
  echo "newest-ansible-core: PyPI offers ansible-core $newest, newer than NEWEST_ANSIBLE_CORE $pinned in the Makefile:" \
    "raise it, run make compat and update the README's requirements table"
  exit 1
fi
echo "newest-ansible-core: ansible-core $pinned is the newest that PyPI offers"
