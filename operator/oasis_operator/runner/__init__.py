"""Running scenarios: sandbox, gateway, agent, evidence and engine, one scenario at a time."""
