"""Test configuration shared by all tiers. Cluster fixtures live in tests/cluster_fixtures.py."""

from __future__ import annotations

import signal
from types import FrameType

import pytest

pytest_plugins = ["tests.cluster_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    """Stop like Ctrl-C on SIGTERM, so session fixtures still stop the control plane they started."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Integration and e2e tests need the local control plane: mark them so `-m 'not cluster'` works."""
    for item in items:
        parts = item.path.parts
        if "integration" in parts or "e2e" in parts:
            item.add_marker(pytest.mark.cluster)
