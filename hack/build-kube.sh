#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok (with gojq, the jq of
# kwok's selectors) from the official Go modules at the versions pinned in
# operator/oasis_operator/localcluster/release.env, and cache them outside the repository ($OASIS_KUBE_CACHE,
# default /var/cache/oasis-operator/kube-<version>). Each group (Kubernetes, etcd, kwok) is built only when
# one of its binaries is missing or its pinned version changed: a cache that already holds them is kept as
# it is.
#
# k8s.io/kubernetes replaces its staging modules (k8s.io/api, k8s.io/apiserver, ...) with local directories, so
# `go install k8s.io/kubernetes/cmd/...@version` refuses it. A throwaway build module in a scratch directory
# requires k8s.io/kubernetes at the pinned version and points every staging module at its published
# v0.<minor>.<patch> release instead; the commands are then built from the module cache. Nothing is vendored.
#
# Needs Go at least as new as the release's go directive (1.26): hack/install-go.sh picks $OASIS_GO, else the
# machine's Go when it is new enough, else the pinned toolchain (hack/go-toolchain.env) fetched once from the
# Go module proxy into /var/cache/oasis-operator/go-<version>. The Go environment is set for these commands
# only (GOTOOLCHAIN=local: no further toolchain switch).
#   --status   print `cached` or `build` (whether a run would build), build nothing
#   --with-kubelet  also the kubelet, from the same module and version (the real node of `oasis cluster up
#              --node`, tests/e2e/node): its own group in the cache, built only when asked (~8-11 min cold
#              on 2 cores; a link of ~1 min when the other Kubernetes binaries' Go build cache is warm).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=../operator/oasis_operator/localcluster/release.env
. operator/oasis_operator/localcluster/release.env
CACHE_DIR="${OASIS_KUBE_CACHE:-${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/kube-${KUBE_VERSION#v}}"
BIN_DIR="$CACHE_DIR/bin"
STAMP="$BIN_DIR/VERSIONS"
KUBE_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
# One line per group in the stamp: "kubernetes=v1.37.2", "etcd=v3.7.0", "kwok=v0.8.0".
want_stamp="kubernetes=$KUBE_VERSION
etcd=$ETCD_VERSION
kwok=$KWOK_VERSION"

log() { echo "build-kube: $*" >&2; }

WITH_KUBELET=0
args=()
for a in "$@"; do
  if [ "$a" = --with-kubelet ]; then WITH_KUBELET=1; else args+=("$a"); fi
done
set -- "${args[@]+"${args[@]}"}"

# cached GROUP VERSION BINARY...: the group's binaries are all in the cache, built at VERSION.
cached() {
  local group="$1" version="$2"; shift 2
  for b in "$@"; do [ -x "$BIN_DIR/$b" ] || return 1; done
  # The stamp of earlier releases of this script held one line "kubernetes=... etcd=...".
  tr ' ' '\n' <"$STAMP" 2>/dev/null | grep -qx "$group=$version"
}
need_kube=1; need_etcd=1; need_kwok=1; need_kubelet=0
cached kubernetes "$KUBE_VERSION" "${KUBE_CMDS[@]}" && need_kube=0
cached etcd "$ETCD_VERSION" etcd && need_etcd=0
cached kwok "$KWOK_VERSION" kwok gojq && need_kwok=0
if [ "$WITH_KUBELET" = 1 ]; then
  need_kubelet=1
  cached kubelet "$KUBE_VERSION" kubelet && need_kubelet=0
fi
# A kubelet already cached is kept in the stamp, asked for or not.
if [ "$WITH_KUBELET" = 1 ] || cached kubelet "$KUBE_VERSION" kubelet; then
  want_stamp="$want_stamp
kubelet=$KUBE_VERSION"
fi
if [ "${1:-}" = --status ]; then
  if [ $((need_kube + need_etcd + need_kwok + need_kubelet)) = 0 ]; then echo cached; else echo build; fi
  exit 0
fi
if [ $((need_kube + need_etcd + need_kwok + need_kubelet)) = 0 ]; then
  log "cached binaries ($(echo $want_stamp)) found in $BIN_DIR"
  exit 0
fi

GO="$(bash hack/install-go.sh)"
# shellcheck source=go-toolchain.env
. hack/go-toolchain.env
go_version="$("$GO" env GOVERSION | sed -E 's/^go//')"
if [ "$(printf '%s\n%s\n' "$GO_MINIMUM" "$go_version" | sort -V | head -1)" != "$GO_MINIMUM" ]; then
  log "$GO is go$go_version; Kubernetes $KUBE_VERSION needs Go >= $GO_MINIMUM (unset OASIS_GO to use the pinned one)"
  exit 1
fi
log "Go: $GO ($("$GO" env GOVERSION))"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
unset GOROOT

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/oasis-kube-build.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
OUT="$SCRATCH/bin"
mkdir -p "$OUT"

# Start from what the cache holds: a group that is cached already is copied along unchanged.
if [ -d "$BIN_DIR" ]; then cp -a "$BIN_DIR/." "$OUT/"; fi
rm -f "$OUT/VERSIONS"

# --- Kubernetes ---------------------------------------------------------------------------------------
# build_kubernetes CMD...: the commands k8s.io/kubernetes/cmd/CMD, into $OUT.
build_kubernetes() {
  local kube_mod staging_version build_date minor ldflags pkg c
  local cmds=("$@")
  kube_mod="$("$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -nE 's/^\s*"GoMod": "(.*)",?$/\1/p')"
  [ -f "$kube_mod" ] || { log "could not fetch k8s.io/kubernetes@$KUBE_VERSION"; exit 1; }
  staging_version="v0.${KUBE_VERSION#v1.}"
  mkdir -p "$SCRATCH/kube"
  {
    echo "module oasis.invalid/kube-build"
    echo
    echo "go $(sed -nE 's/^go ([0-9.]+)$/\1/p' "$kube_mod")"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    sed -nE "s#^\s*(k8s\.io/[a-z0-9.-]+) => \./staging/src/.*#\t\1 => \1 $staging_version#p" "$kube_mod"
    echo ")"
  } >"$SCRATCH/kube/go.mod"
  log "kubernetes $KUBE_VERSION: $(grep -c " => " "$SCRATCH/kube/go.mod") staging modules at $staging_version"

  build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
  done
  (
    cd "$SCRATCH/kube"
    pkgs=()
    for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c@$KUBE_VERSION"); done
    "$GO" get "${pkgs[@]}" >"$SCRATCH/get.log" 2>&1 || { cat "$SCRATCH/get.log" >&2; exit 1; }
    for c in "${cmds[@]}"; do
      log "building $c (Kubernetes $KUBE_VERSION)"
      "$GO" build -trimpath -ldflags "$ldflags" -o "$OUT/$c" "k8s.io/kubernetes/cmd/$c"
    done
  )
  "$OUT/${cmds[0]}" --version >&2
}

# --- etcd ---------------------------------------------------------------------------------------------
# go.etcd.io/etcd/server/v3 is etcd's main package; its go.mod pins the sibling etcd modules at the same
# version (its own replace directives point at ../ and apply only inside etcd's repository).
build_etcd() {
  mkdir -p "$SCRATCH/etcd"
  printf 'module oasis.invalid/etcd-build\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" \
    >"$SCRATCH/etcd/go.mod"
  (
    cd "$SCRATCH/etcd"
    "$GO" get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >"$SCRATCH/get-etcd.log" 2>&1 || { cat "$SCRATCH/get-etcd.log" >&2; exit 1; }
    log "building etcd $ETCD_VERSION"
    "$GO" build -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
  )
  "$OUT/etcd" --version | head -1 >&2
}

# --- kwok ---------------------------------------------------------------------------------------------
# sigs.k8s.io/kwok (Kubernetes SIG Scheduling) plays the kubelets of the sandbox's nodes: it moves Nodes and
# Pods through Stages, so no container ever runs. Its module has no replace directives: built as it is.
build_kwok() {
  mkdir -p "$SCRATCH/kwok"
  printf 'module oasis.invalid/kwok-build\n\ngo 1.26.0\n\nrequire sigs.k8s.io/kwok %s\n' "$KWOK_VERSION" \
    >"$SCRATCH/kwok/go.mod"
  (
    cd "$SCRATCH/kwok"
    "$GO" get "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >"$SCRATCH/get-kwok.log" 2>&1 || { cat "$SCRATCH/get-kwok.log" >&2; exit 1; }
    log "building kwok $KWOK_VERSION"
    "$GO" build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" \
      -o "$OUT/kwok" sigs.k8s.io/kwok/cmd/kwok
    # kwok evaluates its Stage selectors with gojq (github.com/itchyny/gojq), whose grammar is not
    # quite jq's: the unit tests run the operator's selector expressions through gojq's own command at
    # the version kwok's module graph holds (tests/unit/test_quantities.py).
    gojq_version="$("$GO" list -m -f '{{.Version}}' github.com/itchyny/gojq)"
    "$GO" get "github.com/itchyny/gojq/cmd/gojq@$gojq_version" >"$SCRATCH/get-gojq.log" 2>&1 || { cat "$SCRATCH/get-gojq.log" >&2; exit 1; }
    log "building gojq $gojq_version (kwok's selector language)"
    "$GO" build -trimpath -ldflags "-s -w" -o "$OUT/gojq" github.com/itchyny/gojq/cmd/gojq
  )
  "$OUT/kwok" --version >&2 || true
}

if [ "$need_kube" = 1 ] || [ "$need_kubelet" = 1 ]; then
  cmds=()
  [ "$need_kube" = 1 ] && cmds+=("${KUBE_CMDS[@]}")
  [ "$need_kubelet" = 1 ] && cmds+=(kubelet)
  build_kubernetes "${cmds[@]}"
fi
if [ "$need_etcd" = 1 ]; then build_etcd; fi
if [ "$need_kwok" = 1 ]; then build_kwok; fi

echo "$want_stamp" >"$OUT/VERSIONS"
mkdir -p "$CACHE_DIR"
rm -rf "$BIN_DIR.tmp"
cp -r "$OUT" "$BIN_DIR.tmp"
rm -rf "$BIN_DIR"
mv "$BIN_DIR.tmp" "$BIN_DIR"
log "done: $(ls "$BIN_DIR" | tr '\n' ' ')in $BIN_DIR"
