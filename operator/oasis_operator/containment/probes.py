"""What an agent under evaluation might try in order to leave its sandbox, and what it must get instead.

One list, `PROBES`, used both by `oasis containment probe` and by the attack tests, which parametrize
over it (tests/integration/containment). Each probe says what the agent tries, which outcome is the only
acceptable one, and where the gateway must have recorded the attempt; the harness also checks that the
sandbox cluster is unchanged afterwards.
"""

from __future__ import annotations

from oasis_operator.containment.api_probes import API_PROBES
from oasis_operator.containment.host_probes import HOST_PROBES
from oasis_operator.containment.mcp_probes import MCP_PROBES
from oasis_operator.containment.probe import Probe

PROBES: list[Probe] = [*API_PROBES, *MCP_PROBES, *HOST_PROBES]
PROBE_IDS = [p.id for p in PROBES]
