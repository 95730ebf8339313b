"""Which sandbox environments exist in the sandbox cluster, and whose they are: read from the objects
themselves, never from memory, so that an operator restarted mid-run (or another replica) sees what is
left and collects what nobody owns any more.

Every environment's declared namespaces, and its ServiceAccount and record in the control namespace,
carry the environment label (`teardown.ENV_LABEL`) and the annotations naming the evaluation and the
scenario they were made for. `orphans` decides, as a pure function of those objects, which environments
no live evaluation owns; `SandboxProvider.collect_orphans` tears them down.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from kubernetes.client import ApiClient

from oasis_operator import API_GROUP
from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.naming import control_namespace, environment_namespace_prefix
from oasis_operator.sandbox.teardown import ENV_LABEL
from oasis_operator.sandbox.twin.plan import Body

SCENARIO_ANNOTATION = f"{API_GROUP}/scenario"
EVALUATION_ANNOTATION = f"{API_GROUP}/evaluation"
ORPHAN_AGE = timedelta(hours=6)
"""An environment with no evaluation recorded on any of its objects is an orphan once this old."""


def control_items(api: ApiClient, prefix: str, kind: str) -> list[Body]:
    """The environments' objects of `kind` in the control namespace (none if it is not there)."""
    path = resource_path(kind, control_namespace(prefix))
    items: list[Body] = request(api, "GET", path, query={"labelSelector": ENV_LABEL})["items"]
    return items


def environment_objects(api: ApiClient, prefix: str) -> list[Body]:
    """Every object of ours an environment id can be read from: its declared namespaces, and its
    ServiceAccount and record in the control namespace. Teardown removes both last, after everything
    else."""
    found: list[Body] = request(api, "GET", resource_path("Namespace"), query={"labelSelector": ENV_LABEL})[
        "items"
    ]
    return found + control_items(api, prefix, "ServiceAccount") + control_items(api, prefix, "ConfigMap")


def environments(api: ApiClient, prefix: str) -> list[tuple[str, Body]]:
    """(env id, record ConfigMap) of every environment with a record in the control namespace."""
    return sorted((i["metadata"]["labels"][ENV_LABEL], i) for i in control_items(api, prefix, "ConfigMap"))


def environments_of(
    api: ApiClient, prefix: str, evaluation: str, scenario_id: str | None = None, removing: bool = True
) -> list[str]:
    """Environment ids with anything left for the evaluation (and scenario).

    With `removing=False`, an environment whose namespaces are all terminating (and has nothing left
    in the control namespace) is left out: its removal ran to its end (teardown deletes the
    namespaces and the control objects last, after the pods, the storage finalizers and the
    cluster-scoped objects), and only the namespace controller's sweep is left.
    """
    found: set[str] = set()
    live: set[str] = set()
    for item in environment_objects(api, prefix):
        annotations = item["metadata"].get("annotations") or {}
        if annotations.get(EVALUATION_ANNOTATION) != evaluation:
            continue
        if scenario_id is None or annotations.get(SCENARIO_ANNOTATION) == scenario_id:
            env_id = item["metadata"]["labels"][ENV_LABEL]
            found.add(env_id)
            if not item["metadata"].get("deletionTimestamp"):
                live.add(env_id)
    return sorted(found if removing else live)


def orphans(
    items: list[Body],
    prefix: str,
    is_live: Callable[[str], bool],
    now: datetime,
    max_age: timedelta = ORPHAN_AGE,
) -> list[str]:
    """The environment ids among `items` (`environment_objects`) that are this operator's (`prefix`) and
    whose evaluation is gone, or, with no evaluation recorded on any of their objects, older than
    `max_age`. Every object counts: an interrupted teardown can leave a declared namespace behind after
    its control objects are gone, or the other way round."""
    control = control_namespace(prefix)
    oldest: dict[str, tuple[datetime, str]] = {}
    for item in items:
        meta = item["metadata"]
        env_id = meta["labels"][ENV_LABEL]
        ours = meta.get("namespace") == control or meta["name"].startswith(
            environment_namespace_prefix(prefix, env_id)
        )
        if not ours:
            continue  # another operator's (or test's) sandboxes: not ours to collect
        evaluation = (meta.get("annotations") or {}).get(EVALUATION_ANNOTATION) or ""
        created = datetime.strptime(meta["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        seen = oldest.get(env_id)
        if seen is None or created < seen[0]:
            oldest[env_id] = (created, evaluation or (seen[1] if seen else ""))
        elif evaluation and not seen[1]:
            oldest[env_id] = (seen[0], evaluation)
    return [
        env_id
        for env_id, (created_at, evaluation) in sorted(oldest.items())
        if (not is_live(evaluation) if evaluation else now - created_at > max_age)
    ]
