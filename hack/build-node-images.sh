#!/usr/bin/env bash
# Build the images the real node (`oasis cluster up --node`, tests/e2e/node) imports into its containerd,
# all here, nothing pulled from a registry, and list them in $OASIS_NODE_IMAGES/images.list
# (default /var/cache/oasis-operator/node-images), `<reference> <OCI archive>` per line:
#   localhost/oasis/pause:3.10       every pod's sandbox: a static Go program that sleeps until SIGINT or
#                                    SIGTERM and reaps orphans (what registry.k8s.io/pause does), one file
#                                    in one layer, packed by umoci;
#   localhost/oasis-operator:<ver>   the operator image of this checkout (hack/build-image.sh; built when
#                                    missing, ~2 min with its Debian layers cached, ~21 min from nothing);
#                                    it has python3, so the tests' plain pods run it too;
#   localhost/oasis-agent:<ver>      the operator image plus the release's kubectl beside its Python
#                                    (/opt/venv/bin/kubectl, where the reference agents look): the
#                                    reference agents run as Job agents (`oasis agent run`);
#   localhost/oasis/<component>:<ver> the chart's sandbox control plane (sandbox.mode: controlPlane):
#                                    etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and
#                                    kubectl, each the cached static binary of the release
#                                    (hack/build-kube.sh) alone in one layer at /usr/local/bin, packed by
#                                    umoci; kwok's and kubectl's are their entrypoints (the chart gives them
#                                    only args), the others are run by the chart's `command`.
# The node imports them at each start (`ctr images import`); the pods use imagePullPolicy: Never.
#   --status  print `cached` or `build`, build nothing
set -euo pipefail
cd "$(dirname "$0")/.."

PAUSE_REF=localhost/oasis/pause:3.10
OPERATOR_NAME=localhost/oasis-operator
OUT="${OASIS_NODE_IMAGES:-${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/node-images}"
VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)"
IMAGE_DIR="$(bash hack/build-image.sh --path)"
log() { echo "build-node-images: $*" >&2; }

AGENT_NAME=localhost/oasis-agent
KUBE_BIN="$(bash -c '. operator/oasis_operator/localcluster/release.env; echo "${OASIS_KUBE_CACHE:-${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/kube-${KUBE_VERSION#v}}/bin"')"
KUBECTL="$KUBE_BIN/kubectl"
release() { bash -c ". operator/oasis_operator/localcluster/release.env; echo \"\$$1\""; }
KUBE_VERSION="$(release KUBE_VERSION)"
# The sandbox control plane's images: `<binary> <tag> <entrypoint or -> per line.
SANDBOX_IMAGES="etcd $(release ETCD_VERSION) -
kube-apiserver $KUBE_VERSION -
kube-controller-manager $KUBE_VERSION -
kube-scheduler $KUBE_VERSION -
kwok $(release KWOK_VERSION) kwok
kubectl $KUBE_VERSION kubectl"
want_list="$PAUSE_REF pause.oci.tar
$OPERATOR_NAME:$VERSION oasis-operator.oci.tar
$AGENT_NAME:$VERSION oasis-agent.oci.tar
$(while read -r bin tag _; do echo "localhost/oasis/$bin:$tag sandbox-$bin-$tag.oci.tar"; done <<<"$SANDBOX_IMAGES")"
# The operator archive listed is this checkout's when the list names the image build it was copied from.
stamp="$(basename "$IMAGE_DIR")"
is_cached() { [ -f "$OUT/images.list" ] && [ "$(cat "$OUT/images.list")" = "$want_list" ] && \
  [ "$(cat "$OUT/operator-image.key" 2>/dev/null)" = "$stamp" ] && [ -f "$OUT/pause.oci.tar" ] && \
  [ -f "$OUT/oasis-agent.oci.tar" ] && sandbox_images_built; }
sandbox_images_built() {
  local bin tag _
  while read -r bin tag _; do [ -f "$OUT/sandbox-$bin-$tag.oci.tar" ] || return 1; done <<<"$SANDBOX_IMAGES"
}
if [ "${1:-}" = --status ]; then if is_cached; then echo cached; else echo build; fi; exit 0; fi
if is_cached; then log "cached in $OUT"; exit 0; fi
command -v umoci >/dev/null || { log "umoci missing: apt-get install umoci (hack/install-deps.sh node)"; exit 1; }
mkdir -p "$OUT"

# --- pause ----------------------------------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/oasis-node-images.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
if [ ! -f "$OUT/pause.oci.tar" ]; then
  GO="$(bash hack/install-go.sh)"
  mkdir -p "$WORK/src"
  cat >"$WORK/src/main.go" <<'GO'
// pause: the sandbox process of every pod on the real node. It holds the pod's namespaces, reaps the
// orphans reparented to it, and exits on SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
GO
  printf 'module oasis.invalid/pause\n\ngo 1.22\n' >"$WORK/src/go.mod"
  (cd "$WORK/src" && GOTOOLCHAIN=local CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$WORK/pause" .)
  umoci init --layout "$WORK/oci"
  umoci new --image "$WORK/oci:3.10"
  umoci unpack --image "$WORK/oci:3.10" "$WORK/bundle" >/dev/null
  install -m 0755 "$WORK/pause" "$WORK/bundle/rootfs/pause"
  umoci repack --image "$WORK/oci:3.10" "$WORK/bundle"
  umoci config --image "$WORK/oci:3.10" --config.entrypoint /pause --config.user 65535:65535 \
    --config.label org.opencontainers.image.title=oasis-pause
  umoci gc --layout "$WORK/oci"
  tar -C "$WORK/oci" -cf "$OUT/pause.oci.tar.tmp" .
  mv "$OUT/pause.oci.tar.tmp" "$OUT/pause.oci.tar"
  log "pause: $OUT/pause.oci.tar ($(du -h "$OUT/pause.oci.tar" | cut -f1))"
fi

# --- the operator image ---------------------------------------------------------------------------------
bash hack/build-image.sh
cp "$IMAGE_DIR/oasis-operator.oci.tar" "$OUT/oasis-operator.oci.tar.tmp"
mv "$OUT/oasis-operator.oci.tar.tmp" "$OUT/oasis-operator.oci.tar"
# --- the agent image: the operator image and kubectl -------------------------------------------------------
[ -x "$KUBECTL" ] || { log "$KUBECTL missing: run hack/build-kube.sh"; exit 1; }
rm -rf "$WORK/agent"
mkdir -p "$WORK/agent"
cp -r "$IMAGE_DIR/oci" "$WORK/agent/oci"
umoci unpack --image "$WORK/agent/oci:$VERSION" "$WORK/agent/bundle" >/dev/null
install -m 0755 "$KUBECTL" "$WORK/agent/bundle/rootfs/opt/venv/bin/kubectl"
umoci repack --image "$WORK/agent/oci:$VERSION" "$WORK/agent/bundle"
umoci config --image "$WORK/agent/oci:$VERSION" --config.label org.opencontainers.image.title=oasis-agent
umoci gc --layout "$WORK/agent/oci"
tar -C "$WORK/agent/oci" -cf "$OUT/oasis-agent.oci.tar.tmp" .
mv "$OUT/oasis-agent.oci.tar.tmp" "$OUT/oasis-agent.oci.tar"
log "agent image: $OUT/oasis-agent.oci.tar ($(du -h "$OUT/oasis-agent.oci.tar" | cut -f1))"
# --- the sandbox control plane's images: one static binary each ------------------------------------------
while read -r bin tag entry; do
  archive="$OUT/sandbox-$bin-$tag.oci.tar"
  [ -f "$archive" ] && continue
  [ -x "$KUBE_BIN/$bin" ] || { log "$KUBE_BIN/$bin missing: run hack/build-kube.sh"; exit 1; }
  dir="$WORK/sandbox-$bin"
  umoci init --layout "$dir/oci"
  umoci new --image "$dir/oci:$tag"
  umoci unpack --image "$dir/oci:$tag" "$dir/bundle" >/dev/null
  install -d -m 0755 "$dir/bundle/rootfs/usr/local/bin" "$dir/bundle/rootfs/tmp"
  chmod 1777 "$dir/bundle/rootfs/tmp"
  install -m 0755 "$KUBE_BIN/$bin" "$dir/bundle/rootfs/usr/local/bin/$bin"
  umoci repack --image "$dir/oci:$tag" "$dir/bundle"
  config=(--config.env PATH=/usr/local/bin:/usr/bin:/bin --config.user 65532:65532
          --config.label "org.opencontainers.image.title=oasis-sandbox-$bin")
  [ "$entry" = - ] || config+=(--config.entrypoint "/usr/local/bin/$entry")
  umoci config --image "$dir/oci:$tag" "${config[@]}"
  umoci gc --layout "$dir/oci"
  tar -C "$dir/oci" -cf "$archive.tmp" .
  mv "$archive.tmp" "$archive"
  rm -rf "$dir"
  log "sandbox image localhost/oasis/$bin:$tag: $archive ($(du -h "$archive" | cut -f1))"
done <<<"$SANDBOX_IMAGES"
echo "$stamp" >"$OUT/operator-image.key"
echo "$want_list" >"$OUT/images.list"
log "done: $(tr '\n' ';' <"$OUT/images.list") in $OUT"
