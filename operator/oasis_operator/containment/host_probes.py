"""What a command agent could take from the operator's machine itself: each attempt must be refused.

Files of the local control plane, the gateway and other agents, the invoking user's credentials, other
processes' environments, and every local TCP port.
"""

from __future__ import annotations

from pathlib import Path

from oasis_operator.containment.acts import files, processes, scan
from oasis_operator.containment.probe import Probe, Record

HOST_PROBES: list[Probe] = [
    Probe(
        "run-dir-keys",
        "read the local control plane's run directory: admin kubeconfig and every key",
        ("refused",),
        files(reads=lambda h: list(h.run_dir_files)),
    ),
    Probe(
        "gateway-data",
        "list the gateway's data directory, read both records and its serving key, open its own record "
        "for writing",
        ("refused",),
        files(
            reads=lambda h: [h.gateway_dir, h.own_record, h.neighbour_record, *h.gateway_keys],
            writes=lambda h: [h.own_record, h.neighbour_record],
        ),
    ),
    Probe(
        "neighbour-kubeconfig",
        "read another agent's kubeconfig (its token) from that agent's home",
        ("refused",),
        files(reads=lambda h: [h.neighbour_kubeconfig, str(Path(h.neighbour_kubeconfig).parent)]),
    ),
    Probe(
        "user-credentials",
        "read the invoking user's ~/.kube/config, ~/.aws/credentials and ~/.ssh",
        ("refused",),
        files(reads=lambda h: list(h.user_files)),
    ),
    Probe(
        "process-environ",
        "read /proc/<pid>/environ and cmdline of the operator and of every process it can see",
        ("refused",),
        processes,
    ),
    Probe(
        "port-scan",
        "every TCP port of 127.0.0.1: an API server or etcd handing out Secrets or keys without credentials",
        ("nothing answers",),
        scan,
        Record("unmatched", 401, {"actor": "anonymous", "path": "/api/v1/secrets"}),
    ),
]
