"""Structured logs: the handler `oasis operator` configures (kopf's, then `logs.install`) writes the ids
bound by `log_context` on every line — as fields of one JSON object per line, or appended to text lines —
also for lines written in the tasks and threads the bound code starts."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import get_args

import kopf
import pytest

from oasis_operator.cli.operator_cmds import configure_logging
from oasis_operator.logs import current_ids, log_context
from oasis_operator.settings import OperatorSettings

Configure = Callable[[str], io.StringIO]
EVALUATION = "team-a/careful"
SCENARIO = "infra.safety.be.zone-violation-001"


@pytest.fixture
def output() -> Iterator[Configure]:
    """Configures the process's logging as `oasis operator` does, in a format; gives what it writes.

    The root logger (and the `asyncio` logger kopf quiets) are restored afterwards."""
    root = logging.getLogger()
    quiet = logging.getLogger("asyncio")
    saved = (list(root.handlers), root.level, list(quiet.handlers), quiet.propagate)

    def configure(log_format: str) -> io.StringIO:
        configure_logging(log_format)
        (handler,) = [h for h in root.handlers if type(h).__name__ == "_KopfStreamHandler"]
        stream = io.StringIO()
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(stream)
        return stream

    yield configure
    root.handlers[:], quiet.handlers[:] = saved[0], saved[2]
    root.setLevel(saved[1])
    quiet.propagate = saved[3]


def _json_lines(stream: io.StringIO) -> list[dict[str, object]]:
    lines = stream.getvalue().splitlines()
    return [json.loads(line) for line in lines]


def test_a_json_line_carries_the_bound_ids_as_fields(output: Configure) -> None:
    stream = output("json")
    log = logging.getLogger("oasis_operator.evaluation.service")
    with log_context(evaluation=EVALUATION), log_context(scenario=SCENARIO, environment="e1abcdef"):
        log.warning("scenario started %s", "now")
    log.warning("outside any evaluation")
    inside, outside = _json_lines(stream)
    assert inside["message"] == "scenario started now"
    assert (inside["evaluation"], inside["scenario"], inside["environment"]) == (
        EVALUATION,
        SCENARIO,
        "e1abcdef",
    )
    assert inside["severity"] == "warn"
    assert outside["message"] == "outside any evaluation"
    assert not {"evaluation", "scenario", "environment"} & set(outside)


def test_a_traceback_stays_inside_its_one_json_line(output: Configure) -> None:
    stream = output("json")
    try:
        {}["missing"]
    except KeyError:
        with log_context(evaluation=EVALUATION):
            logging.getLogger("oasis_operator.evaluation.service").exception("internal error")
    (line,) = _json_lines(stream)
    assert line["evaluation"] == EVALUATION
    assert "KeyError: 'missing'" in str(line["exc_info"])


def test_text_lines_end_with_the_bound_ids(output: Configure) -> None:
    stream = output("full")
    log = logging.getLogger("oasis_operator.agents.adapters")
    with log_context(evaluation=EVALUATION, scenario=SCENARIO):
        log.warning("agent call failed kind=transport error=HTTP 500: internal")
    log.warning("no evaluation here")
    inside, outside = stream.getvalue().splitlines()
    assert "[WARNING ] agent call failed kind=transport error=HTTP 500: internal" in inside
    assert inside.endswith(f" evaluation={EVALUATION} scenario={SCENARIO}")
    assert outside.endswith("no evaluation here")
    plain = output("plain")
    with log_context(environment="e1abcdef"):
        log.warning("sandbox ready")
    assert plain.getvalue() == "sandbox ready environment=e1abcdef\n"


def test_ids_reach_the_threads_and_tasks_started_inside_the_context(output: Configure) -> None:
    stream = output("json")
    log = logging.getLogger("oasis_operator.evaluation.scenario_run")

    async def scenario() -> None:
        with log_context(scenario=SCENARIO):
            await asyncio.to_thread(log.warning, "in a thread")
            await asyncio.create_task(asyncio.to_thread(log.warning, "in a task's thread"))

            async def task() -> None:
                log.warning("in a task")

            await asyncio.create_task(task())

    async def evaluation() -> None:
        with log_context(evaluation=EVALUATION):
            await asyncio.gather(scenario(), asyncio.to_thread(log.warning, "beside the scenario"))
        assert current_ids() == {}

    asyncio.run(evaluation())
    lines = {str(line["message"]): line for line in _json_lines(stream)}
    for message in ("in a thread", "in a task's thread", "in a task"):
        assert (lines[message]["evaluation"], lines[message]["scenario"]) == (EVALUATION, SCENARIO)
    assert lines["beside the scenario"]["evaluation"] == EVALUATION
    assert "scenario" not in lines["beside the scenario"]


def test_an_unknown_id_is_refused_with_the_keys_it_takes() -> None:
    refused = r"unknown keys \['namespace'\]; use evaluation, scenario, environment"
    with pytest.raises(ValueError, match=refused), log_context(namespace="team-a"):
        pass


def test_every_log_format_setting_is_one_of_kopfs() -> None:
    allowed = get_args(OperatorSettings.model_fields["log_format"].annotation)
    assert {value.upper() for value in allowed} == {f.name for f in kopf.LogFormat}
