"""Escape probes and the harness that runs them against a sandbox and the gateway."""
