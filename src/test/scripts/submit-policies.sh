#!/usr/bin/env bash
# Measures the io_uring engine's submission policies (immediate, adaptive, per_cycle) against fio on one job,
# interleaved (fio, then each policy, REPEAT times) so that a drifting disk or busy neighbours hit every side
# alike, with counts that do not depend on the CPU: io_uring_enter calls, block-layer unplugs and requests
# issued per I/O (perf tracepoints; needs root or perf_event_paranoid <= 1 and the tracefs events), next to
# IOPS, the time-averaged depth and the median latency the bench reports.
#
# Usage: src/test/scripts/submit-policies.sh FILE [RW=randread] [BS=4096] [QD=32] [SECONDS=3] [REPEAT=3]
#   FILE: an existing file (>= 1 GiB, written once: reads of holes do no I/O) on an O_DIRECT file system.
# Output: a table on stdout; every run's JSON and perf counts under target/submit-policies/.
set -euo pipefail
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
file=${1:?usage: submit-policies.sh FILE [RW] [BS] [QD] [SECONDS] [REPEAT]}
rw=${2:-randread} bs=${3:-4096} qd=${4:-32} secs=${5:-3} repeat=${6:-3}
case "$rw" in randread) id=randread-4k-qd$qd ;; randwrite) id=randwrite-4k-qd$qd ;; read) id=seqread-1m-qd$qd ;; write) id=seqwrite-1m-qd$qd ;;
  *) echo "submit-policies: RW $rw: use randread, randwrite, read or write" >&2; exit 2 ;; esac
out=$project/target/submit-policies
mkdir -p "$out"
events=block:block_unplug,block:block_rq_issue,syscalls:sys_enter_io_uring_enter
command -v perf >/dev/null || { echo "submit-policies: perf is missing (apt-get install linux-perf)" >&2; exit 3; }
size=$(( $(stat -c %s "$file") / 1048576 * 1048576 ))
printf '%-10s %3s %10s %10s %10s %10s %8s %9s\n' side run IOPS enters/IO unplugs/IO req/unplug depth "p50 us"
for r in $(seq 1 "$repeat"); do
  for side in fio immediate adaptive per_cycle; do
    tag=$side-$r
    if [ "$side" = fio ]; then
      perf stat -x, -e "$events" -o "$out/$tag.perf" -- fio --name="$id" --filename="$file" --size="$size" \
        --ioengine=io_uring --direct=1 --rw="$rw" --bs="$bs" --iodepth="$qd" --fixedbufs=1 --registerfiles=1 \
        --norandommap --randrepeat=0 --lat_percentiles=1 --time_based --runtime="$secs" \
        --output-format=json --output="$out/$tag.json" >/dev/null
      read -r ops iops depth p50 < <(python3 - "$out/$tag.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
s = j["read"] if j["read"]["io_bytes"] >= j["write"]["io_bytes"] else j["write"]
lat = s["lat_ns"]
print(s["total_ios"], round(s["iops"]), round(s["iops"] * lat["mean"] / 1e9, 1),
      round(lat.get("percentile", s["clat_ns"]["percentile"])["50.000000"] / 1000, 1))
PY
)
    else
      perf stat -x, -e "$events" -o "$out/$tag.perf" -- "$project/target/fdpblock" bench --cases "$id" \
        --fio /nonexistent --no-prewrite --rounds 1 --seconds "$secs" --ramp 0 --submit-policy "$side" \
        --file "$file" --size "$size" --out "$out/$tag" >/dev/null 2>&1
      read -r ops iops depth p50 < <(python3 - "$out/$tag/bench-results.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["cases"][0]["rounds"][0]["ours"]
print(o["ops"], round(o["iops"]), o.get("ring_depth_avg"), o.get("lat_p50_us"))
PY
)
    fi
    unplug=$(grep ',block:block_unplug,' "$out/$tag.perf" | cut -d, -f1)
    issue=$(grep ',block:block_rq_issue,' "$out/$tag.perf" | cut -d, -f1)
    enters=$(grep ',syscalls:sys_enter_io_uring_enter,' "$out/$tag.perf" | cut -d, -f1)
    awk -v s="$side" -v r="$r" -v ops="$ops" -v iops="$iops" -v u="$unplug" -v i="$issue" -v e="$enters" \
        -v d="$depth" -v p="$p50" 'BEGIN { printf "%-10s %3d %10d %10.3f %10.3f %10.2f %8s %9s\n", s, r, iops, e / ops,
        u / ops, (u > 0 ? i / u : 0), d, p }'
  done
done
