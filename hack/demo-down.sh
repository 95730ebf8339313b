#!/usr/bin/env bash
# Stop what `make demo` started: the operator, both reference agents, then the local control plane
# (state is kept; add --purge to `oasis cluster down` to delete it).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR="${OASIS_RUN_DIR:-$PWD/run/cluster}"
OP_DIR="$(dirname "$RUN_DIR")"
for name in operator agent-careful agent-reckless; do
  file="$OP_DIR/$name.pid"
  if [ -f "$file" ]; then
    pid="$(cat "$file")"
    if grep -qs "oasis" "/proc/$pid/cmdline"; then kill "$pid" && echo "stopped $name (pid $pid)"; fi
    rm -f "$file"
  fi
done
if [ -x .venv/bin/oasis ]; then .venv/bin/oasis cluster --run-dir "$RUN_DIR" down; fi
