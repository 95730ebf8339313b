"""The evaluation matrix file: agents x models x repetitions of one evaluation, as `oasis matrix` reads it.

A matrix is a file, not a resource the API server serves: `oasis matrix render` turns it into plain
OASISEvaluation objects (what a GitOps repository commits or pipes to `kubectl apply`), `oasis matrix
apply` creates them, `oasis matrix status` follows them to one summary. Every evaluation is the
`template` spec with one agent of `agents`, given the environment of one of `models` (none: one
evaluation per agent), and `repetitions` as its `spec.repetitions` (pass^k over fresh sandboxes).

```yaml
apiVersion: oasis.evaluation.dev/v1alpha1
kind: EvaluationMatrix
metadata: {name: nightly, namespace: team-a, labels: {suite: nightly}}
queue: team-a            # Kueue LocalQueue: the label kueue.x-k8s.io/queue-name on every evaluation
priorityClass: nightly   # Kueue WorkloadPriorityClass: kueue.x-k8s.io/priority-class
repetitions: 3
template: {profile: {name: oasis-si}, scenarios: {categories: [boundary-enforcement]}, parallelism: 2}
agents:
  - name: careful
    agent: {command: {command: [oasis, agent, run, --policy, careful]}}
models:
  - name: small
    env: {OASIS_AGENT_MODEL: small-2026-11}
```
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.models.crd import AgentSpec

KIND = "EvaluationMatrix"
API_VERSION_TEXT = f"{API_GROUP}/{API_VERSION}"
MATRIX_LABEL = f"{API_GROUP}/matrix"
MATRIX_AGENT_LABEL = f"{API_GROUP}/matrix-agent"
MATRIX_MODEL_LABEL = f"{API_GROUP}/matrix-model"
# Kueue's own labels (kueue.x-k8s.io): the LocalQueue an evaluation is queued in, and its priority.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EVALUATIONS = 500
"""A matrix larger than this is refused: beyond it, a typo in a list multiplies into a flood of sandboxes."""

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MatrixMetadata(_Strict):
    """Names the matrix and where its evaluations go."""

    name: str = Field(min_length=1, max_length=40, pattern=DNS_LABEL)
    """Prefix of every evaluation's name (`<name>-<agent>[-<model>]`) and the value of its matrix label."""
    namespace: str | None = Field(default=None, max_length=63, pattern=DNS_LABEL)
    labels: dict[str, str] = Field(default_factory=dict)
    """Copied onto every evaluation."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """Copied onto every evaluation."""

    @field_validator("labels")
    @classmethod
    def _label_values(cls, labels: dict[str, str]) -> dict[str, str]:
        for key, value in labels.items():
            if len(value) > 63 or not _LABEL_VALUE.match(value):
                raise ValueError(f"label {key}={value!r}: a label value is at most 63 alphanumerics, '-_.'")
        return labels


class MatrixAgent(_Strict):
    """One agent of the matrix: a name for its evaluations and the OASISEvaluation `spec.agent`."""

    name: str = Field(min_length=1, max_length=63, pattern=DNS_LABEL)
    agent: AgentSpec


class MatrixModel(_Strict):
    """One model (or configuration) every agent is run with: environment variables given to the agent
    process (`command`) or container (`job`), over the agent's own."""

    name: str = Field(min_length=1, max_length=63, pattern=DNS_LABEL)
    env: dict[str, str] = Field(min_length=1)


class EvaluationMatrix(_Strict):
    """The whole file."""

    apiVersion: str  # noqa: N815 - the Kubernetes field name
    kind: Literal["EvaluationMatrix"]
    metadata: MatrixMetadata
    queue: str | None = Field(default=None, min_length=1, max_length=63, pattern=DNS_LABEL)
    """Kueue LocalQueue of every evaluation (in their namespace)."""
    priorityClass: str | None = Field(  # noqa: N815 - the Kubernetes field name
        default=None, min_length=1, max_length=63, pattern=DNS_LABEL
    )
    """Kueue WorkloadPriorityClass of every evaluation."""
    repetitions: int | None = Field(default=None, ge=1, le=20)
    """`spec.repetitions` of every evaluation (else the template's)."""
    template: dict[str, Any]
    """An OASISEvaluation spec without `agent`; checked whole once each agent is in it."""
    agents: list[MatrixAgent] = Field(min_length=1)
    models: list[MatrixModel] = Field(default_factory=list)

    @field_validator("apiVersion")
    @classmethod
    def _api_version(cls, value: str) -> str:
        if value != API_VERSION_TEXT:
            raise ValueError(f"is {value!r}; set it to {API_VERSION_TEXT!r}")
        return value
