#!/usr/bin/env bash
# Where one kernel's warps stall, instruction by instruction (ncu's warp-state
# sampling on the SASS): the top instructions by samples and the samples by
# opcode, so a stall reason from tools/ncu_kernels.sh can be pinned to a load,
# a barrier or a wgmma wait; and (SourceCounters) the global L2 sectors each
# instruction moves, so a copy that fetches more sectors than its bytes shows.
#   tools/ncu_source.sh [PRESET=qwen3-30b-a3b] [TOKENS=4096] [SKIP=6]
# SKIP: pymoe launches to skip before the one profiled (all pymoe kernels are
# named "kernel").  On the H200 (2026-12-01, the packed regime) SKIP=6 profiled
# fc1 and SKIP=5 a route-pack kernel: take 7 for fc2.  The report's first line
# names the kernel profiled (kernels::fc1::..., kernels::fc2::...): check it.
# Logs: ${OUT:-.}/src_T<T>.csv (ncu's source page) and src_T<T>.txt (the summary).
# KBASE=mangled with KREGEX=regex:kernels3fc1 (or 3fc2) picks pymoe's fc1 (fc2) by its
# mangled name (pymoe.cuda.kernels.fc1), so SKIP counts only those launches.
# Another program's kernel (a peer's): CMD (the command line ncu runs instead of
# pymoe bench) and KREGEX (ncu's -k filter, default regex:^kernel), e.g.
#   CMD="python3 .peers/bench_peers.py --peers tk --preset qwen3-30b-a3b
#        --tokens 4096 --mode eager --isolate off" KREGEX=regex:matmul_ogs
#   tools/ncu_source.sh qwen3-30b-a3b 4096 2
set -u
PRESET=${1:-qwen3-30b-a3b}; T=${2:-4096}; SKIP=${3:-${SKIP:-6}}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
rep=${OUT:-.}/src_T$T
read -r -d "" -a cmd <<< "${CMD:-python3 -m pymoe bench --preset $PRESET --tokens $T --mode eager --repeats 2 --no-progress}" || true
timeout "${NT:-200}" "$NCU" --clock-control none --kernel-name-base "${KBASE:-function}" -k "${KREGEX:-regex:^kernel}" \
  --launch-skip "$SKIP" --launch-count 1 --section SourceCounters --section WarpStateStats \
  -f -o "$rep" "${cmd[@]}" > "$rep.log" 2>&1
echo "== ncu rc=$? ($rep.log)"
"$NCU" --import "$rep.ncu-rep" --page source --print-source sass --csv > "$rep.csv" 2> "$rep.err"
echo "== source page rc=$? ($rep.err)"
python3 "$(dirname "$0")/ncu_source_top.py" "$rep.csv" | tee "$rep.txt"
