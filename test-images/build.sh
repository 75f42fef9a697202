#!/usr/bin/env bash
# Builds the container image of the emulated NVMe FDP guest (device test tier). `make test-image`.
#
#   build.sh               make sure a container engine runs, build the base and guest images if
#                          missing (reuse them when present); any failure exits non-zero
#   build.sh --if-possible the same, but never fails: where the tier cannot run (not root, no engine)
#                          or the build failed, it prints why, records it for the host test
#                          (target/device-tier/status) and exits 0. `make test` uses this.
#   build.sh --print-tag   print the guest image's name and exit (no engine needed)
#
# Everything comes from local parts and Debian's archive: no registry. The base image is
# `debootstrap --variant=minbase <suite>` imported with `docker import`; the guest image is built
# FROM it (Dockerfile + prepare-image.sh here) and named after a hash of this folder, so any change
# here builds a new one and an unchanged folder reuses the image.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
STATUS_DIR=${FDPBLOCK_STATUS_DIR:-$ROOT/target/device-tier}
STATUS=$STATUS_DIR/status
DOCKERD_LOG=${FDPBLOCK_DOCKERD_LOG:-/var/log/fdpblock-dockerd.log}
export DOCKER_BUILDKIT=0 DEBIAN_FRONTEND=noninteractive

mode=build
case "${1:-}" in
  "") ;;
  --if-possible) mode=if-possible ;;
  --print-tag) mode=print-tag ;;
  -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
  *) echo "build.sh: unknown argument '$1' (--if-possible, --print-tag)" >&2; exit 2 ;;
esac

log() { echo "test-image: $*"; }

# The Debian suite to build from: the host's own when it is one this tier knows (bookworm: QEMU and
# the 6.12 kernel from bookworm-backports; trixie: both in main), else trixie; the second guest's
# kernel (>= 6.16) comes from trixie-backports either way. FDPBLOCK_SUITE overrides.
suite() {
  local codename=""
  if [ -r /etc/os-release ]; then codename=$(. /etc/os-release; echo "${VERSION_CODENAME:-}"); fi
  case "${FDPBLOCK_SUITE:-$codename}" in
    bookworm) echo bookworm ;;
    trixie) echo trixie ;;
    *) echo "${FDPBLOCK_SUITE:-trixie}" ;;
  esac
}
SUITE=$(suite)
BASE_IMAGE=fdpblock/base:$SUITE
HASH=$(cd "$HERE" && find . -type f ! -name '*~' ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
IMAGE=fdpblock/fdp-guest:$SUITE-$HASH

if [ "$mode" = print-tag ]; then echo "$IMAGE"; exit 0; fi

record() { # state reason...
  RECORDED=1
  mkdir -p "$STATUS_DIR" 2>/dev/null || return 0
  { echo "state=$1"; echo "image=$IMAGE"; shift; echo "reason=$*"; echo "time=$(date -Is)"; } >"$STATUS" 2>/dev/null || true
}
# The tier cannot run on this machine: skip (in --if-possible mode) with the reason.
unavailable() {
  log "device tier unavailable: $*" >&2
  record unavailable "$*"
  if [ "$mode" = if-possible ]; then exit 0; else exit 1; fi
}
failed() {
  log "FAILED: $*" >&2
  record failed "$*"
  if [ "$mode" = if-possible ]; then exit 0; else exit 1; fi
}
step="start"
trap 'rc=$?; [ $rc -ne 0 ] && [ -z "${RECORDED:-}" ] && failed "step \"$step\" exited with $rc (see the output above)"' EXIT

as_root() { [ "$(id -u)" -eq 0 ]; }
engine_up() { timeout 20 docker info >/dev/null 2>&1; }
dockerd_running() { grep -qsx dockerd /proc/[0-9]*/comm; }

apt_install() {
  log "apt-get install $*"
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# (a) a running container engine
ensure_engine() {
  step="container engine"
  if engine_up; then return 0; fi
  if ! as_root; then
    unavailable "not root and no container engine is reachable (docker info: $(docker info 2>&1 | tail -n1)); run as root, or start dockerd and give this user access to it"
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    # A docker CLI alone (without dockerd) does not count: install Debian's engine.
    apt_install docker.io || failed "apt-get install docker.io failed"
    hash -r
  fi
  # Debian's docker.io postinst may have started it through its init script.
  if ! engine_up; then
    if ! dockerd_running; then
      rm -f /var/run/docker.sock /var/run/docker.pid
      log "starting dockerd (log: $DOCKERD_LOG)"
      # No bridge and no iptables rules: the tier needs no container network (the image is built
      # with --network host, the guest's container runs with --network none), and so the daemon
      # leaves the host's firewall alone (with its bridge, dockerd sets the FORWARD policy to DROP).
      # fd 9, the build lock, must not leak into the daemon.
      setsid dockerd --bridge=none --iptables=false --ip-masq=false \
        >>"$DOCKERD_LOG" 2>&1 </dev/null 9>&- &
    fi
    for _ in $(seq 1 120); do
      engine_up && break
      dockerd_running || break
      sleep 0.5
    done
  fi
  engine_up || unavailable "dockerd does not start here: $(tail -n 3 "$DOCKERD_LOG" 2>/dev/null | tr '\n' ' ')"
}

# Can this engine run a container at all? (Not where e.g. namespaces or cgroups are not allowed.)
engine_runs_containers() {
  step="engine smoke test"
  local out
  out=$(docker run --rm --network none "$BASE_IMAGE" true 2>&1) \
    || unavailable "the container engine cannot run a container here: $(echo "$out" | tail -n1)"
}

# The Debian mirror the host's apt uses for $SUITE (debootstrap and the image use the same).
mirror() {
  local m
  m=$(grep -rhsE '^(deb |URIs:)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
      | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ')
  echo "${m:-http://deb.debian.org/debian}"
}

# (b) the base image, from debootstrap
ensure_base() {
  step="base image $BASE_IMAGE"
  if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then return 0; fi
  as_root || unavailable "not root: cannot debootstrap the base image $BASE_IMAGE"
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  local dir t0=$SECONDS m
  m=$(mirror)
  dir=$(mktemp -d /var/tmp/fdpblock-base.XXXXXX)
  log "debootstrap --variant=minbase $SUITE ($m) -> $BASE_IMAGE"
  if ! debootstrap --variant=minbase "$SUITE" "$dir" "$m" >"$dir.log" 2>&1; then
    tail -n 20 "$dir.log" >&2; rm -rf "$dir" "$dir.log"; failed "debootstrap $SUITE failed"
  fi
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir.log"
  tar -C "$dir" -c . | docker import -c 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$dir"
  log "base image $BASE_IMAGE in $((SECONDS - t0)) s"
}

# (c) the guest image
ensure_image() {
  step="guest image $IMAGE"
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "reusing $IMAGE"
    return 0
  fi
  local t0=$SECONDS
  log "building $IMAGE from $BASE_IMAGE (QEMU, two guest kernels, initramfs)"
  docker build --network host --force-rm -t "$IMAGE" \
      --label io.fdpblock.test-images="$HASH" \
      --build-arg BASE="$BASE_IMAGE" --build-arg SUITE="$SUITE" "$HERE" \
    || failed "docker build of $IMAGE failed (see the output above)"
  log "built $IMAGE in $((SECONDS - t0)) s"
  # Older guest images (from earlier contents of test-images/) are dead weight.
  docker image ls --format '{{.Repository}}:{{.Tag}}' fdpblock/fdp-guest | grep "^fdpblock/fdp-guest:$SUITE-" | grep -vxF "$IMAGE" \
    | xargs -r docker rmi >/dev/null 2>&1 || true
}

main() {
  local lock=/var/tmp/fdpblock-test-image.lock
  { [ -w "$lock" ] || { [ ! -e "$lock" ] && [ -w /var/tmp ]; }; } || lock=/tmp/fdpblock-test-image.$(id -u).lock
  exec 9>"$lock"
  flock 9 # one build at a time
  ensure_engine
  ensure_base
  engine_runs_containers
  ensure_image
  record ok "image $IMAGE is ready"
  log "ready: $IMAGE"
}
main
