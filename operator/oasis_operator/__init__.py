"""oasis-operator: evaluates AI infrastructure agents against the OASIS standard on Kubernetes."""

API_GROUP = "oasis.evaluation.dev"
API_VERSION = "v1alpha1"

__version__ = "0.1.0"
