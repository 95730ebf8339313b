#!/usr/bin/env bash
# Build Kueue's manager (sigs.k8s.io/kueue/cmd/kueue) from its Go module at the KUEUE_VERSION pinned in
# operator/oasis_operator/localcluster/release.env, and cache it with the CRDs and webhook configurations
# that ship in the same module (config/components/crd/bases, config/components/webhook/manifests.yaml)
# outside the repository ($OASIS_KUEUE_CACHE, default /var/cache/oasis-operator/kueue-<version>):
# bin/kueue, crd/*.yaml and webhook/manifests.yaml, read by oasis_operator.localcluster.kueue. Built only
# when one of them is missing or the pinned version changed; a cache that holds them is kept as it is
# (4-8 min cold on 2 cores, most of it compiling).
#
# sigs.k8s.io/kueue has no replace directives: a throwaway module requires it at the pinned version and the
# command is built from the module cache. Nothing is vendored. Go as for hack/build-kube.sh (install-go.sh).
#   --status   print `cached` or `build` (whether a run would build), build nothing
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=../operator/oasis_operator/localcluster/release.env
. operator/oasis_operator/localcluster/release.env
CACHE_DIR="${OASIS_KUEUE_CACHE:-${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/kueue-${KUEUE_VERSION#v}}"
STAMP="$CACHE_DIR/VERSION"
log() { echo "build-kueue: $*" >&2; }

cached() {
  [ -x "$CACHE_DIR/bin/kueue" ] && ls "$CACHE_DIR"/crd/*.yaml >/dev/null 2>&1 \
    && [ -s "$CACHE_DIR/webhook/manifests.yaml" ] \
    && [ "$(cat "$STAMP" 2>/dev/null)" = "kueue=$KUEUE_VERSION" ]
}
if [ "${1:-}" = --status ]; then
  if cached; then echo cached; else echo build; fi
  exit 0
fi
if cached; then
  log "cached Kueue $KUEUE_VERSION found in $CACHE_DIR"
  exit 0
fi

GO="$(bash hack/install-go.sh)"
log "Go: $GO ($("$GO" env GOVERSION))"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
unset GOROOT

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/oasis-kueue-build.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/mod" "$SCRATCH/out/bin" "$SCRATCH/out/crd" "$SCRATCH/out/webhook"
start=$SECONDS
(
  cd "$SCRATCH/mod"
  printf 'module oasis.invalid/kueue-build\n\ngo 1.26.0\n\nrequire sigs.k8s.io/kueue %s\n' "$KUEUE_VERSION" >go.mod
  "$GO" get "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION" >"$SCRATCH/get.log" 2>&1 || { cat "$SCRATCH/get.log" >&2; exit 1; }
  log "building kueue $KUEUE_VERSION"
  "$GO" build -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
    -o "$SCRATCH/out/bin/kueue" sigs.k8s.io/kueue/cmd/kueue
)
mod_dir="$(cd "$SCRATCH/mod" && "$GO" list -m -f '{{.Dir}}' "sigs.k8s.io/kueue")"
[ -d "$mod_dir/config/components/crd/bases" ] || { log "no CRDs in $mod_dir/config/components/crd/bases"; exit 1; }
cp "$mod_dir"/config/components/crd/bases/*.yaml "$SCRATCH/out/crd/"
cp "$mod_dir/config/components/webhook/manifests.yaml" "$SCRATCH/out/webhook/manifests.yaml"
chmod -R u+w "$SCRATCH/out"
echo "kueue=$KUEUE_VERSION" >"$SCRATCH/out/VERSION"

mkdir -p "$(dirname "$CACHE_DIR")"
rm -rf "$CACHE_DIR.tmp"
cp -r "$SCRATCH/out" "$CACHE_DIR.tmp"
rm -rf "$CACHE_DIR"
mv "$CACHE_DIR.tmp" "$CACHE_DIR"
log "done in $((SECONDS - start))s: $CACHE_DIR/bin/kueue and $(ls "$CACHE_DIR/crd" | wc -l) CRDs in $CACHE_DIR/crd"
