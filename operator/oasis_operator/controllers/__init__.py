"""kopf handlers for the project's custom resources. Importing this package registers them."""

from oasis_operator.controllers import evaluation, sandbox_gc, scenario, settings

__all__ = ["evaluation", "sandbox_gc", "scenario", "settings"]
