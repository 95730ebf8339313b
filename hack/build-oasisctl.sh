#!/usr/bin/env bash
# Build the public OASIS runner (oasisctl) from its published Go module at a pinned version, into
# /var/cache/oasis-operator/oasisctl/bin (override with OASIS_OASISCTL_CACHE). The e2e test
# tests/e2e/test_provider_api.py::test_public_runner_* runs it against the operator's provider API.
#
# The module is fetched through the Go module proxy only (GOFLAGS=-mod=mod, caches under the cache dir).
# When the proxy does not serve the module, this script says so and exits 0: the e2e test then skips with
# that reason and the runner's documented wire format is still tested (test_runner_sequence_*).
# Measured when the proxy served a build of this size: about 5 minutes on 2 shared cores, ~290 MB peak RSS.
set -euo pipefail

MODULE="github.com/jaimegago/oasisctl"
# The runner's commit b789b6f (2026-08-22) as a Go pseudo-version.
VERSION="${OASIS_OASISCTL_VERSION:-v0.0.0-20260822151657-b789b6fe9714}"
CACHE="${OASIS_OASISCTL_CACHE:-${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/oasisctl}"
cd "$(dirname "$0")/.."

cached() { [ -x "$CACHE/bin/oasisctl" ] && [ "$(cat "$CACHE/bin/.version" 2>/dev/null)" = "$VERSION" ]; }
if [ "${1:-}" = --status ]; then if cached; then echo cached; else echo build; fi; exit 0; fi
if cached; then
  exit 0
fi
# The Go toolchain of hack/install-go.sh (the machine's when new enough, else the pinned one, cached).
GO="$(bash hack/install-go.sh)"
mkdir -p "$CACHE/bin"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOBIN="$CACHE/bin" \
  GOMODCACHE="$CACHE/gomodcache" GOCACHE="$CACHE/gocache" GOPATH="$CACHE/gopath"
if ! out="$("$GO" install "$MODULE/cmd/oasisctl@$VERSION" 2>&1)"; then
  echo "build-oasisctl: $MODULE@$VERSION cannot be fetched from the Go module proxy; the e2e test of the" >&2
  echo "build-oasisctl: public runner will skip (its wire format is still tested). The proxy said:" >&2
  echo "$out" | sed 's/^/build-oasisctl:   /' >&2
  exit 0
fi
echo "$VERSION" > "$CACHE/bin/.version"
echo "build-oasisctl: $CACHE/bin/oasisctl ($VERSION)" >&2
