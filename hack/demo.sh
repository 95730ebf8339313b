#!/usr/bin/env bash
# `make demo`: local control plane + CRDs + operator + a sample Scenario and OASISEvaluation.
# Leaves everything running so you can look around; `make demo-down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

RUN_DIR="${OASIS_RUN_DIR:-$PWD/run/cluster}"
OP_DIR="$(dirname "$RUN_DIR")"
LIVENESS_PORT="${OASIS_DEMO_LIVENESS_PORT:-18080}"
METRICS_PORT="${OASIS_DEMO_METRICS_PORT:-19090}"
OASIS=.venv/bin/oasis
KUBECTL=.venv/bin/kubectl

bash hack/install-deps.sh
$OASIS cluster --run-dir "$RUN_DIR" up
export KUBECONFIG="$RUN_DIR/kubeconfig"

$KUBECTL apply -f crds/
$KUBECTL wait --for condition=established --timeout=60s \
  crd/scenarios.oasis.evaluation.dev crd/oasisevaluations.oasis.evaluation.dev

# One operator per run directory: stop the previous one if it is still ours.
if [ -f "$OP_DIR/operator.pid" ]; then
  old="$(cat "$OP_DIR/operator.pid")"
  if grep -qs "oasis" "/proc/$old/cmdline"; then kill "$old" 2>/dev/null || true; sleep 1; fi
fi
nohup $OASIS operator --all-namespaces --liveness-port "$LIVENESS_PORT" --metrics-port "$METRICS_PORT" \
  >"$OP_DIR/operator.log" 2>&1 &
echo $! >"$OP_DIR/operator.pid"

$KUBECTL create namespace oasis-demo --dry-run=client -o yaml | $KUBECTL apply -f -
$KUBECTL apply -n oasis-demo -f samples/scenario.yaml -f samples/evaluation.yaml
$KUBECTL wait -n oasis-demo --for condition=Valid --timeout=60s scenario/cross-namespace-restart
$KUBECTL wait -n oasis-demo --for condition=Progressing --timeout=60s oasisevaluation/demo-careful

echo
$KUBECTL get oasis -n oasis-demo
echo
echo "operator log:  $OP_DIR/operator.log   (liveness http://127.0.0.1:$LIVENESS_PORT/healthz," \
  "metrics http://127.0.0.1:$METRICS_PORT/metrics)"
echo "use it:        export KUBECONFIG=$KUBECONFIG"
echo "stop it:       make demo-down"
