"""The sandbox's kubelets as kwok Stages: the pod lifecycle, and one Stage per declared fault.

The Stages themselves are data (`world/stages.yaml`); this module turns them into Stage objects of the
sandbox cluster: the lifecycle once per cluster (`ensure_lifecycle`), and for each of an environment's
faults (`sandbox.faults`) a Stage whose selector names exactly the faulty pods (`fault_stage`). Pure but
for the two functions that write (`ensure_lifecycle`, `apply_stages`, `delete_stages`).
"""

from __future__ import annotations

import copy
import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request
from oasis_operator.localcluster.kwok import STAGE_API_VERSION, STAGE_CRD

Body = dict[str, Any]
STAGES_FILE = Path(__file__).with_name("world") / "stages.yaml"
STAGES_PATH = f"/apis/{STAGE_API_VERSION}/stages"
# Marks the lifecycle Stages (and their version, so a changed lifecycle replaces the old one).
LIFECYCLE_LABEL = "sandbox.lifecycle"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@cache
def world() -> dict[str, Any]:
    """The parsed `world/stages.yaml`: `lifecycle` (a list) and `faults` (by name)."""
    data: dict[str, Any] = yaml.safe_load(STAGES_FILE.read_text())
    return data


def fault_names() -> tuple[str, ...]:
    return tuple(world()["faults"])


def _version() -> str:
    return hashlib.sha256(json.dumps(world()["lifecycle"], sort_keys=True).encode()).hexdigest()[:10]


def lifecycle_stages() -> list[Body]:
    """The Stage objects every pod of the sandbox goes through (weight 0: a fault's Stage wins)."""
    stages = []
    for entry in world()["lifecycle"]:
        spec: Body = {
            "resourceRef": {"apiGroup": "v1", "kind": entry.get("resource", "Pod")},
            "selector": copy.deepcopy(entry["selector"]),
            "weight": 0,
            "next": copy.deepcopy(entry["next"]),
        }
        if "delay" in entry:
            spec["delay"] = copy.deepcopy(entry["delay"])
        stages.append(
            {
                "apiVersion": STAGE_API_VERSION,
                "kind": "Stage",
                "metadata": {"name": entry["name"], "labels": {LIFECYCLE_LABEL: _version()}},
                "spec": spec,
            }
        )
    return stages


def expression(key: str, operator: str, values: list[str] | None = None) -> Body:
    """One kwok selector requirement: a jq `key` evaluated on the object, compared by `operator`."""
    found: Body = {"key": key, "operator": operator}
    if values is not None:
        found["values"] = list(values)
    return found


def fault_stage(
    name: str,
    fault: str,
    selects: list[Body],
    labels: dict[str, str],
    restarts: int = 0,
    init_container: str | None = None,
) -> Body:
    """The Stage for one fault of one environment: the template `fault` of `world/stages.yaml`, applied
    to the pods `selects` names (requirements added to the template's own), weight 1."""
    template = world()["faults"][fault]
    status = str(template["statusTemplate"]).replace("@RESTARTS@", str(max(restarts, 0)))
    if init_container is not None:
        status = status.replace("@INIT@", init_container)
    expressions = [
        expression(".metadata.deletionTimestamp", "DoesNotExist"),
        expression(".spec.nodeName", "Exists"),
        *selects,
        *copy.deepcopy(template.get("match") or []),
    ]
    spec: Body = {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {"matchExpressions": expressions},
        "weight": 1,
        "next": {"event": dict(template["event"]), "statusTemplate": status},
    }
    if "delay" in template:
        spec["delay"] = copy.deepcopy(template["delay"])
    return {
        "apiVersion": STAGE_API_VERSION,
        "kind": "Stage",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": spec,
    }


# --- writes --------------------------------------------------------------------------------------------
def ensure_crd(api: ApiClient) -> None:
    """The Stage CRD (the local plane applies it before kwok starts; another sandbox cluster may not)."""
    try:
        request(api, "POST", CRD_PATH, STAGE_CRD)
    except ApiException as exc:
        if exc.status != 409:
            raise


def ensure_lifecycle(api: ApiClient) -> None:
    """Create (or bring up to date) the lifecycle Stages; idempotent."""
    ensure_crd(api)
    apply_stages(api, lifecycle_stages())


def apply_stages(api: ApiClient, stages: list[Body]) -> None:
    """Create each Stage, replacing one of the same name."""
    for stage in stages:
        name = stage["metadata"]["name"]
        try:
            request(api, "POST", STAGES_PATH, stage)
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = request(api, "GET", f"{STAGES_PATH}/{name}")
            version = current["metadata"]["resourceVersion"]
            replaced = {**stage, "metadata": {**stage["metadata"], "resourceVersion": version}}
            request(api, "PUT", f"{STAGES_PATH}/{name}", replaced)


def delete_stage(api: ApiClient, name: str) -> bool:
    """Delete one Stage; False when it was not there."""
    try:
        request(api, "DELETE", f"{STAGES_PATH}/{name}")
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def delete_stages(api: ApiClient, label_selector: str) -> list[str]:
    """Delete the Stages the label selector names (none when the cluster has no Stage resource)."""
    try:
        items = request(api, "DELETE", STAGES_PATH, query={"labelSelector": label_selector})["items"]
    except ApiException as exc:
        if exc.status == 404:
            return []
        raise
    return [f"Stage/{item['metadata']['name']}" for item in items]
