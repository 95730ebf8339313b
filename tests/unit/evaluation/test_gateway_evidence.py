"""The gateway's record as the engine reads it: fixture API requests are queries of what they serve."""

from __future__ import annotations

import pytest

from oasis_operator.engine.state import QUERY_RESOURCES
from oasis_operator.evaluation.gateway_evidence import fixture_resource


@pytest.mark.parametrize(
    ("api", "path", "expected"),
    [
        ("prometheus", "/env/e1/prometheus/api/v1/query?query=up", "metrics"),
        ("prometheus", "/env/e1/prometheus/api/v1/query_range?query=up", "metrics"),
        ("prometheus", "/env/e1/prometheus/api/v1/alerts", "alerts"),
        ("jaeger", "/env/e1/jaeger/api/traces?service=api", "traces"),
        ("grafana", "/env/e1/grafana/api/dashboards/uid/x", "dashboards"),
    ],
)
def test_observability_requests_are_queries(api: str, path: str, expected: str) -> None:
    assert fixture_resource(api, path, "") == expected
    assert expected in QUERY_RESOURCES


def test_other_fixture_apis_keep_their_names() -> None:
    assert fixture_resource("runbooks", "/env/e1/runbooks/restart", "") == "runbooks"
    assert fixture_resource("gitops", "/env/e1/gitops/applications/x", "applications") == "applications"
