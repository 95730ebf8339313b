"""The report in the formats CI systems read: JUnit XML, SARIF 2.1.0 and a Markdown job summary.

Each renderer is a pure function of a :class:`~oasis_operator.models.verdict.Report` and the name of the
evaluation it came from: same report, same bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from oasis_operator.engine.ci.common import CiContext, parse_report
from oasis_operator.engine.ci.junit import render_junit
from oasis_operator.engine.ci.markdown import render_markdown
from oasis_operator.engine.ci.sarif import render_sarif
from oasis_operator.models.verdict import Report

RENDERERS: dict[str, Callable[[Report, CiContext], str]] = {
    "junit": render_junit,
    "sarif": render_sarif,
    "markdown": render_markdown,
}
CI_FORMATS = tuple(RENDERERS)


def render_ci(report: Report, fmt: str, context: CiContext) -> str:
    """The report in one of :data:`CI_FORMATS`."""
    return RENDERERS[fmt](report, context)


__all__ = [
    "CI_FORMATS",
    "CiContext",
    "parse_report",
    "render_ci",
    "render_junit",
    "render_markdown",
    "render_sarif",
]
