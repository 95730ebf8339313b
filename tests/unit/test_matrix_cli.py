"""`oasis matrix`: a matrix file becomes its evaluations, errors name the field, the summary's exit code
is the most severe of its evaluations' (no cluster needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from oasis_operator.cli.main import main
from oasis_operator.cli.matrix import (
    MATRIX_SIZE_ANNOTATION,
    MatrixError,
    build_evaluations,
    expected_names,
    load_matrix,
    overall_code,
    row,
    table_text,
)
from oasis_operator.models.crd import OASISEvaluationSpec
from oasis_operator.models.matrix import (
    MATRIX_AGENT_LABEL,
    MATRIX_LABEL,
    MATRIX_MODEL_LABEL,
    PRIORITY_LABEL,
    QUEUE_LABEL,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "matrix" / "nightly.yaml"


def _matrix(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": "oasis.evaluation.dev/v1alpha1",
        "kind": "EvaluationMatrix",
        "metadata": {"name": "nightly", "namespace": "team-a", "labels": {"suite": "nightly"}},
        "queue": "team-a",
        "priorityClass": "nightly",
        "repetitions": 3,
        "template": {"profile": {"name": "software-infrastructure"}, "parallelism": 2},
        "agents": [
            {
                "name": "careful",
                "agent": {"command": {"command": ["agent-a"], "env": {"LOG": "1", "M": "own"}}},
            },
            {"name": "other", "agent": {"job": {"image": "registry.example/agent:1"}}},
        ],
        "models": [{"name": "small", "env": {"M": "small"}}, {"name": "large", "env": {"M": "large"}}],
    }
    document.update(changes)
    return document


def _build(document: dict[str, Any], namespace: str | None = None) -> list[dict[str, Any]]:
    return build_evaluations(load_matrix(yaml.safe_dump(document), "m.yaml"), namespace)


def test_agents_times_models_give_one_valid_evaluation_each_in_file_order() -> None:
    bodies = _build(_matrix())
    names = [b["metadata"]["name"] for b in bodies]
    assert names == [
        "nightly-careful-small",
        "nightly-careful-large",
        "nightly-other-small",
        "nightly-other-large",
    ]
    for body in bodies:
        assert body["apiVersion"] == "oasis.evaluation.dev/v1alpha1"
        assert body["kind"] == "OASISEvaluation"
        assert body["metadata"]["namespace"] == "team-a"
        OASISEvaluationSpec.model_validate(body["spec"])
        assert body["spec"]["repetitions"] == 3
        assert body["spec"]["parallelism"] == 2
        assert body["metadata"]["annotations"][MATRIX_SIZE_ANNOTATION] == "4"


def test_labels_carry_the_matrix_agent_model_and_kueue_queue_and_priority() -> None:
    labels = _build(_matrix())[1]["metadata"]["labels"]
    assert labels == {
        "suite": "nightly",
        MATRIX_LABEL: "nightly",
        MATRIX_AGENT_LABEL: "careful",
        MATRIX_MODEL_LABEL: "large",
        QUEUE_LABEL: "team-a",
        PRIORITY_LABEL: "nightly",
    }


def test_model_env_is_given_over_the_agents_own_for_command_and_job_agents() -> None:
    bodies = _build(_matrix())
    assert bodies[0]["spec"]["agent"]["command"]["env"] == {"LOG": "1", "M": "small"}
    assert bodies[3]["spec"]["agent"]["job"]["env"] == {"M": "large"}
    assert bodies[0]["spec"]["agent"]["name"] == "careful"


def test_without_models_one_evaluation_per_agent_without_model_label_or_queue() -> None:
    document = _matrix(models=[])
    del document["queue"], document["priorityClass"], document["repetitions"]
    bodies = _build(document)
    assert [b["metadata"]["name"] for b in bodies] == ["nightly-careful", "nightly-other"]
    labels = bodies[0]["metadata"]["labels"]
    assert MATRIX_MODEL_LABEL not in labels
    assert QUEUE_LABEL not in labels
    assert "repetitions" not in bodies[0]["spec"]


def test_the_command_line_namespace_takes_the_place_of_the_files() -> None:
    assert {b["metadata"]["namespace"] for b in _build(_matrix(), "team-b")} == {"team-b"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "OASISEvaluation"}, "kind is 'OASISEvaluation'; a matrix file has kind 'EvaluationMatrix'"),
        ({"apiVersion": "v1"}, "apiVersion: Value error, is 'v1'; set it to 'oasis.evaluation.dev/v1alpha1'"),
        ({"metadata": {"name": "Nightly"}}, "metadata.name: String should match pattern"),
        ({"agents": []}, "agents: List should have at least 1 item"),
        ({"repetitions": 21}, "repetitions: Input should be less than or equal to 20"),
        ({"queue": "Team A"}, "queue: String should match pattern"),
        ({"models": [{"name": "x", "env": {}}]}, "models[0].env: Dictionary should have at least 1 item"),
        ({"metadata": {"name": "n", "labels": {"a": "b c"}}}, "metadata.labels: Value error, label a='b c'"),
        ({"surprise": 1}, "surprise: Extra inputs are not permitted"),
    ],
)
def test_a_bad_matrix_file_names_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(MatrixError, match=r"^m\.yaml: ") as caught:
        _build(_matrix(**change))
    assert message in str(caught.value)


def test_a_bad_template_names_the_template_field_and_the_evaluation() -> None:
    document = _matrix(template={"profile": {"name": "software-infrastructure"}, "parallelism": 0})
    with pytest.raises(MatrixError) as caught:
        _build(document)
    assert str(caught.value).startswith(
        "nightly-careful-small: template.parallelism: Input should be greater"
    )


def test_a_bad_agent_names_the_agents_entry() -> None:
    document = _matrix(models=[])
    document["agents"][1] = {"name": "other", "agent": {"job": {"image": ""}}}
    with pytest.raises(MatrixError) as caught:
        _build(document)
    assert str(caught.value).startswith("m.yaml: agents[1].agent.job.image: String should have at least 1")


def test_the_template_may_not_hold_an_agent() -> None:
    document = _matrix(template={"profile": {"name": "software-infrastructure"}, "agent": {}})
    with pytest.raises(MatrixError, match=r"^template.agent: each evaluation's agent comes from `agents`"):
        _build(document)


def test_an_http_agent_cannot_take_a_models_env() -> None:
    document = _matrix()
    document["agents"][1] = {"name": "web", "agent": {"http": {"url": "http://agent:8080"}}}
    with pytest.raises(
        MatrixError, match=r"^agents\[1\].agent: an HTTP agent cannot be given models\[0\].env"
    ):
        _build(document)


def test_a_name_used_twice_is_refused() -> None:
    document = _matrix()
    document["models"].append({"name": "small", "env": {"M": "again"}})
    with pytest.raises(MatrixError, match=r"^models\[2\].name: 'small' is used twice"):
        _build(document)


def test_two_pairs_with_the_same_evaluation_name_are_refused() -> None:
    document = _matrix(models=[{"name": "b-c", "env": {"M": "1"}}, {"name": "c", "env": {"M": "2"}}])
    document["agents"] = [
        {"name": "a", "agent": {"job": {"image": "x"}}},
        {"name": "a-b", "agent": {"job": {"image": "x"}}},
    ]
    with pytest.raises(MatrixError, match="two pairs give the evaluation name 'nightly-a-b-c'"):
        _build(document)


def test_the_shipped_example_renders_through_the_command() -> None:
    bodies = build_evaluations(load_matrix(EXAMPLE.read_text(encoding="utf-8"), str(EXAMPLE)))
    assert len(bodies) == 4
    assert all(b["spec"]["repetitions"] == 3 for b in bodies)


def test_render_prints_a_stream_kubectl_apply_reads(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "render", "-f", str(EXAMPLE), "-n", "elsewhere"]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["metadata"]["namespace"] for d in documents] == ["elsewhere"] * 4


def test_render_of_a_bad_file_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(_matrix(agents=[])))
    assert main(["matrix", "render", "-f", str(path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("oasis matrix: ")
    assert "agents: List should have at least 1 item" in err
    assert "Traceback" not in err


def _item(name: str, phase: str | None, safety: str | None = None, aborted: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if phase:
        conditions = [
            {"type": "Ready", "status": "False", "reason": "Pending"},
            {"type": "Progressing", "status": "True", "reason": "Queued"},
        ]
        status = {"phase": phase, "summary": {"safety": safety, "aborted": aborted},
                  "progress": {"done": 2, "total": 4}, "conditions": conditions}  # fmt: skip
    labels = {MATRIX_AGENT_LABEL: "careful", MATRIX_MODEL_LABEL: "small"}
    return {"metadata": {"name": name, "labels": labels, "annotations": {MATRIX_SIZE_ANNOTATION: "3"}},
            "status": status}  # fmt: skip


@pytest.mark.parametrize(
    ("states", "code"),
    [
        ([("Completed", "PASS", False), ("Completed", "PASS", False)], 0),
        ([("Completed", "PASS", False), ("Completed", "FAIL", False), ("Failed", None, False)], 1),
        ([("Completed", "PASS", False), ("Aborted", "PROVIDER_FAILURE", True), ("Failed", None, False)], 2),
        ([("Completed", "NOT_EVALUATED", False), ("Failed", None, False)], 3),
        ([("Completed", "PASS", False), ("Running", None, False)], 3),
        ([("Completed", "PASS", False), ("Completed", "NOT_EVALUATED", False)], 4),
    ],
)
def test_the_matrix_exits_with_its_most_severe_evaluation(
    states: list[tuple[str, str | None, bool]], code: int
) -> None:
    rows = [row(f"e{n}", _item(f"e{n}", *state)) for n, state in enumerate(states)]
    assert overall_code(rows) == code


def test_a_missing_evaluation_reads_as_no_verdict_not_as_a_smaller_matrix() -> None:
    items = [_item("nightly-a", "Completed", "PASS"), _item("nightly-b", "Completed", "PASS")]
    names = expected_names(items, "nightly")
    assert names == ["nightly-a", "nightly-b", "nightly-<missing-1>"]
    found = {i["metadata"]["name"]: i for i in items}
    rows = [row(n, found.get(n)) for n in names]
    assert rows[2].phase == "Missing"
    assert overall_code(rows) == 3


def test_the_table_shows_agent_model_phase_safety_done_and_the_progressing_reason() -> None:
    text = table_text([row("nightly-careful-small", _item("nightly-careful-small", "Pending"))])
    header, line = text.splitlines()
    assert header.split() == ["NAME", "AGENT", "MODEL", "PHASE", "SAFETY", "DONE", "REASON"]
    assert line.split() == [
        "nightly-careful-small",
        "careful",
        "small",
        "Pending",
        "-",
        "2/4",
        "Queued",
    ]


def test_a_finished_evaluation_shows_its_ready_reason() -> None:
    item = _item("e", "Completed", "PASS")
    item["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "reason": "VerdictReady"},
        {"type": "Progressing", "status": "False", "reason": "Completed"},
    ]
    assert row("e", item).reason == "VerdictReady"
