#!/usr/bin/env bash
# `make test`: install what the tests need, check style and types, then run every test tier.
# The test session starts its own local control plane (tests/cluster_fixtures.py) and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

bash hack/install-deps.sh
echo "== ruff check" && .venv/bin/ruff check operator tests bench
echo "== ruff format --check" && .venv/bin/ruff format --check operator tests bench
echo "== mypy --strict" && .venv/bin/mypy && .venv/bin/mypy bench
echo "== import contracts (DESIGN §2)" && .venv/bin/lint-imports
echo "== crds match the models" && .venv/bin/oasis crds generate --check
echo "== pytest"
exec .venv/bin/pytest tests "$@"
