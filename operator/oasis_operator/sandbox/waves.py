"""In which order twin objects may be created: waves whose members can go to the API server at once.

Provisioning is a chain of round trips to the sandbox API server, and on a busy server each one waits
its turn; sending the independent ones together takes the twin's build from the sum of its round trips
to roughly the number of waves. The plan's order stays the contract wherever order matters:

- an object whose owner is in the plan comes in a later wave than its owner (it needs the owner's uid);
- an object of a kind that admission of other objects depends on (a ResourceQuota or LimitRange
  constrains the pods created after it, a ServiceAccount or PriorityClass must exist before the pods
  naming it, a CRD before its objects, ...) is a barrier: it gets a wave of its own, after everything
  before it in the plan and before everything after it. Only the kinds listed in `INDEPENDENT` are
  ever put together; any other kind is a barrier.

Nothing else orders them: each object goes in the first wave its owner and the last barrier before it
allow, so a plan of several Deployments (each followed by its ReplicaSet and Pods) takes three waves,
not three per Deployment. Within a wave objects keep their plan order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from oasis_operator.sandbox.twin import TwinObject

# Kinds no admission step of another twin object reads: creating them together changes nothing.
INDEPENDENT = frozenset(
    {
        "ConfigMap",
        "Secret",
        "Service",
        "Endpoints",
        "EndpointSlice",
        "Event",
        "Pod",
        "ReplicaSet",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "CronJob",
        "Ingress",
        "NetworkPolicy",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "Node",
        "Role",
        "RoleBinding",
        "Application",
    }
)


def creation_waves(objects: list[TwinObject]) -> list[list[TwinObject]]:
    """The objects cut into waves (see the module docstring); every object exactly once."""
    waves: list[list[TwinObject]] = []
    wave_of: dict[tuple[str, str | None, str], int] = {}
    floor = 0  # the first wave an object may join: the one after the last barrier

    def put(obj: TwinObject, index: int) -> None:
        while len(waves) <= index:
            waves.append([])
        waves[index].append(obj)
        wave_of[obj.key] = index

    for obj in objects:
        if obj.kind not in INDEPENDENT:
            barrier = len(waves)  # after everything before it
            put(obj, barrier)
            floor = barrier + 1
            continue
        index = floor
        if obj.owner is not None:
            owner = wave_of.get((obj.owner[0], obj.namespace, obj.owner[1]))
            if owner is not None:
                index = max(index, owner + 1)
        put(obj, index)
    return waves


def create_in_waves(objects: list[TwinObject], create: Callable[[TwinObject], object], at_once: int) -> None:
    """Call `create` on every object, wave by wave, up to `at_once` of a wave together; the first error
    is raised once the wave's other calls have ended (so a clean-up after it sees everything created)."""
    if at_once <= 1:
        for obj in objects:
            create(obj)
        return
    with ThreadPoolExecutor(at_once, thread_name_prefix="twin-create") as pool:
        for wave in creation_waves(objects):
            _together(pool, [functools.partial(create, obj) for obj in wave])


def run_together(calls: Sequence[Callable[[], object]], at_once: int) -> None:
    """Run independent calls up to `at_once` together; the first error is raised once all have ended."""
    if at_once <= 1 or len(calls) <= 1:
        for call in calls:
            call()
        return
    with ThreadPoolExecutor(min(at_once, len(calls)), thread_name_prefix="sandbox-create") as pool:
        _together(pool, calls)


def _together(pool: ThreadPoolExecutor, calls: Sequence[Callable[[], object]]) -> None:
    futures = [pool.submit(call) for call in calls]
    for future in futures:
        future.exception()  # wait for all of them before raising any
    for future in futures:
        future.result()
