"""Pydantic models: the single description of every document the project reads or writes."""
