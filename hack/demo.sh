#!/usr/bin/env bash
# `make demo`: local control plane + CRDs + operator + both reference agents (HTTP, sandboxed), then two
# OASISEvaluations of the whole SI profile. Follows progress, prints both verdicts and the HTML reports.
# Leaves everything running so you can look around; `make demo-down` stops it.
#   OASIS_DEMO_IDS='infra.safety.*'   run only scenarios whose id matches this glob (quicker)
#   OASIS_DEMO_TIMEOUT=3600           seconds to wait for both verdicts
set -euo pipefail
cd "$(dirname "$0")/.."

RUN_DIR="${OASIS_RUN_DIR:-$PWD/run/cluster}"
OP_DIR="$(dirname "$RUN_DIR")"
LIVENESS_PORT="${OASIS_DEMO_LIVENESS_PORT:-18080}"
METRICS_PORT="${OASIS_DEMO_METRICS_PORT:-19090}"
CAREFUL_PORT=18765
RECKLESS_PORT=18766
TIMEOUT="${OASIS_DEMO_TIMEOUT:-3600}"
NS=oasis-demo
OASIS=.venv/bin/oasis

echo "make demo: first installs what is missing (the plan below), then starts the control plane, the" >&2
echo "make demo: operator and two reference agents, and follows two evaluations to their verdicts" >&2
bash hack/install-deps.sh demo
# kubectl of the control plane's own release (built with it by hack/build-kube.sh).
KUBECTL="$(.venv/bin/python -c 'from oasis_operator.localcluster.release import default_bin_dir; print(default_bin_dir() / "kubectl")')"
$OASIS cluster --run-dir "$RUN_DIR" up
export KUBECONFIG="$RUN_DIR/kubeconfig"

$KUBECTL apply -f crds/
$KUBECTL wait --for condition=established --timeout=60s \
  crd/scenarios.oasis.evaluation.dev crd/oasisevaluations.oasis.evaluation.dev

# Background processes of an earlier demo in this run directory: stop them if they are still ours.
stop_pidfile() {
  local file="$1"
  if [ -f "$file" ]; then
    local pid; pid="$(cat "$file")"
    if grep -qs "oasis" "/proc/$pid/cmdline"; then kill "$pid" 2>/dev/null || true; sleep 1; fi
    rm -f "$file"
  fi
}
for name in operator agent-careful agent-reckless; do stop_pidfile "$OP_DIR/$name.pid"; done

nohup $OASIS operator --all-namespaces --liveness-port "$LIVENESS_PORT" --metrics-port "$METRICS_PORT" \
  --sandbox-audit-log "$RUN_DIR/audit.log" --data-dir "$OP_DIR/operator-data" \
  >"$OP_DIR/operator.log" 2>&1 &
echo $! >"$OP_DIR/operator.pid"
# Each reference agent runs the way an agent under evaluation should: in the sandbox command agents get
# (its own filesystem view without the run directory or your ~/.kube, its own PID namespace, user nobody
# when this runs as root). Copy this line for your own HTTP agent.
for policy in careful reckless; do
  port=$CAREFUL_PORT; [ "$policy" = reckless ] && port=$RECKLESS_PORT
  nohup $OASIS agent sandbox --read-only "$KUBECTL" --env OASIS_KUBECTL="$KUBECTL" -- \
    $OASIS agent serve --policy "$policy" --bind 127.0.0.1 --port "$port" \
    >"$OP_DIR/agent-$policy.log" 2>&1 &
  echo $! >"$OP_DIR/agent-$policy.pid"
done
.venv/bin/python - $CAREFUL_PORT $RECKLESS_PORT <<'PY'
import sys, time, urllib.request
for port in sys.argv[1:]:
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/identity-and-configuration", timeout=1).read()
            break
        except OSError:
            time.sleep(0.2)
    else:
        sys.exit(f"the reference agent on port {port} did not start; see its log next to the operator's")
PY

# A fresh pair of evaluations each time (a finished evaluation is a record; a new run is a new object).
$KUBECTL create namespace $NS --dry-run=client -o yaml | $KUBECTL apply -f -
$KUBECTL delete -n $NS oasisevaluation demo-careful demo-reckless --ignore-not-found --wait=true
$KUBECTL apply -n $NS -f samples/scenario.yaml
$KUBECTL wait -n $NS --for condition=Valid --timeout=60s scenario/cross-namespace-restart
if [ -n "${OASIS_DEMO_IDS:-}" ]; then
  .venv/bin/python - "$OASIS_DEMO_IDS" samples/evaluation.yaml >"$OP_DIR/evaluations.yaml" <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[2])))
for doc in docs:
    doc["spec"].setdefault("scenarios", {})["ids"] = [sys.argv[1]]
print(yaml.safe_dump_all(docs, sort_keys=False))
PY
else
  cp samples/evaluation.yaml "$OP_DIR/evaluations.yaml"
fi
$KUBECTL apply -n $NS -f "$OP_DIR/evaluations.yaml"

echo
echo "following both evaluations (Ctrl-C stops following; the evaluations go on)"
deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
  line="$($KUBECTL get oasisevaluations -n $NS -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.status.progress.done}/{.status.progress.total}   {end}' 2>/dev/null || true)"
  printf '%s  %s\n' "$(date +%H:%M:%S)" "$line"
  phases="$($KUBECTL get oasisevaluations -n $NS -o jsonpath='{.items[*].status.phase}')"
  running=0
  for p in $phases; do case "$p" in Completed|Aborted|Failed) ;; *) running=1 ;; esac; done
  [ "$(echo "$phases" | wc -w)" -lt 2 ] && running=1
  [ "$running" = 0 ] && break
  if [ "$(date +%s)" -gt "$deadline" ]; then echo "still running after ${TIMEOUT}s; see $OP_DIR/operator.log"; break; fi
  sleep 10
done

mkdir -p "$OP_DIR/reports"
echo
$KUBECTL get oasis -n $NS
for name in demo-careful demo-reckless; do
  echo
  echo "== $name"
  $KUBECTL get oasisevaluation -n $NS "$name" -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.reason}: {.message}{"\n"}{end}'
  $OASIS report get "$name" -n $NS --verdict | .venv/bin/python -c '
import sys, yaml
v = yaml.safe_load(sys.stdin)["verdict"]
print("safety:", v["safety"], "| aborted:", v["metadata"]["aborted"])
for f in v["safety_details"].get("failures", []):
    print("  FAIL", f.get("scenario_id"), "-", f.get("description", "")[:100])
cap = v.get("capability")
if cap:
    print("capability (tier %s, coverage %s):" % (cap["tier"], "complete" if cap["coverage"]["complete"] else "incomplete"))
    for dim, score in sorted(cap["core_dimensions"].items()):
        print("  %-16s %.2f" % (dim, score))
else:
    print("capability: not evaluated (phase 1 did not pass)")
' || echo "(no verdict: see the conditions above)"
  if $OASIS report get "$name" -n $NS -o html >"$OP_DIR/reports/$name.html" 2>/dev/null; then
    echo "HTML report: $OP_DIR/reports/$name.html"
  fi
done
echo
echo "operator log:  $OP_DIR/operator.log   (metrics http://127.0.0.1:$METRICS_PORT/metrics)"
echo "use it:        export KUBECONFIG=$KUBECONFIG"
echo "stop it:       make demo-down"
