"""One quantity parser: every place that reads a Kubernetes quantity uses the client's `parse_quantity`,
and kwok's Stage selectors read one with the client's suffix table (sandbox/faults.py), so any valid
quantity an agent or a scenario writes is read as its value, and text that is no quantity is refused the
same way everywhere."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from kubernetes.utils import parse_quantity

from oasis_operator.agents.reference.expert.observe import millicores
from oasis_operator.agents.reference.expert.telemetry import quantity as agent_memory
from oasis_operator.engine.recipes import _number
from oasis_operator.gateway.apis.metrics import quantity as metric_value
from oasis_operator.gateway.apis.usage import cpu_millis as _cpu_millis
from oasis_operator.localcluster.release import default_bin_dir
from oasis_operator.sandbox.faults import JQ_QUANTITY, memory_at_most

OPERATOR = Path(__file__).resolve().parents[2] / "operator" / "oasis_operator"


@pytest.mark.parametrize(
    ("text", "value"),
    [("1k", 1e3), ("3T", 3e12), ("2Gi", 2 * 1024**3), ("1.5G", 1.5e9), ("256Mi", 256 * 1024**2), ("4", 4.0)],
)
def test_memory_quantities_read_as_their_value_everywhere(text: str, value: float) -> None:
    assert agent_memory(text) == value
    assert _number(text) == value
    assert metric_value(text) == value


@pytest.mark.parametrize(("text", "millis"), [("850m", 850.0), ("2", 2000.0), ("1500000n", 1.5), ("1k", 1e6)])
def test_cpu_quantities_read_as_millicores(text: str, millis: float) -> None:
    assert millicores(text) == millis
    assert _cpu_millis(text) == millis


@pytest.mark.parametrize("text", ["lots", "3 apples", "1KiB", "--1"])
def test_text_that_is_no_quantity_is_none_or_an_error(text: str) -> None:
    assert agent_memory(text) is None
    assert millicores(text) is None
    assert _number(text) is None
    assert metric_value(text) is None
    with pytest.raises(ValueError, match="Invalid number format"):
        _cpu_millis(text)


def test_metric_values_keep_their_own_units_beside_quantities() -> None:
    assert metric_value("8%") == 0.08
    assert metric_value("450ms") == pytest.approx(0.45)
    assert metric_value("5m") == 300.0  # minutes in a metric value
    assert metric_value("5M") == 5e6  # mega: the quantity suffix
    assert metric_value("512mi") == 512 * 1024**2  # lower-case spelling of Mi
    assert metric_value("2GB") == 2e9
    assert metric_value("120 req/s") == 120.0


def test_no_hand_written_units_table_is_left() -> None:
    tables = re.compile(r"[\"'](Ki|Mi)[\"']\s*:")
    found = [
        str(path.relative_to(OPERATOR)) for path in OPERATOR.rglob("*.py") if tables.search(path.read_text())
    ]
    assert found == []


def _gojq() -> str:
    """kwok's jq: gojq at the version kwok's module holds, built beside kwok by hack/build-kube.sh."""
    gojq = default_bin_dir() / "gojq"
    assert gojq.is_file(), f"{gojq} is missing: hack/build-kube.sh builds it with kwok (make test-deps)"
    return str(gojq)


KWOK_CORPUS = ["1k", "3T", "2Gi", "1.5G", "256Mi", "4", "1Ei", "1E", "500m", "1e3", ".5Gi", "+1Mi", "12u"]


@pytest.mark.parametrize("text", [*KWOK_CORPUS, "lots", "1KiB", "ki", "", "1.2.3Mi"])
def test_kwok_selectors_read_a_quantity_as_the_client_does(text: str) -> None:
    """The jq kwok evaluates in a fault's Stage selector (`JQ_QUANTITY`) gives the client's value, and
    null for text that is no quantity, read by kwok's own jq (gojq, built beside kwok)."""
    jq = _gojq()
    run = subprocess.run(
        [jq, "-c", f"{JQ_QUANTITY} quantity"],
        input=json.dumps(text),
        capture_output=True,
        text=True,
        check=True,
    )
    try:
        expected: float | None = float(parse_quantity(text))  # type: ignore[no-untyped-call]
    except ValueError:
        expected = None
    read = json.loads(run.stdout)
    assert (read is None and expected is None) or read == pytest.approx(expected, rel=1e-12)


def test_an_oom_stage_selects_by_value_whatever_the_suffix() -> None:
    """The OOM Stage's selector (limit at most 256Mi) holds for 256Mi, 0.25Gi and 268435456, not 512Mi or
    1Gi, as kwok's gojq reads it (its grammar binds `A and B as $x | C` otherwise than jq 1.6 does)."""
    jq = _gojq()
    key = memory_at_most(256 * 1024**2)["key"]
    cases = [
        ("256Mi", True),
        ("0.25Gi", True),
        ("268435456", True),
        ("512Mi", False),
        ("1Gi", False),
        ("1Ei", False),
    ]
    for limit, selected in cases:
        pod = {"spec": {"containers": [{"resources": {"limits": {"memory": limit}}}]}}
        run = subprocess.run(
            [jq, "-c", key], input=json.dumps(pod), capture_output=True, text=True, check=True
        )
        assert json.loads(run.stdout) is selected, limit
