#!/usr/bin/env bash
# The whole `gpu` suite on one GPU: once plain, and under each compute-sanitizer
# tool of TOOLS (default memcheck; any of memcheck racecheck synccheck initcheck),
# each split into N shards (pytest --shard I/N), all at once.
# Logs go to ${OUT:-.}/gpu_suite/; a summary table is printed last.
# Usage: [TOOLS="memcheck racecheck"] [PLAIN=0] tools/gpu_suite.sh [N_SHARDS=3] [TIMEOUT_S=560] [PATHS=tests]
# (PLAIN=0 skips the plain run; PATHS may carry pytest options, e.g. "tests/cuda --ignore=...")
set -u
N=${1:-3}; LIMIT=${2:-560}; PATHS=${3:-tests}
TOOLS=${TOOLS:-memcheck}
LOG=${OUT:-.}/gpu_suite; mkdir -p "$LOG"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -z "$SAN" ]; then echo "compute-sanitizer not found: running the plain suite only"; TOOLS=""; fi
export OMP_NUM_THREADS=4 PYTHONDONTWRITEBYTECODE=1
PYTEST=(python3 -m pytest -q -p no:cacheprovider -m gpu $PATHS)
pids=(); names=()
if [ "${PLAIN:-1}" != 0 ]; then
  timeout "$LIMIT" "${PYTEST[@]}" >"$LOG/plain.log" 2>&1 & pids=($!); names=(plain)
fi
for tool in $TOOLS; do
  for ((i = 0; i < N; i++)); do
    timeout "$LIMIT" "$SAN" --tool "$tool" --target-processes all --print-limit 20 \
      --error-exitcode 3 "${PYTEST[@]}" --shard "$i/$N" >"$LOG/${tool}_$i.log" 2>&1 &
    pids+=($!); names+=("${tool}_$i")
  done
done
rcs=(); for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
printf '%-12s %4s  %-40s %s\n' run rc pytest sanitizer
for j in "${!names[@]}"; do
  f="$LOG/${names[$j]}.log"
  res=$(grep -E '^[0-9]+ (passed|failed)|passed|failed|error' "$f" | grep -E ' in [0-9.]+s' | tail -1)
  san=$(grep -h -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | sort | uniq -c | tr -s ' ' | paste -sd';')
  printf '%-12s %4s  %-40s %s\n' "${names[$j]}" "${rcs[$j]}" "$res" "${san:--}"
done
