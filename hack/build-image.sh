#!/usr/bin/env bash
# Build the operator image without a container engine, the way the Dockerfile describes it:
#   base   Debian 12 (bookworm), minbase plus python3 and ca-certificates, made from Debian's packages by
#          mmdebstrap with this machine's apt sources (no image registry is needed);
#   build  the same plus python3-venv: a virtualenv at /opt/venv with the operator's wheel and its
#          dependencies (built here by pip from the checkout), byte-compiled;
#   image  the base with /opt/venv, the shipped profile at /opt/oasis/profiles/software-infrastructure,
#          user and group 65532 (oasis), entrypoint `oasis operator`, packed by umoci as an OCI image.
# tests/unit/chart/test_image_recipe.py keeps this recipe and the Dockerfile equal (base, packages, user,
# entrypoint, environment, files); tests/integration/chart/test_image.py runs the operator from the image.
#
# Output, cached like the Kubernetes binaries and keyed by every input (this script, pyproject.toml,
# README.md, operator/, profiles/):
#   $OASIS_IMAGE_CACHE/<key>/oci/                 OCI image layout (tag: the project's version)
#   $OASIS_IMAGE_CACHE/<key>/oasis-operator.oci.tar  the same as one archive (skopeo/podman/crane load it)
#   $OASIS_IMAGE_CACHE/<key>/bundle/              the image unpacked by umoci: rootfs/ and config.json
# The two Debian root filesystems are cached apart (keyed by suite and packages), so a code change costs
# only the Python layer. `--path` prints the output directory for the current inputs and builds nothing.
# Needs root, mmdebstrap and umoci (Debian packages; installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=bookworm
RUN_PACKAGES=(python3 ca-certificates)
BUILD_PACKAGES=(python3 python3-venv ca-certificates)
IMAGE_UID=65532
IMAGE_USER=oasis
VENV=/opt/venv
PROFILE_DIR=/opt/oasis/profiles/software-infrastructure
ENTRYPOINT=(oasis operator)
CMD=(--all-namespaces --bind=0.0.0.0 --log-format=json)
PORTS=(8443 9090 8080)
IMAGE_ENV=(
  "PATH=$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  "OASIS_PROFILE_DIR=$PROFILE_DIR"
  "PYTHONDONTWRITEBYTECODE=1"
  "PYTHONUNBUFFERED=1"
  "HOME=/tmp"
)
# Like Debian's slim images: no manuals, documentation (copyright notices kept) or translations.
SLIM_OPTS=(
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/locale/*'
)
CACHE="${OASIS_IMAGE_CACHE:-${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/image}"
VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)"

if [ "${1:-}" = "--recipe" ]; then  # the facts the drift test compares with the Dockerfile
  printf 'suite=%s\nrun_packages=%s\nbuild_packages=%s\nuid=%s\nuser=%s\nvenv=%s\nprofile_dir=%s\n' \
    "$SUITE" "${RUN_PACKAGES[*]}" "${BUILD_PACKAGES[*]}" "$IMAGE_UID" "$IMAGE_USER" "$VENV" "$PROFILE_DIR"
  printf 'entrypoint=%s\ncmd=%s\nports=%s\n' "${ENTRYPOINT[*]}" "${CMD[*]}" "${PORTS[*]}"
  for e in "${IMAGE_ENV[@]}"; do printf 'env=%s\n' "$e"; done
  exit 0
fi

inputs_key() {
  { sha256sum hack/build-image.sh pyproject.toml README.md
    find operator profiles -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path '*.egg-info/*' -print0 \
      | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16
}
OUT="$CACHE/$(inputs_key)"
if [ "${1:-}" = "--path" ]; then echo "$OUT"; exit 0; fi
rootfs_dir() {  # rootfs_dir NAME PACKAGES...: where that cached Debian root filesystem lives
  local name="$1"; shift
  echo "$CACHE/debian/$name-$SUITE-$(printf '%s\n' "$SUITE" "$@" "${SLIM_OPTS[@]}" | sha256sum | cut -c1-12)"
}
# --status: `cached` (this checkout's image is built), `layers` (only the Python layer to build: the Debian
# root filesystems are cached) or `cold` (nothing cached: two mmdebstrap runs first). Builds nothing.
if [ "${1:-}" = "--status" ]; then
  if [ -f "$OUT/done" ]; then echo cached
  elif [ -f "$(rootfs_dir run "${RUN_PACKAGES[@]}").done" ] && [ -f "$(rootfs_dir build "${BUILD_PACKAGES[@]}").done" ]; then
    echo layers
  else echo cold; fi
  exit 0
fi
if [ -f "$OUT/done" ]; then echo "build-image: cached $OUT" >&2; exit 0; fi

[ "$(id -u)" -eq 0 ] || { echo "build-image: needs root (mmdebstrap, files owned by root in the image)" >&2; exit 1; }
missing=()
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v umoci >/dev/null || missing+=(umoci)
command -v bwrap >/dev/null || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# This machine's own Debian sources (deb822 or one-line), so the image comes from where apt does.
SOURCES=/etc/apt/sources.list.d/debian.sources
[ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list

base_rootfs() {  # base_rootfs NAME PACKAGES...: a cached Debian root filesystem, path on stdout
  local name="$1"; shift
  local dir; dir="$(rootfs_dir "$name" "$@")"
  if [ ! -f "$dir.done" ]; then
    rm -rf "$dir"
    mkdir -p "$CACHE/debian"
    echo "build-image: mmdebstrap $SUITE ($name: $*)" >&2
    local IFS=,
    mmdebstrap --quiet --mode=root --variant=minbase --include="$*" "${SLIM_OPTS[@]}" \
      --aptopt='Acquire::Retries "3"' "$SUITE" "$dir" "$SOURCES" >&2
    rm -rf "$dir/var/lib/apt/lists"/* "$dir/var/cache/apt"/*.bin
    touch "$dir.done"
  fi
  echo "$dir"
}

RUN_BASE="$(base_rootfs run "${RUN_PACKAGES[@]}")"
BUILD_BASE="$(base_rootfs build "${BUILD_PACKAGES[@]}")"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/oasis-image.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "build-image: wheels" >&2
# The Dockerfile's build context, and nothing else: the package is built from a clean copy.
mkdir -p "$WORK/src"
cp -a pyproject.toml README.md operator "$WORK/src/"
find "$WORK/src" \( -name __pycache__ -o -name '*.egg-info' \) -prune -exec rm -rf {} +
env -u PIP_FIND_LINKS python3 -m pip wheel -q --wheel-dir "$WORK/wheels" "$WORK/src" >&2

echo "build-image: $VENV in the build stage" >&2
cp -a "$BUILD_BASE" "$WORK/build"
in_root() {  # in_root ROOTFS CMD...: run a command inside a root filesystem (writable), no network needed
  local root="$1"; shift
  bwrap --bind "$root" / --proc /proc --dev /dev --tmpfs /tmp --ro-bind "$WORK/wheels" /wheels \
    --clearenv --setenv PATH /usr/sbin:/usr/bin:/sbin:/bin --setenv HOME /root --setenv LC_ALL C.UTF-8 -- "$@"
}
in_root "$WORK/build" python3 -m venv "$VENV"
in_root "$WORK/build" "$VENV/bin/pip" install -q --no-index --find-links /wheels --no-compile \
  --disable-pip-version-check oasis-operator
in_root "$WORK/build" "$VENV/bin/python" -m compileall -q "$VENV/lib"

echo "build-image: image filesystem" >&2
ROOT="$WORK/rootfs"
cp -a "$RUN_BASE" "$ROOT"
cp -a "$WORK/build$VENV" "$ROOT$VENV"
mkdir -p "$ROOT$PROFILE_DIR"
cp -a profiles/software-infrastructure/. "$ROOT$PROFILE_DIR/"
find "$ROOT$PROFILE_DIR" -name __pycache__ -prune -exec rm -rf {} +
chown -R 0:0 "$ROOT$PROFILE_DIR"
in_root "$ROOT" groupadd --system --gid "$IMAGE_UID" "$IMAGE_USER"
in_root "$ROOT" useradd --system --uid "$IMAGE_UID" --gid "$IMAGE_UID" --home-dir /tmp --no-create-home \
  --shell /usr/sbin/nologin "$IMAGE_USER"

echo "build-image: OCI image (umoci)" >&2
rm -rf "$OUT"
mkdir -p "$OUT"
umoci init --layout "$OUT/oci"
umoci new --image "$OUT/oci:$VERSION"
umoci unpack --image "$OUT/oci:$VERSION" "$WORK/bundle" >/dev/null
rm -rf "$WORK/bundle/rootfs"
mv "$ROOT" "$WORK/bundle/rootfs"
umoci repack --image "$OUT/oci:$VERSION" "$WORK/bundle"
config=(--config.user "$IMAGE_UID:$IMAGE_UID" --config.workingdir /)
config+=(--config.entrypoint "${ENTRYPOINT[0]}")
for a in "${ENTRYPOINT[@]:1}"; do config+=(--config.entrypoint "$a"); done
for a in "${CMD[@]}"; do config+=(--config.cmd "$a"); done
for e in "${IMAGE_ENV[@]}"; do config+=(--config.env "$e"); done
for p in "${PORTS[@]}"; do config+=(--config.exposedports "$p/tcp"); done
umoci config --image "$OUT/oci:$VERSION" "${config[@]}" \
  --config.label "org.opencontainers.image.title=oasis-operator" \
  --config.label "org.opencontainers.image.version=$VERSION"
umoci gc --layout "$OUT/oci"
tar -C "$OUT/oci" -cf "$OUT/oasis-operator.oci.tar" .
# What the test runs: the image as a runtime would unpack it (rootfs/ plus the runtime config.json).
umoci unpack --image "$OUT/oci:$VERSION" "$OUT/bundle" >/dev/null
echo "$VERSION" > "$OUT/done"
# Keep the two newest images; older keys are earlier checkouts.
ls -1dt "$CACHE"/*/done 2>/dev/null | tail -n +3 | while read -r old; do rm -rf "$(dirname "$old")"; done
echo "build-image: $OUT ($(du -sh "$OUT/oasis-operator.oci.tar" | cut -f1) archive)" >&2
