# Stop 66, for the next device call (not run): fc2's wide-loop route rows through a shared tile
# and one bulk copy a route (docs/wip/bulk-rows.patch, branch bst, exported to .revs/bk) beside
# main's register stores (.revs/dx = HEAD's kernels): block_cut at blocks of 144 (qwen3-30b-a3b,
# gpt-oss-120b T = 4096), two rounds alternating; then on bk test_wgmma's wide cases in 6 shards,
# then memcheck over the b128 and b144 wgmma cases (packed) and racecheck at b144 (440).  Prediction
# (step 51): up to -44 us on qwen3-30b-a3b (the SM side of its stores), less on gpt-oss-120b.
# Keys: .revs/d80.tgz (dx_bc dx_t bk_bc bk_t: bk is the patch on d4dee1e; dx main's kernels of
# 4b0ea9c + refactors).  Re-export and repack if pymoe/cuda or geometry.py changed since.
# SAN=0: no sanitizers (d82.sh), the wide tests only while TLB s last.  dx_t's keys (main's tests)
# stay in the tarball unused: the tests run on bk only.
# carry [".whl", ".revs/d80.tgz", ".revs/dx", ".revs/bk"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tree_packs .revs/d80.tgz dx_bc:dx bk_bc:bk bk_t:bk
for r in 1 2; do for t in dx bk; do
  bc $t q_${t}_$r qwen3-30b-a3b "144:4096" 60
  bc $t g_${t}_$r gpt-oss-120b "144:4096" 70
done; done
bc_report 3
cd .revs/bk && export PYTHONPATH=/tmp/site:$PWD
timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_bulk.py 2>&1 | tail -n 3
L=$((${TLB:-330} - SECONDS))
[ $L -gt 40 ] && shards 6 $L tests/cuda/test_wgmma.py \
  -k "b128 or b144 or nan_scale or e4m3_code or x_not_16"
echo "== tests done at $SECONDS s"
[ "${SAN:-1}" = 0 ] && { echo "total $SECONDS s"; exit; }
LIM=$((${TL:-560} - SECONDS)) san memcheck mc_128 tests/cuda/test_wgmma.py -k "b128 and wgmma"
LIM=$((${TL:-560} - SECONDS)) san racecheck rc_144 tests/cuda/test_wgmma.py -k "b144 and wgmma and 440"
LIM=$((${TL:-560} - SECONDS)) san memcheck mc_144 tests/cuda/test_wgmma.py -k "b144 and wgmma"
wait
san_report mc_128 rc_144 mc_144
echo "total $SECONDS s"
