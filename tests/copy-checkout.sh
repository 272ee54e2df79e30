#!/usr/bin/env bash
# Copy the checkout's files (tracked and new ones that git does not ignore, and that exist: a deleted file may still be
# in the index) to DEST, for tools that need the collection at .../ansible_collections/accelops/gpu outside the
# checkout.
# Usage: tests/copy-checkout.sh DEST
set -euo pipefail
dest=$(realpath -m "${1:?usage: tests/copy-checkout.sh DEST}")
cd "$(dirname "$0")/.."
mkdir -p "$dest"
git ls-files --cached --others --exclude-standard -z |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -C "$dest" -xf -
