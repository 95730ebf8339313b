"""One harness per module: a gateway and two real sandboxes (the agent's and a neighbour's) to attack."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
    with _started(cluster, tmp_path_factory, isolated=True) as started:
        yield started


@pytest.fixture(scope="module")
def unsandboxed(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainmentHarness]:
    """The same attempts without the sandbox (`isolation: none`): what the sandbox is there to stop."""
    with _started(cluster, tmp_path_factory, isolated=False) as started:
        yield started


@contextmanager
def _started(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, isolated: bool
) -> Iterator[ContainmentHarness]:
    """A harness whose invoking user has credentials at home (a canary ~/.kube/config and ~/.ssh)."""
    work = tmp_path_factory.mktemp("containment")
    user_home = tmp_path_factory.mktemp("user-home")
    (user_home / ".kube").mkdir()
    (user_home / ".kube" / "config").write_text("canary: production cluster credentials\n")
    (user_home / ".ssh").mkdir(mode=0o700)
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(user_home)
    try:
        with ContainmentHarness(
            cluster.kubeconfig,
            work,
            find_scenario(DEFAULT_SCENARIO),
            KUBECTLS["current"],
            etcd_ports=local_plane_ports(cluster.kubeconfig),
            prefix="cp" if isolated else "cq",
            isolated=isolated,
        ) as started:
            assert Path.home() == user_home
            yield started
    finally:
        if saved is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved
