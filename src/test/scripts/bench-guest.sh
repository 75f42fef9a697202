#!/usr/bin/env bash
# `make bench-guest`: fdpblock bench's NVMe passthru cases (uring_cmd on /dev/ng0n1) side by side with fio's
# io_uring_cmd engine, inside the emulated NVMe FDP guest of the device tier (test-images/; fio is in the
# guest image). Boots the guest once (container, QEMU under TCG), runs target/fdpblock.jar there with the
# JDK given (shared read-only) and leaves the bench's output in target/bench-guest/ (bench/bench-results.json,
# fio's JSON, the guest's console). The guest is emulated: only the ratios ours/fio mean anything.
#
# Usage: src/test/scripts/bench-guest.sh JDK_HOME [bench options...]
#   default options: --cases nvme- --seconds 3 --ramp 3 --rounds 3 --size 268435456 (the ramp lets C2 compile)
# Environment: FDP_* of run-guest (device geometry, FDP_MEM, FDP_SMP; see test-images/run-guest),
#   FDPBLOCK_GUEST (default base: the 6.12 kernel), FDPBLOCK_BENCH_JAVA_OPTS (guest JVM options; default
#   SerialGC and the full JIT: unlike the device tier's tests, a bench runs the same loop for seconds, and C1
#   code alone would spend the emulated CPU that fio's compiled C does not; the ramp covers C2's compiling).
set -euo pipefail
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
jdk=${1:?usage: bench-guest.sh JDK_HOME [bench options...]}
shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--cases nvme- --seconds 3 --ramp 3 --rounds 3 --size 268435456)
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
echo "fdp-guest: fdpblock bench --device /dev/ng0n1${quoted}"
exec /fdp/jdk/bin/java ${FDPBLOCK_BENCH_JAVA_OPTS:--XX:+UseSerialGC -Xmx768m} \\
  --enable-native-access=ALL-UNNAMED -Djava.io.tmpdir=/tmp -Djdk.console=java.base \\
  -jar target/fdpblock.jar bench --device /dev/ng0n1 --out /fdp/work/bench${quoted}
CMD

env_args=()
while IFS='=' read -r k _; do
  case "$k" in FDP_GUEST) ;; FDP_*) env_args+=(-e "$k") ;; esac
done < <(env)
echo "bench-guest: $image, guest ${FDPBLOCK_GUEST:-base}, output in $work"
docker run --rm --network none "${env_args[@]}" -e "FDP_GUEST=${FDPBLOCK_GUEST:-base}" \
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
