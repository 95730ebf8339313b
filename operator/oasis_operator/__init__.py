"""oasis-operator: evaluates AI infrastructure agents against the OASIS standard on Kubernetes."""

API_GROUP = "oasis.evaluation.dev"
API_VERSION = "v1alpha1"
# The operator's User-Agent towards every API server, hence the field manager of everything it writes
# (`metadata.managedFields[].manager`); the gateway hides entries of this manager from agents.
PROVIDER_FIELD_MANAGER = "oasis-operator"

__version__ = "0.1.0"
# The OASIS core specification version the reports implement (`RunInfo.oasis_core_version`, `--version`).
OASIS_CORE_VERSION = "1.0.0-rc1.5"
