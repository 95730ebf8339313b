"""Status and conditions of both custom resources as models (pure), and the evaluation's one writer."""
