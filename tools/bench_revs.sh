#!/usr/bin/env bash
# Side by side on one GPU: `python -m pymoe bench` for several git revisions (or
# edited copies) in one run, each from its own source tree.
#   tools/bench_revs.sh SRC[:GEMM[:BLOCK[:CUT]]]...
#                                       SRC: "." (the working tree) or a source
#                                       tree exported from a git revision; GEMM sets
#                                       PYMOE_GEMM for that source, BLOCK pins
#                                       --block-size (e.g. .revs/next:wgmma:128), CUT
#                                       --decode-max-tokens (e.g. .:::0: every T
#                                       packed; an empty field keeps the default)
# The device has no history: export here first (into the git-ignored .revs/,
# which the device call must carry):  tools/bench_revs.sh --export REV...
# then on the device:  tools/bench_revs.sh . .revs/REV ...
# Env: PRESETS (gpt-oss-120b,qwen3-30b-a3b), TOK (1,8,64), MODE (graph),
#      FMT (mxfp4), DT (bfloat16), BT (timeout per source, 200 s; compiling the
#      mma keys of two presets takes over 95 s; WARM=1 first compiles every source's
#      keys in parallel, untimed, bounded by WT (400 s), so BT only has to cover
#      the timing; WARM=only stops there).  Logs are unbuffered, so a source
#      cut by BT still shows the rows it finished.  PYTHON (python3): the interpreter.
# Logs under ${OUT:-.}/bench_<name>.txt; a table (preset, T, us per source) last.
set -u
if [ "${1:-}" = "--export" ]; then
  shift
  for rev in "$@"; do
    d=.revs/$rev; rm -rf "$d"; mkdir -p "$d"
    git archive "$rev" pymoe | tar -x -C "$d" && echo "exported $rev -> $d"
  done
  exit 0
fi
LOG=${OUT:-.}; mkdir -p "$LOG"
parse() {    # SPEC -> P (tree), gemm, name, extra (bench flags for BLOCK and CUT)
  local src rest blk cut
  src=${1%%:*}; rest=${1#"$src"}; rest=${rest#:}
  gemm=${rest%%:*}; blk=${rest#"$gemm"}; blk=${blk#:}
  cut=${blk#*:}; [ "$cut" = "$blk" ] && cut=""; blk=${blk%%:*}
  if [ "$src" = . ]; then P=$PWD; name=worktree; else P=$(cd "$src" && pwd); name=$(basename "$src"); fi
  [ -n "$gemm" ] && name=${name}_$gemm
  [ -n "$blk" ] && name=${name}_b$blk
  [ -n "$cut" ] && name=${name}_d$cut
  extra=(); [ -n "$blk" ] && extra=(--block-size "$blk")
  [ -n "$cut" ] && extra+=(--decode-max-tokens "$cut")
}
bench() {    # LIMIT BENCH-FLAGS...: pymoe bench from tree P, with gemm and extra
  local limit=$1; shift
  (cd "$P" && PYMOE_GEMM=${gemm:-${PYMOE_GEMM:-}} PYTHONUNBUFFERED=1 \
     PYTHONPATH=${SITE:-/tmp/site}:$P timeout "$limit" "${PYTHON:-python3}" -m pymoe bench \
     --preset "${PRESETS:-gpt-oss-120b,qwen3-30b-a3b}" --tokens "${TOK:-1,8,64}" \
     --format "${FMT:-mxfp4}" --dtype "${DT:-bfloat16}" --no-progress \
     ${extra[@]+"${extra[@]}"} "$@")
}
if [ -n "${WARM:-}" ]; then      # compile every source's keys at once (disk cache), untimed
  for spec in "$@"; do
    parse "$spec"
    bench "${WT:-400}" --mode eager --repeats 1 --rotate 1 > /dev/null 2>&1 &
  done
  wait; echo "warm: $SECONDS s"
  [ "$WARM" = only ] && exit 0
fi
names=()
for spec in "$@"; do
  parse "$spec"
  names+=("$name")
  bench "${BT:-200}" --mode "${MODE:-graph}" > "$LOG/bench_$name.txt" 2>&1
  echo "$name rc=$?"
done
"${PYTHON:-python3}" - "$LOG" "${names[@]}" <<'PY'
import sys, re
log, names = sys.argv[1], sys.argv[2:]
rows, order = {}, []
for n in names:
    for line in open(f"{log}/bench_{n}.txt"):
        f = line.split()
        if len(f) > 5 and f[2] in ("graph", "eager", "ref") and f[1].isdigit():
            k = (f[0], int(f[1]), f[2])
            if k not in rows:
                rows[k] = {}; order.append(k)
            rows[k][n] = f[4] + ("" if "FAILED" not in line else "!")
print(f"{'preset':16} {'T':>5} {'mode':6} " + " ".join(f"{n[:18]:>18}" for n in names))
for k in order:
    print(f"{k[0]:16} {k[1]:>5} {k[2]:6} " + " ".join(f"{rows[k].get(n, '-'):>18}" for n in names))
PY
