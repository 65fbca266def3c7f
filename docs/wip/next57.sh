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
shards 6 ${SUITE_S:-400} tests/cuda/test_gpu.py tests/cuda/test_wgmma.py \
  tests/cuda/test_self_pack.py tests/cuda/test_route_pack.py tests/cuda/test_fuzz.py
echo "total $SECONDS s"
