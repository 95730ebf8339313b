"""A minimal Argo CD Application CRD, so `kubectl get applications` works in the sandbox cluster."""

from __future__ import annotations

from typing import Any

ARGO_APPLICATION_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "applications.argoproj.io"},
    "spec": {
        "group": "argoproj.io",
        "scope": "Namespaced",
        "names": {
            "kind": "Application",
            "listKind": "ApplicationList",
            "plural": "applications",
            "singular": "application",
            "shortNames": ["app", "apps"],
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Sync Status", "type": "string", "jsonPath": ".status.sync.status"},
                    {"name": "Health Status", "type": "string", "jsonPath": ".status.health.status"},
                ],
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}
