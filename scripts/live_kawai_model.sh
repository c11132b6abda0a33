#!/bin/bash
# The model's prediction beside `hostsim live kawai-interval` (issue 29), until a twin on this
# machine's profile exists: paper 004's own scenarios (Pentium III 800, profiles/pentium3-800.toml,
# conn_list = with_work, the live loop's reading) at the live workload's shape (no client link
# delay, 6,000 client and 1,000 origin connections, RATE req/s), with today's high-resolution
# nanosleep (`hr`: timer_tick_sleep = false, HZ 250) and with 2.5.17's (`tick`: ticks + 1 at
# HZ 100, as the scenarios have it). Seeds 1 and 2. Only the timing of the loop (passes/s, the
# response times a cycle adds) carries over to the live machine; the CPU shares are the
# Pentium III's.
#
#   bash scripts/live_kawai_model.sh OUTDIR [RATE]   -> OUTDIR/model.csv
set -euo pipefail
out=${1:?usage: live_kawai_model.sh OUTDIR [RATE]}
rate=${2:-2000}
cd "$(dirname "$0")/.."
bin=./target/release/hostsim
mkdir -p "$out"
for sleep in hr tick; do
  if [ $sleep = hr ]; then set_sleep=(--set kernel.timer_tick_sleep=false --set kernel.hz=250); else set_sleep=(); fi
  for v in ww-none ww-static-10 ww-static-20 ww-static-30 ww-dynamic-2x ww-dynamic-3x ww-dynamic-4x; do
    case $v in *dynamic*) f=scenarios/kawai-interval-dynamic.toml ;; *) f=scenarios/kawai-interval-static.toml ;; esac
    for seed in 1 2; do
      $bin run "$f" --variant $v --seed $seed "${set_sleep[@]}" --set traffic.clients.http.rate_rps="$rate" \
        --set traffic.clients.link_delay_us=0 --set traffic.clients.http.conns=6000 \
        --set process.chamomile.accelerator.origin_conns=1000 --out "$out/$rate-$sleep-$v-$seed" >/dev/null
    done
  done
done
python3 - "$out" "$rate" > "$out/model.csv" <<'PY'
import collections, glob, json, os, sys
out, rate = sys.argv[1], sys.argv[2]
rows = collections.defaultdict(list)
for d in sorted(glob.glob(f"{out}/{rate}-*")):
    if not os.path.exists(f"{d}/summary.json"):
        continue
    sleep, rest = os.path.basename(d).split("-", 2)[1:]
    v = rest.rsplit("-", 1)[0]
    rows[(sleep, v)].append(json.load(open(f"{d}/summary.json"))["metrics"])
keys = ["clients_offered_rps", "clients_completed_rps", "clients_resp_ms_mean", "clients_resp_ms_p99",
        "clients_resp_hit_ms_mean", "clients_resp_miss_ms_mean", "chamomile_io_loops_per_s", "cpu_util",
        "cpu_kernel_frac", "cpu_poll_frac"]
print("sleep,variant,rate_rps,seeds," + ",".join(keys))
for (s, v), ms in sorted(rows.items()):
    print(f"{s},{v},{rate},{len(ms)}," + ",".join(f"{sum(m.get(k, float('nan')) for m in ms) / len(ms):.4g}" for k in keys))
PY
cat "$out/model.csv"
