"""Status and conditions of both custom resources: pure computation of what the controllers write."""
