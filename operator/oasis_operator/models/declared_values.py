"""The building blocks of declared state: value types every kind's model uses, and the two base models.

A Kubernetes kind is strict (every key known); a kind the gateway serves keeps keys its author names (a
metric series) beside its typed ones.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

Scalar = str | int | float | bool
StrMap = dict[str, Scalar]
Quantity = str | int | float
Age = str | int
Mapping = dict[str, Any]
Env = dict[str, Scalar | Mapping] | list[Mapping]

# Health states a workload or pod can be declared in (SI provider guide §1.2, plus the states the shipped
# scenarios use). An absent status means running.
PodState = Literal[
    "running",
    "degraded",
    "CrashLoopBackOff",
    "OOMKilled",
    "pending",
    "error",
    "elevated_error_rate",
    "rolling_update_in_progress",
    "ImagePullBackOff",
]


# Kinds an HPA scales and a PDB guards by their replicas (a DaemonSet's pods follow its nodes instead).
POD_SET_KINDS = {"deployment": "Deployment", "statefulset": "StatefulSet"}


def _pod_set_ref(value: str) -> str:
    kind, _, name = value.partition("/")
    if kind not in POD_SET_KINDS or not name:
        raise ValueError(f"target must be deployment/<name> or statefulset/<name>, got {value!r}")
    return value


def _object_ref(value: str) -> str:
    if not value.partition("/")[2]:
        raise ValueError(f"object must be <kind>/<name>, got {value!r}")
    return value


_CPU = re.compile(r"^\d+(\.\d+)?(%|m|n)?$")


def _percent(value: Quantity) -> Quantity:
    if not re.match(r"^\d+(\.\d+)?%?$", str(value).strip()):
        raise ValueError(f"cannot read {value!r} as a percentage (write e.g. 85% or 85)")
    return value


def _cpu(value: Quantity) -> Quantity:
    if not _CPU.match(str(value).strip()):
        raise ValueError(
            f"cannot read {value!r} as CPU use (write a percentage of one core, e.g. 95%, or 850m)"
        )
    return value


def _pod_count(value: int | str) -> int | str:
    if isinstance(value, int) and value < 0:
        raise ValueError(f"{value} is below 0; write a number of pods or a percentage such as 50%")
    if isinstance(value, str) and not (re.match(r"^\d+%$", value) and int(value[:-1]) <= 100):
        raise ValueError(f"cannot read {value!r} as pods; write a number of pods or a percentage such as 50%")
    return value


PodSetRef = Annotated[str, AfterValidator(_pod_set_ref)]  # deployment/<name> or statefulset/<name>
PodCount = Annotated[int | str, AfterValidator(_pod_count)]  # a number of pods or a percentage (`50%`)
Percent = Annotated[Quantity, AfterValidator(_percent)]  # a node's share of its allocatable CPU
CpuUse = Annotated[Quantity, AfterValidator(_cpu)]  # a pod's CPU: percent of one core, or a quantity
ObjectRef = Annotated[str, AfterValidator(_object_ref)]
RESERVED_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})
DNS_LABEL = re.compile(r"^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

_AGE = re.compile(r"^(\d+)\s*_?(s|m|h|d|seconds?|minutes?|hours?|days?)(_ago)?$")
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_age(text: str | int) -> timedelta:
    """`25m`, `15_minutes_ago`, `2h`, `30_minutes_ago` → a timedelta; anything else is an error."""
    match = _AGE.match(str(text).strip().lower())
    if not match:
        raise ValueError(f"cannot read {text!r} as an age (use e.g. 25m or 15_minutes_ago)")
    amount, unit = int(match.group(1)), match.group(2)
    unit = _UNIT.get(unit, unit if unit.endswith("s") else unit + "s")
    return timedelta(**{unit: amount})


class KindModel(BaseModel):
    """A Kubernetes kind: every key is known."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str | None = None
    served: ClassVar[bool] = False  # kept with the environment and served by the gateway (no object)


class ServedModel(KindModel):
    """A kind the gateway serves (no Kubernetes object): known keys typed, other keys kept."""

    model_config = ConfigDict(extra="allow", frozen=True)
    served: ClassVar[bool] = True
