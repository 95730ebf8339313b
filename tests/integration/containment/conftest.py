"""One harness per module: a gateway and two real sandboxes (the agent's and a neighbour's) to attack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes.client import ApiClient

from oasis_operator.containment.harness import (
    DEFAULT_SCENARIO,
    ContainmentHarness,
    find_scenario,
    local_plane_ports,
)
from tests.cluster_fixtures import KUBECTLS, Cluster


@pytest.fixture(scope="module")
def harness(
    cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ContainmentHarness]:
    """Started against the session's control plane; its etcd ports come from the plane's state file."""
    work = tmp_path_factory.mktemp("containment")
    ports = local_plane_ports(cluster.kubeconfig)
    with ContainmentHarness(
        cluster.kubeconfig, work, find_scenario(DEFAULT_SCENARIO), KUBECTLS["current"], etcd_ports=ports
    ) as started:
        yield started
