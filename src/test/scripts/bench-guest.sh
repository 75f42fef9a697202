#!/usr/bin/env bash
# `make bench-guest`: fdpblock bench inside the device tier's emulated NVMe FDP guest (test-images/), one
# suite per guest boot (container, QEMU under TCG), target/fdpblock.jar run there with the JDK given (shared
# read-only). The guest is emulated: only the ratios (ours/fio, or between our sides) mean anything.
#
#   passthru   the NVMe passthru cases (uring_cmd on /dev/ng0n1) side by side with fio's io_uring_cmd
#              engine (fio is in the guest image). Guest `base` (the 6.12 kernel). Default options:
#              --cases nvme- --seconds 3 --ramp 3 --rounds 3 --size 268435456 (the ramp lets C2 compile).
#              JVM: SerialGC with the full JIT: a bench runs the same loop for seconds, and C1 code alone
#              would spend the emulated CPU that fio's compiled C does not.
#   placement  the placement cases: the same write job as plain io_uring on /dev/nvme0n1, with a write
#              stream, and as passthru on /dev/ng0n1 with the same placement id (all ours). Guest `streams`
#              (a kernel >= 6.16: block-layer write streams). Default options: --cases placement --seconds 3
#              --ramp 2 --rounds 5 --size 1073741824. JVM: C1 only and SerialGC, as the device tier (its
#              three sides run the same JVM: C2 compiling under emulation would land in one side's window).
#
# Usage: src/test/scripts/bench-guest.sh JDK_HOME SUITE [bench options...]   (SUITE: passthru or placement)
#   bench options replace the suite's defaults (--device and --out are always given).
# Output: target/bench-guest/SUITE/ (bench/bench-results.json, fio's JSON, the guest's console).
# Environment: FDP_* of run-guest (device geometry, FDP_MEM, FDP_SMP; see test-images/run-guest),
#   FDPBLOCK_GUEST (replaces the suite's guest), FDPBLOCK_BENCH_JAVA_OPTS (replaces the suite's JVM options).
set -euo pipefail
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
usage="usage: bench-guest.sh JDK_HOME passthru|placement [bench options...]"
jdk=${1:?$usage}
suite=${2:?$usage}
shift 2
args=("$@")
case "$suite" in
  passthru)
    guest=base
    devices="--device /dev/ng0n1"
    java_opts="-XX:+UseSerialGC -Xmx768m"
    defaults=(--cases nvme- --seconds 3 --ramp 3 --rounds 3 --size 268435456) ;;
  placement)
    guest=streams
    devices="--device /dev/ng0n1 --device /dev/nvme0n1"
    java_opts="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx768m"
    defaults=(--cases placement --seconds 3 --ramp 2 --rounds 5 --size 1073741824) ;;
  *) echo "bench-guest: suite '$suite' is not one of passthru, placement; $usage" >&2; exit 2 ;;
esac
[ ${#args[@]} -gt 0 ] || args=("${defaults[@]}")
guest=${FDPBLOCK_GUEST:-$guest}
java_opts=${FDPBLOCK_BENCH_JAVA_OPTS:-$java_opts}
jar=$project/target/fdpblock.jar
[ -f "$jar" ] || { echo "bench-guest: $jar is missing: run make build first" >&2; exit 3; }
jdk=$(readlink -f "$jdk")

bash "$project/test-images/build.sh" # the guest image: built when missing, reused when present
image=$(bash "$project/test-images/build.sh" --print-tag | tail -n1)
work=$project/target/bench-guest/$suite
rm -rf "$work" && mkdir -p "$work"
quoted=$(printf " %q" "${args[@]}")
cat >"$work/command" <<CMD
#!/bin/sh
# Written by bench-guest.sh: fdpblock bench, suite $suite, in guest \$FDPBLOCK_GUEST.
cd /fdp/project || exit 125
echo "fdp-guest: fdpblock bench $devices${quoted}"
exec /fdp/jdk/bin/java $java_opts -XX:ErrorFile=/fdp/work/hs_err_pid%p.log \\
  --enable-native-access=ALL-UNNAMED -Djava.io.tmpdir=/tmp -Djdk.console=java.base \\
  -jar target/fdpblock.jar bench $devices --out /fdp/work/bench${quoted}
CMD

env_args=()
while IFS='=' read -r k _; do
  case "$k" in FDP_GUEST) ;; FDP_*) env_args+=(-e "$k") ;; esac
done < <(env)
echo "bench-guest: suite $suite, $image, guest $guest, output in $work"
docker run --rm --network none "${env_args[@]}" -e "FDP_GUEST=$guest" \
  -e "FDP_TIMEOUT=${FDP_TIMEOUT:-3000}" \
  -v "$project:/fdp/project:ro" -v "$jdk:/fdp/jdk:ro" -v "$work:/fdp/work" \
  "$image" /opt/fdp/run-guest >"$work/container.log" 2>&1 || true
sed -n '/fdp-guest: fdpblock bench/,$p' "$work/console.log" 2>/dev/null | grep -v '^\[ *[0-9.]*\] ' || cat "$work/container.log"
rc=$(cat "$work/exit-code" 2>/dev/null || echo none)
if [ "$rc" != 0 ]; then
  echo "bench-guest: suite $suite: the bench in the guest did not succeed (exit code $rc); the guest's console:" \
    "$work/console.log" >&2
  for report in "$work"/hs_err_pid*.log; do # the JVM crashed: where, in one line, and the whole report
    [ -f "$report" ] || continue
    echo "bench-guest: the guest JVM crashed in $(sed -n 's/^# \(J\|j\|V\|C\) /\1 /p' "$report" | head -n1); report: $report" >&2
  done
  exit 1
fi
echo "bench-guest: suite $suite: figures in $work/bench/bench-results.json"
