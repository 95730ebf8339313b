"""What each process of the local plane is started with: pure functions of its certificates and ports."""

from __future__ import annotations

from pathlib import Path

from oasis_operator.localcluster.audit import apiserver_audit_args
from oasis_operator.pki import Pki

# The controller manager's default set (`*`: deployment, replicaset, statefulset, daemonset, job, cronjob,
# ttl-after-finished, endpoints and endpointslices, disruption, pod GC, node lifecycle, garbage collector,
# namespace, service accounts, PVC/PV protection, ...) less the horizontal pod autoscaler: the sandbox
# serves no metrics.k8s.io API for it to read, so it would only overwrite the twin's declared HPA status
# with FailedGetResourceMetric.
CONTROLLERS = "*,-horizontal-pod-autoscaler-controller"
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
# Each environment's pods go only to its own nodes: PodNodeSelector adds the namespace's node selector
# to every pod created in it (the agent's too) and PodTolerationRestriction its tolerations of the
# environment's node taint (sandbox.isolation).
ENABLED_ADMISSION = "PodNodeSelector,PodTolerationRestriction"
# The label of a real node (a kubelet with containerd, `localcluster.node`): kwok leaves the nodes that
# carry it alone, on every plane and in the chart's sandbox plane, so a real node is never played twice.
REAL_NODE_LABEL = "oasis.evaluation.dev/real-node"


def etcd_args(pki: Pki, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client = f"https://127.0.0.1:{client_port}"
    peer = f"https://127.0.0.1:{peer_port}"
    return [
        "--name=local",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
        # Mutual TLS on both ports: a client must present a certificate from etcd's own CA.
        f"--cert-file={pki.etcd_cert}",
        f"--key-file={pki.etcd_key}",
        f"--trusted-ca-file={pki.etcd_ca_cert}",
        "--client-cert-auth",
        f"--peer-cert-file={pki.etcd_cert}",
        f"--peer-key-file={pki.etcd_key}",
        f"--peer-trusted-ca-file={pki.etcd_ca_cert}",
        "--peer-client-cert-auth",
        "--quota-backend-bytes=2147483648",
        "--log-level=warn",
    ]


def apiserver_args(
    pki: Pki, etcd_client_port: int, api_port: int, policy_file: Path, audit_log: Path
) -> list[str]:
    return [
        f"--etcd-servers=https://127.0.0.1:{etcd_client_port}",
        f"--etcd-cafile={pki.etcd_ca_cert}",
        f"--etcd-certfile={pki.etcd_client_cert}",
        f"--etcd-keyfile={pki.etcd_client_key}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={api_port}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=RBAC",
        "--endpoint-reconciler-type=none",
        f"--enable-admission-plugins={ENABLED_ADMISSION}",
        *apiserver_audit_args(policy_file, audit_log),
        "--v=1",
    ]


def controller_manager_args(pki: Pki, kubeconfig: Path) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--controllers={CONTROLLERS}",
        "--leader-elect=false",
        "--secure-port=0",
        f"--service-account-private-key-file={pki.sa_key}",
        f"--root-ca-file={pki.ca_cert}",
        "--concurrent-gc-syncs=5",
        # kwok renews every node's Lease; a node whose kubelet stops (a declared NotReady) is noticed
        # within the grace period, as on a cluster.
        "--node-monitor-grace-period=40s",
        "--v=1",
    ]


def scheduler_args(kubeconfig: Path) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--secure-port=0",
        "--v=1",
    ]


def apiserver_kubelet_args(pki: Pki) -> list[str]:
    """How the local plane's API server reaches a real node's kubelet (logs, exec, port-forward through the
    API): with its own client certificate, verifying the kubelet's serving certificate by the plane's CA,
    at the node's InternalIP (the only address a real node reports that resolves here; kwok's nodes serve
    no kubelet API at all). Not in the chart's sandbox plane, which runs no real node."""
    return [
        f"--kubelet-client-certificate={pki.kubelet_client_cert}",
        f"--kubelet-client-key={pki.kubelet_client_key}",
        f"--kubelet-certificate-authority={pki.ca_cert}",
        "--kubelet-preferred-address-types=InternalIP",
    ]


def kwok_args(kubeconfig: Path) -> list[str]:
    """kwok plays the kubelet of every Node but a real one (only the twin creates Nodes; `oasis cluster up
    --node` adds a real kubelet's, labelled REAL_NODE_LABEL); its Stages come from the API
    server (`sandbox.kwok`: the lifecycle and each environment's faults), and it serves no kubelet API
    (no exec, logs or port-forward on this machine: the gateway answers those)."""
    return [
        f"--kubeconfig={kubeconfig}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-label-selector=!{REAL_NODE_LABEL}",
        "--enable-crds=Stage",
        f"--cidr={POD_CIDR}",
        "--node-ip=10.240.0.1",
        "--node-lease-duration-seconds=40",
    ]
