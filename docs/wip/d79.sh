# Stop 66's second call, three parts.  (A) where fc2's store cost (d78: predicated off, qwen3-30b-a3b
# T = 4096 -70 us) sits: l2 is .revs/dx with every route row stored into rows r & 1023 (8 MB, L2-
# resident: the same instructions and L1 traffic, no DRAM write-back); beside dx and sg (d78's
# staggered first wave) at blocks of 144, qwen3 and gpt-oss-120b two rounds each.  (B) d75.sh
# (git show 7e9af93:docs/wip/): fc1 on the wide loop storing from registers (.revs/f1) against
# dx, then test_wgmma's wide cases on f1.
# (C) d76.sh: memcheck over the wide wgmma cases and racecheck at b144 on f1 (fc1 and fc2 direct).
# Keys: .revs/d79.tgz (dx_bc l2_bc sg_bc f1_bc f1_t).
# carry [".whl", ".revs/d79.tgz", ".revs/dx", ".revs/l2", ".revs/sg", ".revs/f1"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/d79.tgz
for t in dx l2 sg f1; do
  python3 tools/ptx_pack.py install .revs/pack/${t}_bc --tree .revs/$t 2>&1 | tail -n 1
done
python3 tools/ptx_pack.py install .revs/pack/f1_t --tree .revs/f1 2>&1 | tail -n 1
for r in 1 2; do for t in dx l2 sg f1; do bc $t q_${t}_$r qwen3-30b-a3b "144:4096" 60; done; done
for r in 1 2; do for t in dx sg l2 f1; do bc $t g_${t}_$r gpt-oss-120b "144:4096" 70; done; done
bc_report 3
R=$PWD
cd .revs/f1 && export PYTHONPATH=/tmp/site:$PWD
shards 6 $((${TLB:-300} - SECONDS)) tests/cuda/test_wgmma.py \
  -k "b128 or b144 or nan_scale or e4m3_code or x_not_16"
echo "== B done at $SECONDS s"
LIM=$((${TL:-540} - SECONDS)) san memcheck mc_128 tests/cuda/test_wgmma.py -k "b128 and wgmma"
LIM=$((${TL:-540} - SECONDS)) san memcheck mc_144 tests/cuda/test_wgmma.py -k "b144 and wgmma"
LIM=$((${TL:-540} - SECONDS)) san racecheck rc_144 tests/cuda/test_wgmma.py -k "b144 and wgmma and 440"
wait
san_report mc_128 mc_144 rc_144
echo "total $SECONDS s"
