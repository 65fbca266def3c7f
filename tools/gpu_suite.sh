#!/usr/bin/env bash
# The whole `gpu` suite on one GPU: once plain, and once under
# compute-sanitizer memcheck split into N shards (pytest --shard I/N), all at once.
# Logs go to ${OUT:-.}/gpu_suite/; a summary table is printed last.
# Usage: tools/gpu_suite.sh [N_SHARDS=3] [TIMEOUT_S=560]
set -u
N=${1:-3}; LIMIT=${2:-560}
LOG=${OUT:-.}/gpu_suite; mkdir -p "$LOG"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -z "$SAN" ]; then echo "compute-sanitizer not found: running the plain suite only"; N=0; fi
export OMP_NUM_THREADS=4 PYTHONDONTWRITEBYTECODE=1
PYTEST=(python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda)
timeout "$LIMIT" "${PYTEST[@]}" >"$LOG/plain.log" 2>&1 & pids=($!)
for ((i = 0; i < N; i++)); do
  timeout "$LIMIT" "$SAN" --tool memcheck --target-processes all --print-limit 20 \
    --error-exitcode 3 "${PYTEST[@]}" --shard "$i/$N" >"$LOG/memcheck_$i.log" 2>&1 &
  pids+=($!)
done
rcs=(); for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
printf '%-12s %4s  %-40s %s\n' run rc pytest sanitizer
names=(plain); for ((i = 0; i < N; i++)); do names+=("memcheck_$i"); done
for j in "${!names[@]}"; do
  f="$LOG/${names[$j]}.log"
  res=$(grep -E '^[0-9]+ (passed|failed)|passed|failed|error' "$f" | grep -E ' in [0-9.]+s' | tail -1)
  san=$(grep -h 'ERROR SUMMARY' "$f" | sort | uniq -c | tr -s ' ' | paste -sd';')
  printf '%-12s %4s  %-40s %s\n' "${names[$j]}" "${rcs[$j]}" "$res" "${san:--}"
done
