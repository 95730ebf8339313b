#!/usr/bin/env bash
# Measure a cold `make test` (or `make demo`, or its install alone, `deps`) the way the README's figures are taken: a
# fresh clone of this checkout's HEAD commit, every cache the build and the tests use pointed at a new
# empty directory, the machine's own caches left as they are, `/usr/bin/time -v` around the command.
#
#   sudo hack/measure-cold.sh [test|demo|deps|test-deps] [--without-machine-go]
#
#   --without-machine-go   hide the machine's Go (/usr/local/go, /usr/lib/go*, go on PATH) so the pinned
#                          toolchain is fetched as on a fresh Debian 12 (runs the command under bubblewrap)
# Empty for the run: OASIS_CACHE_ROOT (Go toolchain, runner, image), OASIS_KUBE_CACHE (Kubernetes), GOPATH,
# GOMODCACHE and GOCACHE (the Kubernetes build's ~0.8 GB of modules and ~4 GB of build cache), pip's cache.
# Left as on the machine: Debian packages already installed, apt's package cache, the machine's CA bundle.
# At the end it prints each install step's wall time (install-deps' "done in" lines), pytest's closing
# line, the whole wall time and the peak resident memory, ready to be copied into the README. Everything
# is kept under the printed directory (remove it afterwards; ~8 GB after `test`).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${1:-test}"
HIDE_GO=0; [ "${2:-}" = --without-machine-go ] && HIDE_GO=1
case "$TARGET" in test|demo|deps|test-deps) ;; *) echo "measure-cold: target is test, demo, deps or test-deps" >&2; exit 2 ;; esac

WORK="$(mktemp -d /var/tmp/oasis-cold.XXXXXX)"
# mktemp makes it 0700: the command agents of the tests run as an unprivileged user and must reach the
# clone's code (bound read-only into their sandbox), as in any checkout.
chmod 755 "$WORK"
git clone -q --no-hardlinks "$PWD" "$WORK/clone"
git -C "$WORK/clone" checkout -q "$(git rev-parse HEAD)"
. operator/oasis_operator/localcluster/release.env
export OASIS_CACHE_ROOT="$WORK/cache"
export OASIS_KUBE_CACHE="$WORK/cache/kube-${KUBE_VERSION#v}"
export GOPATH="$WORK/go" GOMODCACHE="$WORK/go/pkg/mod" GOCACHE="$WORK/go-build"
export PIP_NO_CACHE_DIR=1
unset OASIS_GO
mkdir -p "$OASIS_CACHE_ROOT"
echo "measure-cold: make $TARGET in $WORK/clone (commit $(git rev-parse --short HEAD)), caches in $WORK" >&2
echo "measure-cold: started $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

run=(/usr/bin/time -v make -C "$WORK/clone" "$TARGET")
if [ "$HIDE_GO" = 1 ]; then
  hide=(--tmpfs /usr/local/go)
  for d in /usr/lib/go /usr/lib/go-*; do [ -d "$d" ] && hide+=(--tmpfs "$d"); done
  path="$(echo "$PATH" | tr ':' '\n' | grep -v -E '/go/bin$|/usr/local/go' | paste -sd:)"
  run=(bwrap --dev-bind / / "${hide[@]}" --setenv PATH "$path" -- "${run[@]}")
fi
set +e
"${run[@]}" >"$WORK/make.log" 2>&1
rc=$?
set -e
echo "measure-cold: ended $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), exit $rc" >&2
# The demo leaves its control plane, operator and agents running for a look around: stopped here.
[ "$TARGET" != demo ] || make -C "$WORK/clone" demo-down >>"$WORK/make.log" 2>&1 || true
echo "--- summary (full log: $WORK/make.log)"
grep -E '^install-(deps|go): (.*done in|for make|  - |no Go)|^build-kube: Go:' "$WORK/make.log" || true
grep -E '^=+ .*(passed|failed).* in [0-9.]+s' "$WORK/make.log" | tail -1 || true
grep -E '^(== demo-|safety: )' "$WORK/make.log" || true
grep -E 'Elapsed \(wall clock\)|Maximum resident set size' "$WORK/make.log" | tail -2 || true
echo "kept: $WORK"
exit "$rc"
