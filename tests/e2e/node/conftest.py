"""The real-node tier (`make test-node`): a kubelet and containerd joined to the session's local plane.

Skipped, saying why, unless OASIS_TEST_NODE=1 (it needs root, Debian's containerd and CNI plugins, the
kubelet built by `hack/build-kube.sh --with-kubelet` and the images of hack/build-node-images.sh:
hack/test-node.sh installs and builds them) and the session's plane is the tests' own (not a cluster
given by OASIS_TEST_KUBECONFIG, which a node cannot join).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from oasis_operator.localcluster.node import RealNode
from oasis_operator.localcluster.node_host import NodeError
from tests.cluster_fixtures import Cluster

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
