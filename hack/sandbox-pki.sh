#!/usr/bin/env bash
# Make the certificates and kubeconfigs of the chart's sandbox control plane (sandbox.mode=controlPlane)
# and print the Secret that holds them.
#
#   hack/sandbox-pki.sh FULLNAME NAMESPACE [OUT_DIR] [API_PORT] [AUDIT_PORT] > sandbox-pki.yaml
#   kubectl -n NAMESPACE apply -f sandbox-pki.yaml      # or seal/encrypt it first for GitOps
#
# FULLNAME is the release's full name (release `oasis` of chart `oasis-operator` gives
# `oasis-oasis-operator`); the Secret is `FULLNAME-sandbox-pki`, the chart's default. Two CAs: one for the
# API server and its clients, one for etcd, which answers only the API server's client certificate.
# The operator's identity is in group system:masters of this dedicated, otherwise empty API server.
# The controller manager, the scheduler (scheduler.kubeconfig) and kwok (node-simulator.kubeconfig) each
# have their own.
# The agent gateway has its own (CN oasis:gateway, also system:masters: it impersonates the agents'
# ServiceAccounts and writes temporal stimuli), so the audit policy can drop the operator's own reads
# and keep the agent's (operator/oasis_operator/localcluster/audit.py); its kubeconfig is
# gateway.kubeconfig.
# The API server posts its audit to the operator (Service FULLNAME-audit, AUDIT_PORT, the chart's
# sandbox.controlPlane.auditWebhook.port): the operator serves it with a certificate of the first CA and
# accepts only client certificates of a third CA, which signs nothing but the API server's audit client.
# Keys stay in OUT_DIR (mode 0700); keep or delete them as your policy says.
set -euo pipefail

full=${1:?usage: $0 FULLNAME NAMESPACE [OUT_DIR] [API_PORT] [AUDIT_PORT]}
ns=${2:?usage: $0 FULLNAME NAMESPACE [OUT_DIR] [API_PORT] [AUDIT_PORT]}
out=${3:-$(mktemp -d)}
port=${4:-6443}
audit_port=${5:-8444}
days=825
api_svc="${full}-sandbox-apiserver"
etcd_svc="${full}-sandbox-etcd"
server="https://${api_svc}.${ns}.svc:${port}"
audit_svc="${full}-audit"

mkdir -p "$out" && chmod 700 "$out" && cd "$out"
umask 077

ca() {  # ca NAME CN
  openssl genrsa -out "$1.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days "$days" -out "$1.crt"
}

cert() {  # cert CA NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
  local ext="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=$4"
  if [[ -n "${5:-}" ]]; then ext+=$'\n'"subjectAltName=$5"; fi
  openssl genrsa -out "$2.key" 2048 2>/dev/null
  openssl req -new -key "$2.key" -subj "$3" -out "$2.csr"
  openssl x509 -req -in "$2.csr" -CA "$1.crt" -CAkey "$1.key" -CAcreateserial -days "$days" -sha256 \
    -extfile <(printf '%s\n' "$ext") -out "$2.crt" 2>/dev/null
  rm -f "$2.csr"
}

kubeconfig() {  # kubeconfig FILE CERT_NAME USER [SERVER]
  cat > "$1" <<YAML
apiVersion: v1
kind: Config
clusters:
  - name: sandbox
    cluster:
      server: ${4:-$server}
      certificate-authority-data: $(base64 -w0 < ca.crt)
users:
  - name: $3
    user:
      client-certificate-data: $(base64 -w0 < "$2.crt")
      client-key-data: $(base64 -w0 < "$2.key")
contexts:
  - name: sandbox
    context: {cluster: sandbox, user: $3}
current-context: sandbox
YAML
}

ca ca oasis-sandbox-ca
ca etcd-ca oasis-sandbox-etcd-ca
ca audit-ca oasis-sandbox-audit-ca
local_names="DNS:localhost,IP:127.0.0.1"
cert ca apiserver "/CN=kube-apiserver" serverAuth \
  "DNS:${api_svc},DNS:${api_svc}.${ns},DNS:${api_svc}.${ns}.svc,DNS:${api_svc}.${ns}.svc.cluster.local,${local_names}"
cert etcd-ca etcd-server "/CN=${etcd_svc}" serverAuth \
  "DNS:${etcd_svc},DNS:${etcd_svc}.${ns}.svc,DNS:${etcd_svc}.${ns}.svc.cluster.local,${local_names}"
cert etcd-ca etcd-client "/CN=kube-apiserver-etcd-client" clientAuth
cert ca controller-manager "/CN=system:kube-controller-manager" clientAuth
# The scheduler's own identity: the API server's bootstrap roles (system:kube-scheduler,
# system:volume-scheduler) are bound to it.
cert ca scheduler "/CN=system:kube-scheduler" clientAuth
# kwok plays every twin node's kubelet (node and pod status, leases, events, its Stages): the rights of all
# kubelets together, which no bootstrap role holds; the plane holds nothing but sandboxes. Its name is the
# local plane's (operator/oasis_operator/pki.py: KWOK_USER), which the evidence attributes to the cluster.
cert ca node-simulator "/O=system:masters/CN=system:node-simulator" clientAuth
cert ca operator "/O=system:masters/CN=oasis-operator" clientAuth
cert ca gateway "/O=system:masters/CN=oasis:gateway" clientAuth
cert ca audit-webhook "/CN=${audit_svc}" serverAuth \
  "DNS:${audit_svc},DNS:${audit_svc}.${ns},DNS:${audit_svc}.${ns}.svc,DNS:${audit_svc}.${ns}.svc.cluster.local,${local_names}"
cert audit-ca audit-client "/CN=kube-apiserver-audit" clientAuth
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
kubeconfig controller-manager.kubeconfig controller-manager system:kube-controller-manager
kubeconfig scheduler.kubeconfig scheduler system:kube-scheduler
kubeconfig node-simulator.kubeconfig node-simulator system:node-simulator
kubeconfig kubeconfig operator oasis-operator
kubeconfig gateway.kubeconfig gateway oasis-gateway
kubeconfig audit-webhook.kubeconfig audit-client kube-apiserver-audit \
  "https://${audit_svc}.${ns}.svc:${audit_port}/audit/events"

echo "apiVersion: v1"
echo "kind: Secret"
echo "metadata:"
echo "  name: ${full}-sandbox-pki"
echo "  namespace: ${ns}"
echo "  labels: {app.kubernetes.io/name: oasis-operator, app.kubernetes.io/component: sandbox-pki}"
echo "type: Opaque"
echo "data:"
for key in ca.crt apiserver.crt apiserver.key etcd-ca.crt etcd-server.crt etcd-server.key etcd-client.crt \
           etcd-client.key sa.key sa.pub controller-manager.kubeconfig scheduler.kubeconfig \
           node-simulator.kubeconfig kubeconfig gateway.kubeconfig audit-ca.crt audit-webhook.crt \
           audit-webhook.key audit-webhook.kubeconfig; do
  echo "  ${key}: $(base64 -w0 < "$key")"
done
echo "pki files in ${out}" >&2
