"""Agents: the wire protocol, adapters that reach an agent (HTTP, command, Job), reference agents."""
