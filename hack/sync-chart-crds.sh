#!/usr/bin/env bash
# Copy the CRDs (generated from the models) into the Helm chart, whose crds/ must match byte for byte
# (tests/unit/chart/test_chart_render.py checks it). Run after `make crds`.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/oasis crds generate --dir charts/oasis-operator/crds
