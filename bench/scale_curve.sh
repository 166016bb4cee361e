#!/usr/bin/env bash
# Cost curve of `placesim simulate` against the GPU count: one example scaled from 64 GPUs
# upwards, its CPU time and peak memory per size, and the exponent of a least-squares fit
# of log(time) on log(GPUs). docs/scale.md quotes its output.
#
# usage: bench/scale_curve.sh PLACESIM EXAMPLE GPUS... [-- EXTRA --set ARGS]
#   e.g. bench/scale_curve.sh build/release/placesim examples/llama3-8b-fsdp.textproto \
#          64 256 1024 4096 16384
# The example is scaled by data parallelism alone: 8 GPUs a node, cluster.nodes = GPUS / 8
# on a two-level fat tree whose switch radix is the smallest power of two that holds the
# NICs, strategy.dp = GPUS / (tp pp cp) when the example names dp, and the global batch
# grown with dp so that each rank keeps its micro-batches per step. Output: one row per
# size (GPUs, user CPU seconds, wall seconds, peak RSS MiB) and the fitted exponents.
# Each run is limited to 600 s (PLACESIM_CURVE_TIMEOUT); a run past it is reported as such.
set -euo pipefail

bin=$1 example=$2
shift 2
sizes=()
while [[ $# -gt 0 && $1 != -- ]]; do
  sizes+=("$1")
  shift
done
[[ ${1:-} == -- ]] && shift
extra=("$@")
limit=${PLACESIM_CURVE_TIMEOUT:-600}
stats=$(mktemp)
trap 'rm -f "$stats"' EXIT

# Reads an integer field of the example (first occurrence), or the default.
field() {
  local v
  v=$(grep -E "^\s*$1:\s*[0-9]+" "$example" | head -1 | sed -E "s/^\s*$1:\s*([0-9]+).*/\1/")
  echo "${v:-$2}"
}
gpus0=$(($(field nodes 1) * 8))
tp=$(field tp 1) pp=$(field pp 1) cp=$(field cp 1)
has_dp=$(grep -cE '^\s*dp:\s*[0-9]+' "$example" || true)
batch0=$(field global_batch 0)

printf '%8s %10s %10s %10s\n' gpus user_s wall_s peak_MiB
results=()
for n in "${sizes[@]}"; do
  nodes=$((n / 8))
  nics=$((n))
  radix=4
  while ((radix * radix / 2 < nics)); do radix=$((radix * 2)); done
  args=(--set "cluster.nodes=$nodes")
  if ((nodes > 1)); then
    args+=(--set cluster.fabric.kind=FABRIC_KIND_FAT_TREE --set "cluster.fabric.switch_radix=$radix")
  fi
  if ((has_dp > 0)); then args+=(--set "strategy.dp=$((n / (tp * pp * cp)))"); fi
  if ((batch0 > 0)); then args+=(--set "training.global_batch=$((batch0 * n / gpus0))"); fi
  /usr/bin/time -o "$stats" -f '%U %e %M' timeout "$limit" "$bin" simulate "$example" \
    "${args[@]}" "${extra[@]}" >/dev/null 2>&1 || true
  read -r user wall kib < <(tail -1 "$stats")
  if ! [[ ${kib:-} =~ ^[0-9]+$ ]] || awk -v w="$wall" -v l="$limit" 'BEGIN { exit !(w >= l) }'; then
    printf '%8s %10s\n' "$n" "> ${limit}s"
    continue
  fi
  printf '%8s %10s %10s %10.0f\n' "$n" "$user" "$wall" "$(echo "$kib / 1024" | bc -l)"
  results+=("$n $user $kib")
done

# Least-squares slope of log(y) on log(gpus), over the sizes that finished.
printf '%s\n' "${results[@]}" | awk '
  NF == 3 && $2 > 0 {
    x = log($1); y = log($2); m = log($3)
    n++; sx += x; sy += y; sxx += x * x; sxy += x * y; sm += m; sxm += x * m
  }
  END {
    if (n < 2) exit
    d = n * sxx - sx * sx
    printf "fitted exponent: time ~ GPUs^%.2f, memory ~ GPUs^%.2f (%d sizes)\n",
           (n * sxy - sx * sy) / d, (n * sxm - sx * sm) / d, n
  }'
