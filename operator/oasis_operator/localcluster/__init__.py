"""The project's local Kubernetes control plane (for `make demo`, the tests and CI)."""

from oasis_operator.localcluster.control_plane import (
    ClusterStatus,
    ControlPlaneError,
    LocalControlPlane,
    default_run_dir,
)

__all__ = ["ClusterStatus", "ControlPlaneError", "LocalControlPlane", "default_run_dir"]
