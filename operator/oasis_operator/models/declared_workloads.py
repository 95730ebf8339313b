"""Declared workloads: the pod-template vocabulary every workload kind shares, and the kinds whose pods the
sandbox's real controllers make (StatefulSet, DaemonSet, Job, CronJob).

`PodTemplateState` holds what a scenario author writes about a workload's pods (image, containers, env,
resources, volumes, health, labels, zone); `DeploymentState` (in `declared_state`) and the four kinds below
extend it, so a key means the same thing on every workload. Field names follow the other declared kinds
(snake_case); a toleration is written as in Kubernetes, because it is one.
"""

from __future__ import annotations

import re
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oasis_operator.models.declared_values import (
    DNS_LABEL,
    Env,
    KindModel,
    Mapping,
    PodState,
    Quantity,
    StrMap,
)


class Container(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str | None = None
    image: str | None = None
    env: Env | None = None
    resources: Mapping | None = None


class InitContainer(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    image: str | None = None
    status: str | None = None
    logs: str | None = None


class PodTemplateState(KindModel):
    """What every declared workload says about its pods (each kind adds its `status`: its health)."""

    reason: str | None = None  # why the pods are in that state (e.g. `Insufficient memory` when pending)
    image: str | None = None
    containers: list[Container] | None = None
    init_containers: list[InitContainer] | None = None
    env: Env | None = None
    restarts: int | None = Field(default=None, ge=0)
    memory_limit: Quantity | None = None
    resource_requests: StrMap | None = None
    resource_limits: StrMap | None = None
    affinity: str | Mapping | None = None
    volumes_from: list[str] | None = None  # configmap/<name>: mounted read-only at /etc/<name>
    volumes: list[str] | None = None  # PersistentVolumeClaim names: mounted at /data/<name>
    zone: str | None = None
    labels: StrMap | None = None
    annotations: StrMap | None = None


class Toleration(BaseModel):
    """A Kubernetes toleration, written as in a pod spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None  # noqa: N815 (the Kubernetes spelling)

    @model_validator(mode="after")
    def _consistent(self) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise ValueError("a toleration with operator Exists takes no value; drop value or use Equal")
        if not self.key and self.operator != "Exists":
            raise ValueError("a toleration without a key needs operator: Exists (it tolerates every taint)")
        if self.tolerationSeconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds applies only to effect: NoExecute")
        return self


class PlacedPodState(PodTemplateState):
    """A workload whose pods the plane's controllers make and its scheduler places (selector, tolerations)."""

    node_selector: StrMap | None = None
    tolerations: list[Toleration] | None = None


AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]


def _dns_label(value: str) -> str:
    if not DNS_LABEL.match(value):
        raise ValueError(
            f"{value!r} is not a valid name (lower-case letters, digits and '-', at most 63 characters)"
        )
    return value


class VolumeClaimTemplate(BaseModel):
    """One PersistentVolumeClaim per StatefulSet pod (`<name>-<statefulset>-<ordinal>`), mounted in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    storage: Quantity = "1Gi"
    access_modes: list[AccessMode] | None = None  # default [ReadWriteOnce]
    storage_class: str | None = None
    mount_path: str | None = None  # default /data/<name>

    @field_validator("name")
    @classmethod
    def _name_reads(cls, value: str) -> str:
        return _dns_label(value)

    @field_validator("access_modes")
    @classmethod
    def _some_mode(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("access_modes is empty; give at least one, e.g. [ReadWriteOnce]")
        return value

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"mount_path must be an absolute path, got {value!r}; write e.g. /data/{value}")
        return value


class StatefulSetState(PlacedPodState):
    status: PodState | None = None  # absent: running
    replicas: int | None = Field(default=None, ge=0)
    service_name: str | None = None  # the governing (headless) Service; default the StatefulSet's name
    volume_claim_templates: list[VolumeClaimTemplate] | None = None
    pod_management_policy: Literal["OrderedReady", "Parallel"] | None = None
    update_strategy: Literal["RollingUpdate", "OnDelete"] | None = None

    @field_validator("service_name")
    @classmethod
    def _service_reads(cls, value: str | None) -> str | None:
        return value if value is None else _dns_label(value)

    @model_validator(mode="after")
    def _claims(self) -> StatefulSetState:
        names = [t.name for t in self.volume_claim_templates or []]
        twice = sorted({n for n in names if names.count(n) > 1} | (set(names) & set(self.volumes or [])))
        if twice:
            raise ValueError(
                f"volume name(s) {twice} given twice (volume_claim_templates and volumes share one list of "
                "pod volumes); rename one"
            )
        return self


class DaemonSetState(PlacedPodState):
    status: PodState | None = None  # absent: running
    update_strategy: Literal["RollingUpdate", "OnDelete"] | None = None


# How a Job's pods end, besides the health states every workload shares.
JobHealth = Literal[PodState, "complete", "failed"]


class JobTemplateState(PlacedPodState):
    """A Job's spec: what a Job declares and what a CronJob's job template declares."""

    status: JobHealth | None = None  # absent: running; a Job's pods may also have ended
    command: list[str] | None = None
    args: list[str] | None = None
    restart_policy: Literal["Never", "OnFailure"] | None = None  # default Never, as `kubectl create job`
    completions: int | None = Field(default=None, ge=0)
    parallelism: int | None = Field(default=None, ge=0)
    completion_mode: Literal["NonIndexed", "Indexed"] | None = None
    backoff_limit: int | None = Field(default=None, ge=0)
    active_deadline_seconds: int | None = Field(default=None, ge=0)
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _indexed(self) -> JobTemplateState:
        if self.completion_mode == "Indexed" and self.completions is None:
            raise ValueError("completion_mode Indexed needs completions (how many indexes to run)")
        return self


class JobState(JobTemplateState):
    suspend: bool | None = None


# Cron schedule: five fields (minute hour day-of-month month day-of-week), a macro or `@every <duration>`,
# as the API server reads it (robfig/cron's standard parser).
CRON_MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_CRON_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
_EVERY = re.compile(r"^@every ((\d+(\.\d+)?)(ns|us|µs|ms|s|m|h))+$")  # a Go duration, as Kubernetes reads it
_CRON_ITEM = re.compile(r"^(?P<range>\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/(?P<step>\d+))?$")


def _cron_value(text: str, low: int, high: int, names: tuple[str, ...]) -> int | None:
    if text.isdigit():
        number = int(text)
        return number if low <= number <= high else None
    upper = text.upper()
    return names.index(upper) + (1 if names is _MONTHS else 0) if upper in names else None


def cron_problem(schedule: str) -> str | None:
    """Why Kubernetes would refuse `schedule` as a CronJob schedule, or None when it reads."""
    text = schedule.strip()
    if text.upper().startswith(("TZ=", "CRON_TZ=")):
        return "a time zone is not written in the schedule; give it as time_zone"
    if text.startswith("@every "):
        return (
            None if _EVERY.match(text) else f"cannot read {text!r} as an interval (write e.g. @every 1h30m)"
        )
    if text.startswith("@"):
        return None if text in CRON_MACROS else f"unknown macro {text!r}; write one of {sorted(CRON_MACROS)}"
    fields = text.split()
    if len(fields) != len(_CRON_FIELDS):
        return f"it has {len(fields)} field(s), not 5"
    for field, (what, low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        for item in field.split(","):
            match = _CRON_ITEM.match(item)
            if not match or (match["step"] is not None and int(match["step"]) == 0):
                return f"cannot read {item!r} in the {what} field"
            bounds = match["range"]
            if bounds in ("*", "?"):  # `?` reads as `*` in any field
                continue
            parts = bounds.split("-")
            values = [v for v in (_cron_value(p, low, high, names) for p in parts) if v is not None]
            if len(values) != len(parts):
                return f"{bounds!r} is out of range for the {what} field ({low}-{high})"
            if len(values) == 2 and values[0] > values[1]:
                return f"the range {bounds!r} in the {what} field ends before it begins"
    return None


class CronJobState(JobTemplateState):
    schedule: str | None = None
    time_zone: str | None = None
    suspend: bool | None = None  # the CronJob's: no new Jobs while true
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] | None = None
    starting_deadline_seconds: int | None = Field(default=None, ge=0)
    successful_jobs_history_limit: int | None = Field(default=None, ge=0)
    failed_jobs_history_limit: int | None = Field(default=None, ge=0)

    @field_validator("schedule")
    @classmethod
    def _schedule_reads(cls, value: str | None) -> str | None:
        problem = cron_problem(value) if value is not None else None
        if problem:
            raise ValueError(
                f"cannot read {value!r} as a cron schedule: {problem}; write five fields "
                "(minute hour day-of-month month day-of-week, e.g. '*/5 * * * *') or a macro such as @hourly"
            )
        return value

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"unknown time zone {value!r}; write a tz database name such as Etc/UTC or Europe/Paris"
                ) from None
        return value

    @model_validator(mode="after")
    def _scheduled(self) -> CronJobState:
        if self.schedule is None:
            raise ValueError("a cronjob needs schedule: a cron schedule such as '*/5 * * * *' or @hourly")
        return self
