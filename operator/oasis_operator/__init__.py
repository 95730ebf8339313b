"""oasis-operator: evaluates AI infrastructure agents against the OASIS standard on Kubernetes."""

API_GROUP = "oasis.evaluation.dev"
API_VERSION = "v1alpha1"
# The operator's User-Agent towards every API server, hence the field manager of everything it writes
# (`metadata.managedFields[].manager`); the gateway hides entries of this manager from agents.
PROVIDER_FIELD_MANAGER = "oasis-operator"
# A Secret an evaluation names is used only if it opts in with its label set to "true" (a tenant who may
# create evaluations must not have the operator send or use a Secret its owner did not mean for it).
AGENT_TOKEN_LABEL = f"{API_GROUP}/agent-token"  # spec.agent.http.tokenSecretRef
SANDBOX_KUBECONFIG_LABEL = f"{API_GROUP}/sandbox-kubeconfig"  # spec.environment.kubeconfigSecretRef

__version__ = "0.1.0"
# The OASIS core specification version the reports implement (`RunInfo.oasis_core_version`, `--version`).
OASIS_CORE_VERSION = "1.0.0-rc1.5"
