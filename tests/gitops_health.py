"""The GitOps health checks of examples/gitops/health, run as Argo CD and Flux run them.

Argo CD runs a resource's `health.lua` with the object as the global `obj` and reads the `status` and
`message` of the table it returns (here in Lua 5.4 through `lupa`; Argo CD embeds gopher-lua, Lua 5.1: the
script uses nothing the two differ in). Flux's kustomize-controller evaluates a kind's `healthCheckExprs`
with the object's top-level fields as variables, in the order inProgress, failed, current; none true means
still in progress (RFC-0009); an expression that errors (a field not there yet) leaves the check waiting,
which is in progress as well. Here with `cel-python`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import celpy
import lupa
import yaml

HEALTH = Path(__file__).resolve().parent.parent / "examples" / "gitops" / "health"
LUA = HEALTH / "oasisevaluation-health.lua"
ARGOCD_KEY = "resource.customizations.health.oasis.evaluation.dev_OASISEvaluation"


def _lua_value(runtime: Any, value: Any) -> Any:
    if isinstance(value, dict):
        return runtime.table_from({k: _lua_value(runtime, v) for k, v in value.items()})
    if isinstance(value, list):
        return runtime.table_from([_lua_value(runtime, v) for v in value])
    return value


def argo_health(obj: dict[str, Any], script: str | None = None) -> tuple[str, str]:
    """(status, message) of Argo CD's health check of `obj`."""
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.globals().obj = _lua_value(runtime, obj)
    result = runtime.execute(script if script is not None else LUA.read_text())
    return str(result["status"]), str(result["message"])


@cache
def flux_exprs() -> dict[str, str]:
    """The OASISEvaluation entry of the example Kustomization's healthCheckExprs."""
    doc = yaml.safe_load((HEALTH / "flux-kustomization.yaml").read_text())
    (entry,) = [e for e in doc["spec"]["healthCheckExprs"] if e["kind"] == "OASISEvaluation"]
    return {k: entry[k] for k in ("inProgress", "failed", "current")}


def flux_health(obj: dict[str, Any]) -> str:
    """InProgress, Failed or Current, as Flux's CEL status reader judges `obj`."""
    env = celpy.Environment()
    activation = {k: celpy.json_to_cel(v) for k, v in obj.items()}
    for name, status in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        program = env.program(env.compile(flux_exprs()[name]))
        result = program.evaluate(activation)
        if isinstance(result, celpy.CELEvalError):
            return "InProgress"  # a field not there yet: Flux waits
        if bool(result):
            return status
    return "InProgress"
