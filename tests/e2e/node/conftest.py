"""The real-node tier (`make test-node`): a kubelet and containerd joined to the session's local plane.

Skipped, saying why, unless OASIS_TEST_NODE=1 (it needs root, Debian's containerd and CNI plugins, the
kubelet built by `hack/build-kube.sh --with-kubelet` and the images of hack/build-node-images.sh:
hack/test-node.sh installs and builds them) and the session's plane is the tests' own (not a cluster
given by OASIS_TEST_KUBECONFIG, which a node cannot join).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from oasis_operator.localcluster.node import NODE_IP, RealNode
from oasis_operator.localcluster.node_host import NodeError
from tests.cluster_fixtures import VENV_BIN, Cluster, stop_process, wait_for
from tests.e2e.node.controlplane import controlplane  # noqa: F401 - the session fixture
from tests.e2e.node.support import free_port, listening, spawn

ENABLE = "OASIS_TEST_NODE"


@pytest.fixture(scope="session")
def node(request: pytest.FixtureRequest) -> Iterator[RealNode]:
    if os.environ.get(ENABLE) != "1":
        pytest.skip(f"the real-node tier runs with {ENABLE}=1 (make test-node; docs/real-node.md)")
    cluster: Cluster = request.getfixturevalue("cluster")  # not started for a skipped tier
    if cluster.plane is None:
        pytest.skip("OASIS_TEST_KUBECONFIG names a cluster the tests did not start: no node can join it")
    real = RealNode(cluster.plane)
    try:
        real.check()
    except NodeError as exc:
        pytest.fail(f"{ENABLE}=1 but the node cannot start: {exc}")
    real.start()
    try:
        yield real
    finally:
        real.stop()


@pytest.fixture
def agents(node: RealNode, tmp_path: Path) -> Iterator[dict[str, int]]:
    """The careful and reckless reference agents, serving the HTTP protocol on the node's address."""
    ports = {policy: free_port(NODE_IP) for policy in ("careful", "reckless")}
    procs = [
        spawn(
            [
                str(VENV_BIN / "oasis"),
                "agent",
                "serve",
                "--policy",
                policy,
                "--bind",
                NODE_IP,
                "--port",
                str(port),
            ],
            tmp_path / f"{policy}.log",
        )
        for policy, port in ports.items()
    ]
    try:
        for port in ports.values():
            wait_for(partial(listening, port), timeout=30, what=f"an agent on {NODE_IP}:{port}")
        yield ports
    finally:
        for proc in procs:
            stop_process(proc)
