# The GPU tests on step 41's blocks (24 and 48 routes, and the cuts they moved: means
# 10-20 now run at blocks of 24, 29-40 at 48): test_gpu.py (its format x dtype x
# activation x layout cases at T = 36 / 64 / 100, blocks of 16 / 24 / 32; T = 144 and
# the 560-route E 128 case at 48), test_wgmma.py (block cases at 48 on wgmma and mma,
# NVFP4 at 64, the NaN-scale case at 32 and 48), test_self_pack.py and
# test_route_pack.py (blocks of 24 / 48), test_fuzz.py (drawn T).  Pack first (docs/wip/pack.sh); carry
# [".whl", ".revs/packs.tgz"].  6 shards at once, SUITE_S (400 s) each.
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
dev_packs .revs/packs.tgz .revs/pack/wt_gpu .revs/pack/wt_wgmma .revs/pack/wt_fuzz
for i in 0 1 2 3 4 5; do
  timeout ${SUITE_S:-400} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE --shard $i/6 \
    tests/cuda/test_gpu.py tests/cuda/test_wgmma.py tests/cuda/test_self_pack.py \
    tests/cuda/test_route_pack.py tests/cuda/test_fuzz.py > $OUT/s$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5; do
  f=$OUT/s$i.log; echo "== shard $i"; grep -E "^(FAILED|ERROR) " $f | head -n 8; tail -n 1 $f | cut -c1-120
done
echo "total $SECONDS s"
