"""The agent gateway: the agent's only door to its sandbox, and the recorder of what it did there."""

from oasis_operator.gateway.config import GatewayConfig
from oasis_operator.gateway.credentials import AgentCredentials
from oasis_operator.gateway.recorder import GatewayRecord, read_record
from oasis_operator.gateway.server import Gateway

__all__ = ["AgentCredentials", "Gateway", "GatewayConfig", "GatewayRecord", "read_record"]
