#!/usr/bin/env bash
# Reliability on one GPU, all at once: the whole gpu suite (slow tests included:
# the 100k-replay run, disk-cache faults, concurrency, the bad-input matrix) split
# in P shards, and the differential fuzz in F processes of NF examples each (one
# family shard and seed per process: F*NF cases in all).
# Logs go to ${OUT:-.}/reliability/; a summary is printed last.
# Usage: tools/reliability_run.sh [P=4] [F=4] [NF=2500] [TIMEOUT_S=560]
set -u
P=${1:-4}; F=${2:-4}; NF=${3:-2500}; LIMIT=${4:-560}
LOG=${OUT:-.}/reliability; mkdir -p "$LOG"
export PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=2 NCCL_NVLS_ENABLE=0
pids=(); names=()
for ((i = 0; i < P; i++)); do
  timeout "$LIMIT" python3 -m pytest -q -s -p no:cacheprovider -m gpu tests \
    --ignore=tests/cuda/test_fuzz.py --shard "$i/$P" >"$LOG/suite_$i.log" 2>&1 &
  pids+=($!); names+=("suite_$i")
done
for ((i = 0; i < F; i++)); do
  PYMOE_FUZZ_EXAMPLES=$NF PYMOE_FUZZ_SHARD="$i/$F" PYMOE_FUZZ_SEED=$((20261130 + i)) \
    timeout "$LIMIT" python3 -m pytest -q -s -p no:cacheprovider tests/cuda/test_fuzz.py \
    >"$LOG/fuzz_$i.log" 2>&1 &
  pids+=($!); names+=("fuzz_$i")
done
rcs=(); for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
printf '%-9s %4s  %s\n' run rc pytest
for j in "${!names[@]}"; do
  f="$LOG/${names[$j]}.log"
  printf '%-9s %4s  %s\n' "${names[$j]}" "${rcs[$j]}" "$(grep -E ' in [0-9.]+s' "$f" | tail -1)"
done
grep -h -E '^(fuzz:|long run:|concurrency:|8 processes:|[0-9]+ rows refused)' "$LOG"/*.log
grep -h -E '^(FAILED|ERROR)' "$LOG"/*.log | head -20
