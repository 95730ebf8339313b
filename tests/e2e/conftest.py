"""Fixtures for end-to-end tests: the operator as a process, watching the test's namespace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster_fixtures import Cluster
from tests.e2e.support import OperatorProcess


@pytest.fixture
def operator(cluster: Cluster, api: object, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """A running `oasis operator -n <namespace>`; stopped (SIGTERM) after the test, whatever happened."""
    process = OperatorProcess(cluster, namespace, tmp_path).start()
    try:
        yield process
    finally:
        process.stop()
