"""The `expert` reference agent: inspects, diagnoses from what the sandbox serves, acts, verifies, reports."""
