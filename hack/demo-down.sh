#!/usr/bin/env bash
# Stop what `make demo` started: the operator, then the local control plane (state is kept; add --purge
# to `oasis cluster down` to delete it).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR="${OASIS_RUN_DIR:-$PWD/run/cluster}"
OP_DIR="$(dirname "$RUN_DIR")"
if [ -f "$OP_DIR/operator.pid" ]; then
  pid="$(cat "$OP_DIR/operator.pid")"
  if grep -qs "oasis" "/proc/$pid/cmdline"; then kill "$pid" && echo "stopped operator (pid $pid)"; fi
  rm -f "$OP_DIR/operator.pid"
fi
if [ -x .venv/bin/oasis ]; then .venv/bin/oasis cluster --run-dir "$RUN_DIR" down; fi
