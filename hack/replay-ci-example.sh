#!/usr/bin/env bash
# Replay the example GitHub Actions workflow (examples/ci/github-actions.yaml) the way its first run on
# GitHub goes: its job's steps, in order, in a fresh Debian 12 root filesystem with nothing cached.
#
#   the container   mmdebstrap --variant=minbase bookworm (what the debian:12 image is made of), from this
#                   machine's apt sources; run with bubblewrap as root with all capabilities (apt, the
#                   sandbox the agents run in), its own PID namespace, the machine's network;
#   the steps       hack/ci_example_job.py turns the workflow into one script: each `run:` step as written,
#                   its `if:`, `${{ ... }}`, $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY as GitHub gives them;
#                   the checkout is a clone of this checkout's HEAD commit (commit first: uncommitted
#                   changes are not replayed), the cache always misses, the JUnit artifact and the SARIF
#                   file are copied out;
#   the time limit  the job's timeout-minutes.
#
#   sudo hack/replay-ci-example.sh                       the whole job (cold: builds Kubernetes)
#   sudo hack/replay-ci-example.sh --until Install       stop after the step whose name starts with this
#   sudo hack/replay-ci-example.sh --stop-at REGEX       stop as soon as the job's output matches REGEX
#                                                        (e.g. 'build-kube: building kube-apiserver')
#   OASIS_REPLAY_DIR=DIR   where the root filesystem, job script, log and artifacts go (default: a new
#                          directory under /var/tmp; kept afterwards, its path printed; ~6 GB after a full run)
#   OASIS_REPLAY_BASE=DIR  where the bare Debian 12 tarball is kept between replays (default
#                          /var/tmp/oasis-ci-replay-base; made by mmdebstrap on first use, ~4 min)
# Exit status: the job's (0 when every step that ran passed), 124 when the time limit was reached, 0 when
# --stop-at matched.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
WORKFLOW=examples/ci/github-actions.yaml

UNTIL=(); STOP_AT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --until) UNTIL=(--until "$2"); shift 2 ;;
    --stop-at) STOP_AT="$2"; shift 2 ;;
    *) echo "replay-ci-example: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
log() { echo "replay-ci-example: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { log "needs root (mmdebstrap, bubblewrap with capabilities)"; exit 1; }
missing=()
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v bwrap >/dev/null || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
PY="${PYTHON:-}"
[ -n "$PY" ] || { if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi; }

WORK="${OASIS_REPLAY_DIR:-$(mktemp -d /var/tmp/oasis-ci-replay.XXXXXX)}"
ROOTFS="$WORK/rootfs"; OUT="$WORK/out"
mkdir -p "$OUT"
"$PY" hack/ci_example_job.py "$WORKFLOW" "${UNTIL[@]}" >"$OUT/job.sh"
minutes="$("$PY" hack/ci_example_job.py "$WORKFLOW" --timeout-minutes)"
# The commit a checkout would get, as a bundle the container clones (a linked worktree's .git is outside).
git rev-parse HEAD >"$OUT/source.commit"
git bundle create -q "$OUT/source.bundle" HEAD
[ -z "$(git status --porcelain --untracked-files=no)" ] || log "note: uncommitted changes are not replayed"

# The bare Debian 12 is made once and kept as a tarball (Debian's packages only, nothing of the project);
# every replay unpacks a fresh copy of it.
BASE="${OASIS_REPLAY_BASE:-/var/tmp/oasis-ci-replay-base}/bookworm-minbase.tar"
if [ ! -f "$BASE" ]; then
  SOURCES=/etc/apt/sources.list.d/debian.sources
  [ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list
  log "mmdebstrap bookworm (minbase) into $BASE"
  started=$(date +%s)
  mkdir -p "$(dirname "$BASE")"
  mmdebstrap --quiet --mode=root --variant=minbase --aptopt='Acquire::Retries "3"' bookworm "$BASE.tmp.tar" "$SOURCES"
  mv "$BASE.tmp.tar" "$BASE"
  log "bare Debian 12 made in $(( $(date +%s) - started ))s"
fi
rm -rf "$ROOTFS"
mkdir -p "$ROOTFS"
tar -xf "$BASE" -C "$ROOTFS"
mkdir -p "$ROOTFS/replay"
# This machine reaches the registries through a TLS proxy whose CA only the machine's own bundle holds,
# and its environment points every client at that bundle (SSL_CERT_FILE, PIP_CERT, ...). The replay
# passes the same: the bundle, read-only at /etc/ssl/machine-ca.crt, and those variables pointing at it.
# On GitHub, where the registries' certificates are public ones, none of this is set.
CA_ARGS=(); CA_VARS=()
for var in SSL_CERT_FILE PIP_CERT CURL_CA_BUNDLE REQUESTS_CA_BUNDLE GIT_SSL_CAINFO NODE_EXTRA_CA_CERTS; do
  file="${!var:-}"
  if [ -n "$file" ] && [ -f "$file" ]; then
    [ ${#CA_ARGS[@]} -gt 0 ] || CA_ARGS+=(--ro-bind "$file" /etc/ssl/machine-ca.crt)
    CA_ARGS+=(--setenv "$var" /etc/ssl/machine-ca.crt); CA_VARS+=("$var")
  fi
done
[ ${#CA_VARS[@]} -eq 0 ] || log "the machine's CA bundle is passed in, with ${CA_VARS[*]}"

log "job script $OUT/job.sh, log $OUT/replay.log, time limit ${minutes} min"
started=$(date +%s)
: >"$OUT/replay.log"
set +e
timeout "${minutes}m" bwrap --bind "$ROOTFS" / --proc /proc --dev /dev \
  --ro-bind /etc/resolv.conf /etc/resolv.conf --bind "$OUT" /replay \
  --unshare-pid --unshare-ipc --unshare-uts --hostname ci-replay --die-with-parent --cap-add ALL \
  --clearenv --setenv PATH /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --setenv LANG C.UTF-8 --setenv DEBIAN_FRONTEND noninteractive "${CA_ARGS[@]}" \
  -- bash /replay/job.sh >"$OUT/replay.log" 2>&1 &
job=$!
tail -n +1 -F --pid="$job" "$OUT/replay.log" 2>/dev/null &
follower=$!
stopped=0
while kill -0 "$job" 2>/dev/null; do
  if [ -n "$STOP_AT" ] && grep -qE -- "$STOP_AT" "$OUT/replay.log"; then
    stopped=1
    kill -TERM "$job" 2>/dev/null
    break
  fi
  sleep 2
done
wait "$job"; rc=$?
wait "$follower" 2>/dev/null
set -e
took=$(( $(date +%s) - started ))
if [ "$stopped" = 1 ]; then
  log "stopped after $((took / 60))m$((took % 60))s: the output matched '$STOP_AT' ($(grep -m1 -E -- "$STOP_AT" "$OUT/replay.log"))"
  rc=0
elif [ "$rc" = 124 ]; then
  log "the job's time limit (${minutes} min) was reached"
else
  log "job exit $rc after $((took / 60))m$((took % 60))s; artifacts in $OUT/artifacts, summary $OUT/step-summary.md"
fi
log "kept: $WORK (remove it when done)"
exit "$rc"
