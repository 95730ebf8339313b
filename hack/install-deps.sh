#!/usr/bin/env bash
# Install what `make demo` or `make test` needs on a Debian 12 machine, as root (or with sudo), and nothing
# more; everything built is cached, so a second run only checks.
#
#   install-deps.sh demo   (`make deps`, `make demo`)
#     Debian packages: python3 with venv, openssl, bubblewrap (the sandbox every command agent runs in),
#       ca-certificates;
#     a Go toolchain at least as new as the Kubernetes release needs (hack/install-go.sh: the machine's Go
#       when new enough, else the pinned one from the Go module proxy, checked and cached);
#     the Kubernetes release pinned in operator/oasis_operator/localcluster/release.env (kube-apiserver,
#       kube-controller-manager, kube-scheduler, kubectl, etcd and kwok, built once from the official Go modules by build-kube.sh
#       and cached outside the repo); that release is the only one the local control plane runs;
#     the Python virtual environment .venv with the project, and .venv/bin/kubectl (the release's kubectl).
#   install-deps.sh test   (`make test-deps`, `make test`): all of the above, and what only tests use:
#     chromium (the HTML report's rendering test), the public OASIS runner oasisctl (the provider API's e2e
#     test; build-oasisctl.sh), Kueue's manager with its CRDs (the Kueue e2e test; build-kueue.sh, pinned
#     in release.env, built once and cached), and the operator image (tests/integration/chart/test_image.py;
#     build-image.sh). OASIS_SKIP_IMAGE=1 leaves the image out; its test then skips, saying so. In CI
#     (CI=true) the image is built only when its Debian root filesystems are cached (then ~2 min): from
#     nothing it takes ~21 min, which would take a cold run past the hour; it is then not built, said so
#     loudly, and `make test-image` builds and tests it (OASIS_IMAGE_COLD=build builds it anyway).
#   install-deps.sh node   (`make test-node`): all of `test`, and the real node's (docs/real-node.md): Debian's
#     containerd, runc, containernetworking-plugins, iptables and umoci; the kubelet (build-kube.sh
#     --with-kubelet: ~8-11 min cold on 2 cores, ~15 s when the other binaries' Go build cache is warm); the
#     node's images (build-node-images.sh: a pause image and this checkout's operator image). Never on the
#     default path of `make test`.
#
# Before building, it prints what it is about to build and how long that took when measured (the plan
# below); each step prints its own wall time when it ends. `install-deps.sh demo|test --plan` prints the
# plan and stops.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${1:-test}"
PLAN_ONLY=0; [ "${2:-}" = --plan ] && PLAN_ONLY=1
case "$TARGET" in demo|test|node) ;; *) echo "install-deps: usage: install-deps.sh demo|test|node" >&2; exit 2 ;; esac
NODE=0
if [ "$TARGET" = node ]; then NODE=1; TARGET=test; fi

# shellcheck source=../operator/oasis_operator/localcluster/release.env
. operator/oasis_operator/localcluster/release.env
# shellcheck source=go-toolchain.env
. hack/go-toolchain.env

log() { echo "install-deps: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  log "apt-get install $*"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# step NAME CMD...: run CMD and say how long it took.
step() {
  local name="$1" start; shift
  start=$(date +%s)
  "$@"
  local took=$(( $(date +%s) - start ))
  log "$name: done in $((took / 60))m$((took % 60))s"
}

# --- what is missing --------------------------------------------------------------------------------------
need_pkgs=()
command -v python3 >/dev/null 2>&1 || need_pkgs+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
command -v bwrap >/dev/null 2>&1 || need_pkgs+=(bubblewrap)  # the sandbox every command agent runs in
[ -n "$(ls /etc/ssl/certs 2>/dev/null)" ] || need_pkgs+=(ca-certificates)
if [ "$TARGET" = test ]; then
  command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)  # renders the HTML report in its test
fi
if [ "$NODE" = 1 ]; then  # the real node (Debian 12: containerd 1.6.20, CNI plugins 1.1.1)
  command -v containerd >/dev/null 2>&1 || need_pkgs+=(containerd)
  [ -x /usr/sbin/runc ] || command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
  [ -x /usr/lib/cni/bridge ] || need_pkgs+=(containernetworking-plugins)
  [ -x /usr/sbin/iptables ] || command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
  command -v umoci >/dev/null 2>&1 || need_pkgs+=(umoci)
fi
kube_status="$(bash hack/build-kube.sh --status)"
go_status="$(bash hack/install-go.sh --status)"
venv_status=cached; [ -x .venv/bin/oasis ] || venv_status=build
oasisctl_status=skip; image_status=skip; kueue_status=skip
if [ "$TARGET" = test ]; then
  oasisctl_status="$(bash hack/build-oasisctl.sh --status)"
  kueue_status="$(bash hack/build-kueue.sh --status)"
  if [ "${OASIS_SKIP_IMAGE:-0}" != 1 ]; then
    image_status="$(bash hack/build-image.sh --status)"  # cached, layers or cold
    # In CI, an image from nothing (two Debian root filesystems first) would take a cold run past the
    # hour: it is built there only when its Debian layers are cached, and said so (README).
    if [ "$image_status" = cold ] && [ "${CI:-}" = true ] && [ "${OASIS_IMAGE_COLD:-}" != build ]; then
      image_status=cold-in-ci
    fi
  fi
fi

# --- the plan ---------------------------------------------------------------------------------------------
# Figures measured on this project's 2-core machine (README: the cold and warm times;
# docs/local-control-plane.md); a machine shared with other work is slower.
plan=()
[ ${#need_pkgs[@]} -eq 0 ] || plan+=("Debian packages: ${need_pkgs[*]}")
if [ "$kube_status" = build ] || [ "$oasisctl_status" = build ] || [ "$kueue_status" = build ]; then
  case "$go_status" in download*) plan+=("Go $GO_VERSION from the Go module proxy (70 MB; 11 s measured)") ;; esac
fi
[ "$kube_status" = cached ] || plan+=("Kubernetes ${KUBE_VERSION}, etcd ${ETCD_VERSION} and kwok ${KWOK_VERSION} from source (8 to 20 min on 2 cores: 7 min 36 s measured with empty caches on a quiet machine, 2.6 GB peak memory, ~5 GB of Go caches)")
[ "$venv_status" = cached ] || plan+=("the Python environment .venv (pip install -e '.[dev]'; 3m47s measured in a fresh Debian 12 on a loaded machine)")
[ "$oasisctl_status" != build ] || plan+=("the public OASIS runner oasisctl from its Go module (~5 min; when the Go module proxy does not serve it, its e2e test skips, saying why)")
[ "$kueue_status" != build ] || plan+=("Kueue's manager ${KUEUE_VERSION} from its Go module (8 min 24 s measured with empty caches while Kubernetes built beside it)")
[ "$image_status" != layers ] || plan+=("the operator image's Python layer (~2 min; its Debian root filesystems are cached)")
[ "$image_status" != cold ] || plan+=("the operator image from nothing: two Debian root filesystems by mmdebstrap, then the Python layer (21 min measured at a load average of 10-15)")
if [ "$NODE" = 1 ]; then
  [ "$(bash hack/build-kube.sh --with-kubelet --status)" = cached ] || \
    plan+=("the kubelet $KUBE_VERSION from source (481 s measured beside another Go build on 2 cores; ~15 s when the other binaries' Go build cache is warm)")
  [ "$(bash hack/build-node-images.sh --status)" = cached ] || \
    plan+=("the real node's images: a pause image (Go, umoci) and this checkout's operator image (~40 s with the image's layers cached)")
fi
if [ ${#plan[@]} -eq 0 ]; then
  log "for make $TARGET: everything is installed and cached"
else
  log "for make $TARGET, will install or build (cached afterwards in ${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}):"
  for line in "${plan[@]}"; do log "  - $line"; done
fi
[ "$TARGET" = test ] && [ "${OASIS_SKIP_IMAGE:-0}" = 1 ] && \
  log "OASIS_SKIP_IMAGE=1: the operator image is not built; tests/integration/chart/test_image.py will skip"
if [ "$image_status" = cold-in-ci ]; then
  log "NOT BUILT in CI: the operator image, whose Debian root filesystems are not cached (21 min from nothing"
  log "  would take a cold run past the hour); tests/integration/chart/test_image.py will skip, saying so."
  log "  \`make test-image\` builds and tests it (then later CI runs build only its Python layer);"
  log "  OASIS_IMAGE_COLD=build builds it here anyway."
fi

[ "$PLAN_ONLY" = 0 ] || exit 0

# --- do it ------------------------------------------------------------------------------------------------
if [ ${#need_pkgs[@]} -gt 0 ]; then step "Debian packages" apt_install "${need_pkgs[@]}"; fi
make_venv() {
  local py="${PYTHON:-python3}"
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  if ! .venv/bin/python -m pip install -q -e '.[dev]' >.venv/pip-install.log 2>&1; then
    grep -v -i '^warning' .venv/pip-install.log >&2 || true
    log "pip install -e '.[dev]' failed (its output is above and in .venv/pip-install.log)"
    return 1
  fi
  .venv/bin/python -c 'import oasis_operator, kopf, kubernetes'
}
step "Python environment" make_venv
if [ "$kube_status" = build ]; then step "Kubernetes $KUBE_VERSION" bash hack/build-kube.sh; fi
# The release's kubectl beside the venv's Python: the reference agents find it there, and the docs'
# commands and the CI example call .venv/bin/kubectl. A copy, not a link: a command agent's sandbox shows
# it the venv read-only but not the cache a link would point into, so a linked kubectl is not there for it.
kubectl="$(.venv/bin/python -c 'from oasis_operator.localcluster.release import default_bin_dir; print(default_bin_dir() / "kubectl")')"
if ! cmp -s "$kubectl" .venv/bin/kubectl; then
  rm -f .venv/bin/kubectl
  install -m 0755 "$kubectl" .venv/bin/kubectl
fi

if [ "$TARGET" = test ]; then
  # The public OASIS runner for the provider API's e2e test (says why and goes on when it cannot be had).
  if [ "$oasisctl_status" = build ]; then step "oasisctl" bash hack/build-oasisctl.sh; fi
  # Kueue's manager and CRDs for tests/e2e/test_kueue.py (which skips, saying so, only without them).
  if [ "$kueue_status" = build ]; then step "Kueue $KUEUE_VERSION" bash hack/build-kueue.sh; fi
  # The operator image, built without a container engine (mmdebstrap + umoci, Debian packages) and cached by
  # its inputs; tests/integration/chart/test_image.py runs the operator from it. The two Debian root
  # filesystems are cached apart, so a code change rebuilds only the Python layer (see hack/build-image.sh).
  case "$image_status" in layers|cold) step "operator image" as_root bash hack/build-image.sh ;; esac
fi
if [ "$NODE" = 1 ]; then
  if [ "$(bash hack/build-kube.sh --with-kubelet --status)" = build ]; then
    step "kubelet $KUBE_VERSION" bash hack/build-kube.sh --with-kubelet
  fi
  if [ "$(bash hack/build-node-images.sh --status)" = build ]; then
    step "node images" as_root bash hack/build-node-images.sh
  fi
fi
log "ok ($TARGET$([ "$NODE" = 1 ] && echo ', node'))"
