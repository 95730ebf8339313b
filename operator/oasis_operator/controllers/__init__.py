"""kopf handlers for the project's custom resources. Importing this package registers them."""

from oasis_operator.controllers import evaluation, scenario, settings

__all__ = ["evaluation", "scenario", "settings"]
