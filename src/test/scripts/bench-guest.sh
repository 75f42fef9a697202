#!/usr/bin/env bash
# `make bench-guest`: fdpblock bench's placement cases inside the emulated NVMe FDP guest whose kernel has
# block-layer write streams (the device tier's `streams` guest, test-images/): the same write job as plain
# io_uring on /dev/nvme0n1, with a write stream, and as NVMe passthru on /dev/ng0n1 with the same placement
# id. Boots the guest once (container, QEMU under TCG), runs target/fdpblock.jar there with the JDK given
# (shared read-only) and leaves the bench's output in target/bench-guest/ (bench-results.json, the console).
#
# Usage: src/test/scripts/bench-guest.sh JDK_HOME [bench options...]
#   default options: --cases placement --seconds 3 --ramp 2 --rounds 5 --size 1073741824
# Environment: FDP_* of run-guest (device geometry, FDP_MEM, FDP_SMP; see test-images/run-guest),
#   FDPBLOCK_GUEST (default streams), FDPBLOCK_BENCH_JAVA_OPTS (guest JVM options; default C1 only and
#   SerialGC, as the device tier: C2 is very slow under emulation and would compete with the measured I/O).
set -euo pipefail
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
jdk=${1:?usage: bench-guest.sh JDK_HOME [bench options...]}
shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--cases placement --seconds 3 --ramp 2 --rounds 5 --size 1073741824)
jar=$project/target/fdpblock.jar
[ -f "$jar" ] || { echo "bench-guest: $jar is missing: run make build first" >&2; exit 3; }
jdk=$(readlink -f "$jdk")

bash "$project/test-images/build.sh" # the guest image: built when missing, reused when present
image=$(bash "$project/test-images/build.sh" --print-tag | tail -n1)
work=$project/target/bench-guest
rm -rf "$work" && mkdir -p "$work"
quoted=$(printf " %q" "${args[@]}")
cat >"$work/command" <<CMD
#!/bin/sh
# Written by bench-guest.sh: fdpblock bench in guest \$FDPBLOCK_GUEST.
cd /fdp/project || exit 125
echo "fdp-guest: fdpblock bench${quoted}"
exec /fdp/jdk/bin/java ${FDPBLOCK_BENCH_JAVA_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx768m} \\
  --enable-native-access=ALL-UNNAMED -Djava.io.tmpdir=/tmp -Djdk.console=java.base \\
  -jar target/fdpblock.jar bench --device /dev/ng0n1 --device /dev/nvme0n1 --out /fdp/work/bench${quoted}
CMD

env_args=()
while IFS='=' read -r k _; do
  case "$k" in FDP_GUEST) ;; FDP_*) env_args+=(-e "$k") ;; esac
done < <(env)
echo "bench-guest: $image, guest ${FDPBLOCK_GUEST:-streams}, output in $work"
docker run --rm --network none "${env_args[@]}" -e "FDP_GUEST=${FDPBLOCK_GUEST:-streams}" \
  -e "FDP_TIMEOUT=${FDP_TIMEOUT:-3000}" \
  -v "$project:/fdp/project:ro" -v "$jdk:/fdp/jdk:ro" -v "$work:/fdp/work" \
  "$image" /opt/fdp/run-guest >"$work/container.log" 2>&1 || true
sed -n '/fdp-guest: fdpblock bench/,$p' "$work/console.log" 2>/dev/null | grep -v '^\[ *[0-9.]*\] ' || cat "$work/container.log"
rc=$(cat "$work/exit-code" 2>/dev/null || echo none)
if [ "$rc" != 0 ]; then
  echo "bench-guest: the bench in the guest did not succeed (exit code $rc); the guest's console: $work/console.log" >&2
  exit 1
fi
echo "bench-guest: figures in $work/bench/bench-results.json"
