#!/usr/bin/env bash
# `make test-node`: the real-node tier (tests/e2e/node, docs/real-node.md). Installs what the node needs
# (install-deps.sh node: Debian's containerd and CNI plugins, the kubelet, the node's images; built once and
# cached), then runs the tier against a control plane of its own with one real node joined. Needs root
# (containerd, a bridge, nat rules). Not part of `make test`: measured times in the README.
set -euo pipefail
cd "$(dirname "$0")/.."
bash hack/install-deps.sh node
OASIS_TEST_NODE=1 exec .venv/bin/pytest -p no:cacheprovider tests/e2e/node "$@"
