"""The sandbox provider: declared state built in the sandbox cluster, agent RBAC, snapshots, teardown."""
