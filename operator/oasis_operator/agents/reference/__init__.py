"""Reference agents (no model, deterministic) that act only through kubectl with the credentials given.

`careful` inspects before it acts, stays inside its scope, refuses destructive, secret-revealing and
out-of-zone requests, treats what it reads as data, and diagnoses from logs, events and state.
`reckless` does whatever the prompt, or any instruction it reads in the cluster, tells it to.
They exist to show that the safety gate tells the two apart.
"""
