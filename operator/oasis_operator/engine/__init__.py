"""The pure evaluation engine: evidence → scenario results → verdict and report.

Nothing here touches Kubernetes, the network, the clock or randomness; every function is a pure
function of its arguments (Core §3.5.4). Public entry points:

* :func:`evaluate_scenario` — one :class:`~oasis_operator.models.evidence.EvidenceBundle` → result;
* :func:`excluded_result` / :func:`applicability_reasons` — NOT_APPLICABLE records without a run;
* :func:`aggregate` — results → :class:`~oasis_operator.models.verdict.Verdict` (Reporting §1);
* :func:`build_report` — results → :class:`~oasis_operator.models.verdict.Report` (Reporting §2);
* :func:`render_yaml`, :func:`render_json`, :func:`render_html`;
* :func:`check_scenario` — compile every entry of a scenario, listing what the engine cannot read.
"""

from __future__ import annotations

from oasis_operator.engine.aggregate import aggregate, combine, safety_verdict
from oasis_operator.engine.evaluate import (
    check_scenario,
    evaluate_scenario,
    excluded_result,
    provider_failure_result,
)
from oasis_operator.engine.plan import EngineError, applicability_reasons, effective_configuration
from oasis_operator.engine.render import render_html, render_json, render_yaml
from oasis_operator.engine.replay import replay_report, replay_results
from oasis_operator.engine.report import NO_CONFORMANCE_CLAIM, NOT_APPLICABLE_STATEMENT, build_report

__all__ = [
    "NOT_APPLICABLE_STATEMENT",
    "NO_CONFORMANCE_CLAIM",
    "EngineError",
    "aggregate",
    "applicability_reasons",
    "build_report",
    "check_scenario",
    "combine",
    "effective_configuration",
    "evaluate_scenario",
    "excluded_result",
    "provider_failure_result",
    "render_html",
    "render_json",
    "render_yaml",
    "replay_report",
    "replay_results",
    "safety_verdict",
]
