#!/usr/bin/env bash
# ncu on the kernels of one eager forward per T: time, DRAM, issue, occupancy,
# instructions and the stall breakdown (cycles per issued instruction).
#   tools/ncu_kernels.sh [PRESET=gpt-oss-120b] [TOKENS="1 8"]
# pymoe's kernels are all named "kernel" in ncu's list (Numba's entry names);
# a forward's launches come in order (decode: fc1, fc2, combine).  The first
# forward (warm-up) is skipped.  EXTRA: more bench flags (e.g. "--block-size 128");
# MEM / MORE: more metrics (below).
# Logs: ${OUT:-.}/ncu_T<T>${TAG:-}.txt
# Another program's kernels (a peer's): CMD (the command line ncu runs instead of
# pymoe bench, once, logged as T = "cmd") and KREGEX (ncu's -k filter, default
# regex:^kernel), e.g.  CMD="python3 .peers/bench_peers.py --peers tk --preset
# qwen3-30b-a3b --tokens 4096 --mode eager --isolate off" KREGEX=regex:matmul_ogs
set -u
PRESET=${1:-gpt-oss-120b}; TOKENS=${2:-1 8}; SKIP=${SKIP:-3}; COUNT=${COUNT:-3}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,sm__cycles_active.avg,sm__cycles_elapsed.avg,launch__registers_per_thread,launch__grid_size
M=$M,smsp__inst_executed.sum,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
M=$M,launch__occupancy_limit_warps,launch__shared_mem_per_block_static,launch__block_size
M=$M,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
for r in barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle \
         lg_throttle not_selected selected no_instruction dispatch_stall branch_resolving \
         membar sleeping tex_throttle imc_miss drain misc; do
  M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
# MEM=1: also the L2 and DRAM traffic (L2 requests, sectors read / written, hit
# rate, sectors from the other L2 partition, DRAM bytes; performance.md Speed II
# step 16 compares them with triton_kernels').  MORE: further metrics, comma-led.
if [ -n "${MEM:-}" ]; then
  M=$M,lts__t_requests.sum,lts__t_sectors.sum,lts__t_sectors_op_read.sum
  M=$M,lts__t_sectors_op_write.sum,lts__t_sector_hit_rate.pct
  M=$M,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum,dram__bytes_write.sum
fi
M=$M${MORE:-}
[ -n "${CMD:-}" ] && TOKENS=cmd
for T in $TOKENS; do
  f=${OUT:-.}/ncu_T$T${TAG:-}.txt
  read -r -d "" -a cmd <<< "${CMD:-python3 -m pymoe bench --preset $PRESET --tokens $T --mode eager --repeats 2 --no-progress ${EXTRA:-}}" || true
  timeout "${NT:-150}" "$NCU" --clock-control none --kernel-name-base "${KBASE:-function}" -k "${KREGEX:-regex:^kernel}" \
    --launch-skip "$SKIP" --launch-count "$COUNT" --metrics "$M" "${cmd[@]}" > "$f" 2>&1
  echo "== $PRESET T=$T rc=$?"
  grep -E ", Context [0-9]|gpu__time|dram__|lts__t_|issue_active|warps_active|cycles_|registers|grid_size|inst_executed|stalled|occupancy|shared_mem|block_size|throughput|tensor" "$f" \
    | sed -E 's/\(Array.*//; s/  +/ /g; s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
done
