"""Render the Helm chart with the real Helm engine (helm-python-sdk wraps Helm's Go SDK)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "oasis-operator"
RELEASE = "oasis"

Manifest = dict[str, Any]


def render(values: dict[str, Any] | None = None, namespace: str = "oasis-system") -> list[Manifest]:
    """Every object the chart renders offline (hooks included, NOTES.txt excluded), in template order."""
    with helm.Chart.load(CHART) as chart:
        files = chart.render(values=values, name=RELEASE, namespace=namespace, is_install=True)
    return [doc for name, text in sorted(files.items()) if name.endswith(".yaml") for doc in _docs(text)]


def render_notes(values: dict[str, Any] | None = None, namespace: str = "oasis-system") -> str:
    with helm.Chart.load(CHART) as chart:
        files = chart.render(values=values, name=RELEASE, namespace=namespace, is_install=True)
    return next(text for name, text in files.items() if name.endswith("NOTES.txt"))


def render_for_cluster(
    kubeconfig: Path, namespace: str, values: dict[str, Any] | None = None
) -> list[Manifest]:
    """Objects of a server-side dry-run install: the templates see the server's real capabilities.

    Helm leaves hooks out of a release manifest; `render` has them.
    """
    config = helm.Config(kubeconfig_path=kubeconfig, namespace=namespace, storage_driver="memory")
    try:
        with helm.Chart.load(CHART) as chart:
            release = config.install(chart, RELEASE, values, namespace=namespace, dry_run="server")
    finally:
        config.close()
    return list(_docs(str(release["manifest"])))


def chart_crds() -> list[Manifest]:
    """The CRDs as Helm loads them from the chart's crds/ directory (what `helm install` creates)."""
    with helm.Chart.load(CHART) as chart:
        return [doc for crd in chart.crds for doc in _docs(crd["data"])]


def _docs(text: str) -> list[Manifest]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind")]


def find(objects: list[Manifest], kind: str, suffix: str = "") -> Manifest:
    """The one object of `kind` whose name ends with `suffix`."""
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    assert len(matches) == 1, f"{kind} *{suffix}: {[o['metadata']['name'] for o in matches]}"
    return matches[0]


def kinds(objects: list[Manifest]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objects)


def rule_triples(rules: list[Manifest]) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) for every combination the rules grant (resourceNames kept apart)."""
    out = set()
    for rule in rules:
        named = "@" + ",".join(rule["resourceNames"]) if rule.get("resourceNames") else ""
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule["verbs"]:
                    out.add((group, resource + named, verb))
    return out
