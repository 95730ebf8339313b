"""The `oasis` command line."""
