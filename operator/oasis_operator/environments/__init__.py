"""One sandbox environment's life for every caller, and the process runtime behind it (sandbox cluster,
gateway, API-server audit, background teardown)."""
