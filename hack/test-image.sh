#!/usr/bin/env bash
# `make test-image`: build the operator image for this checkout, from nothing if its Debian root
# filesystems are not cached (~21 min on 2 shared cores; then later builds redo only the Python layer,
# ~2 min), and run its test (tests/integration/chart/test_image.py: the operator from the image's own
# filesystem, as its own user, against the local control plane). `make test` in CI leaves a cold image out
# and says so; this is the target that builds it (README: "What each target installs and builds").
set -euo pipefail
cd "$(dirname "$0")/.."
OASIS_IMAGE_COLD=build bash hack/install-deps.sh test
exec .venv/bin/pytest -p no:cacheprovider tests/integration/chart/test_image.py "$@"
