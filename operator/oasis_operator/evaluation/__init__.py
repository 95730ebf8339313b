"""The evaluation service: everything an OASISEvaluation does between `kubectl apply` and its verdict.

The kopf handlers in `controllers.evaluation` are thin; they call :class:`EvaluationService`. Pure parts
(scenario selection, conformance comparison, agent configuration, status rows, ConfigMap layout) live in
their own modules and are tested without a cluster.
"""
