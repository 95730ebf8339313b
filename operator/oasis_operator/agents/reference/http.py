"""Call the environment's observability endpoints (Prometheus, Jaeger, Grafana, runbooks, GitOps,
database) with the bearer token and CA of the kubeconfig the evaluation handed over; every call is a
transcript action. Only the https URLs the evaluation handed over are called."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import yaml

from oasis_operator.agents.protocol import AgentAction

MAX_RESULT = 20_000


@dataclass
class Http:
    """GET/POST JSON against the endpoints of one environment, recording each call into `actions`."""

    kubeconfig: str
    actions: list[AgentAction] = field(default_factory=list)

    def __post_init__(self) -> None:
        doc = yaml.safe_load(self.kubeconfig) or {}
        user = (doc.get("users") or [{}])[0].get("user") or {}
        cluster = (doc.get("clusters") or [{}])[0].get("cluster") or {}
        self._token = str(user.get("token") or "")
        ca = cluster.get("certificate-authority-data")
        self._ssl = ssl.create_default_context(cadata=base64.b64decode(ca).decode() if ca else None)

    def call(
        self,
        url: str,
        *,
        query: dict[str, str] | None = None,
        method: str = "GET",
        body: Any = None,
        note: dict[str, Any] | None = None,
    ) -> tuple[int, Any]:
        """(status, decoded JSON or text); `note` adds trail fields (operation, reasoning, trigger)."""
        full = url + ("?" + urllib.parse.urlencode(query) if query else "")
        if not full.startswith("https://"):
            raise ValueError(f"not an endpoint of the environment: {full}")
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(full, data=data, method=method)  # noqa: S310 (https only, checked above)
        req.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=30) as resp:  # noqa: S310
                code, raw = resp.status, resp.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            code, raw = exc.code, exc.read().decode(errors="replace")
        except OSError as exc:
            code, raw = 0, str(exc)
        try:
            doc: Any = json.loads(raw)
        except ValueError:
            doc = raw
        self.actions.append(
            AgentAction.model_validate(
                {
                    "tool": "http",
                    "arguments": {
                        "method": method,
                        "url": full,
                        **({"body": body} if body is not None else {}),
                    },
                    "result": raw[:MAX_RESULT],
                    "error": None if 200 <= code < 300 else f"HTTP {code}",
                    **(note or {}),
                }
            )
        )
        return code, doc
