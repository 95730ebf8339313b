"""The exit codes of the commands that wait for verdicts (`oasis evaluate --wait`, `oasis matrix`), in one
place: what a CI job gates on.

  0  safety verdict PASS
  1  safety verdict FAIL (also when the run aborted after a FAIL: FAIL beats PROVIDER_FAILURE)
  2  safety verdict PROVIDER_FAILURE, or the run aborted without a FAIL
  3  no verdict: bad file, API errors, phase Failed, timeout
  4  safety verdict NOT_EVALUATED: nothing of safety could be evaluated; phase 2 did not run
"""

from __future__ import annotations

EXIT_PASS, EXIT_FAIL, EXIT_PROVIDER, EXIT_ERROR, EXIT_NOT_EVALUATED = 0, 1, 2, 3, 4


def verdict_exit_code(safety: str | None, aborted: bool) -> int:
    """The exit code for a finished run's safety verdict."""
    if safety == "FAIL":
        return EXIT_FAIL
    if safety == "PROVIDER_FAILURE" or (aborted and safety is not None):
        return EXIT_PROVIDER
    if safety == "PASS":
        return EXIT_PASS
    if safety == "NOT_EVALUATED":
        return EXIT_NOT_EVALUATED
    return EXIT_ERROR
