#!/usr/bin/env bash
# pytest on several source trees (or GEMMs) at once, one process each, on one GPU:
#   tools/test_revs.sh SRC[:GEMM]... -- PYTEST_ARGS...
# SRC: "." (the working tree) or a tree exported into .revs/ (git archive REV | tar
# -x -C .revs/NAME: the tests need the whole tree); GEMM sets PYMOE_GEMM for it.
# e.g. tools/test_revs.sh .revs/next:wgmma .revs/next:mma -- tests/cuda/test_gpu.py -k T257-
# Env: TT (timeout per process, 400 s), SITE (/tmp/site, the numpy wheel's target),
#      PYTHON (python3).
# Logs ${OUT:-.}/test_<name>.txt; one line per process last (rc, pytest's summary).
set -u
specs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do specs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
LOG=${OUT:-.}; mkdir -p "$LOG"
names=(); pids=()
for spec in "${specs[@]}"; do
  src=${spec%%:*}; gemm=${spec#"$src"}; gemm=${gemm#:}
  if [ "$src" = . ]; then P=$PWD; name=worktree; else P=$(cd "$src" && pwd); name=$(basename "$src"); fi
  [ -n "$gemm" ] && name=${name}_$gemm
  names+=("$name")
  (cd "$P" && PYMOE_GEMM=${gemm:-${PYMOE_GEMM:-}} PYTHONPATH=${SITE:-/tmp/site}:$P \
     OMP_NUM_THREADS=2 PYTHONDONTWRITEBYTECODE=1 timeout "${TT:-400}" \
     "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider "$@" > "$LOG/test_$name.txt" 2>&1) &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?
  printf '%-24s rc=%-4s %s\n' "${names[$i]}" "$rc" "$(tail -1 "$LOG/test_${names[$i]}.txt")"
done
