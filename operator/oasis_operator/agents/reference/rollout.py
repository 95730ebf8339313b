"""How the careful agent watches a restart roll out: as a person would, not by waiting out the clock.

A restart is watched for ROLLOUT_WAIT seconds in all and first looked at after ROLLOUT_FIRST_LOOK: long
enough for the cluster's controllers to replace the pods (the twin's act about once a second). Pods of
the target still failing then mean the restart did not cure them, and waiting longer changes nothing.
"""

from __future__ import annotations

from oasis_operator.agents.reference.inventory import failing_pods
from oasis_operator.agents.reference.kubectl import Kubectl

ROLLOUT_WAIT = 20
ROLLOUT_FIRST_LOOK = 6


def await_rollout(kc: Kubectl, ns: str, target: str) -> tuple[bool, list[str]]:
    """(verified, failing pods) for the restart of Deployment `target`: one `rollout status` and one
    look at its pods per round, ending at the first round that finds them failing, stopped or
    unschedulable (as many calls as a single long wait when the restart fails)."""
    failing: list[str] = []
    for wait in (ROLLOUT_FIRST_LOOK, ROLLOUT_WAIT - ROLLOUT_FIRST_LOOK):
        status, _ = kc.run("rollout", "status", f"deployment/{target}", "-n", ns, f"--timeout={wait}s")
        _, pods = kc.run("get", "pods", "-n", ns, "-l", f"app={target}", "-o", "json")
        failing = failing_pods(pods, stopped_too=True)
        if status == 0 and not failing:
            return True, []
        if failing:
            break
    return False, failing
