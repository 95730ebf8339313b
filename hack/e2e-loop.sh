#!/usr/bin/env bash
# Run tests/e2e N times in a row (default 5) from a clean clone of a commit, and record each result.
#
#   hack/e2e-loop.sh [N] [COMMIT]        # COMMIT defaults to HEAD of this checkout
#
# The clone goes to a temporary directory with its own venv (pip install -e '.[dev]'); the Kubernetes
# binaries come from the shared cache (hack/install-deps.sh builds them once). Each run starts and stops
# its own local control plane (tests/cluster_fixtures.py). Results are appended, one line per run, to
# bench/results/e2e_loop.md of this checkout, with the machine's load average before the run.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
commit=$(git rev-parse "${2:-HEAD}")
here=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q --no-hardlinks "$here" "$work/repo"
git -C "$work/repo" checkout -q "$commit"
cd "$work/repo"
python3 -m venv .venv
.venv/bin/pip install -q -e '.[dev]' >/dev/null
results="$here/bench/results/e2e_loop.md"
if [ ! -f "$results" ]; then
  printf '# tests/e2e run repeatedly from a clean clone (hack/e2e-loop.sh)\n\n' > "$results"
  printf '| started (UTC) | commit | run | result | seconds | load (1/5/15 min) |\n|---|---|---|---|---|---|\n' >> "$results"
fi
failed=0
for i in $(seq 1 "$runs"); do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  begin=$(date +%s)
  if .venv/bin/pytest tests/e2e -q -p no:cacheprovider > "$work/run-$i.log" 2>&1; then
    result=passed
  else
    result="FAILED: $(grep -E '^(FAILED|ERROR)' "$work/run-$i.log" | head -3 | tr '\n' ' ')"
    failed=$((failed + 1))
    cp "$work/run-$i.log" "$here/bench/results/e2e_loop-run-$i-$(date -u +%H%M%S).log"
  fi
  summary=$(tail -1 "$work/run-$i.log")
  printf '| %s | %s | %d/%d | %s (%s) | %d | %s |\n' "$started" "${commit:0:10}" "$i" "$runs" "$result" \
    "$summary" "$(( $(date +%s) - begin ))" "$load" >> "$results"
  echo "run $i/$runs: $result"
done
exit $(( failed > 0 ))
