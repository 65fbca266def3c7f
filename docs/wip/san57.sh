# Sanitizers on step 41's blocks of 24 and 48 (small shapes; racecheck's host memory
# grows with the case): racecheck on test_wgmma's 140-272-80 block cases (blocks of
# 48 on wgmma and mma) and test_gpu's T = 144 (48) and fp16 NVFP4 T = 64 (24) cases on H 256;
# memcheck on those and test_route_pack.py.  Carry [".whl", ".revs/packs.tgz"].
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2 LIM=${LIM:-270}
dev_packs .revs/packs.tgz .revs/pack/wt_gpu .revs/pack/wt_wgmma
san racecheck rc_w48 tests/cuda/test_wgmma.py::test_wgmma_block_gemm_matches_reference -k "140-272-80"
san racecheck rc_g48 tests/cuda/test_gpu.py -k "T144-H256"
san racecheck rc_g24 tests/cuda/test_gpu.py -k "T64-H256-I144-E8-k2 and float16-nvfp4"
san memcheck mc57 tests/cuda/test_gpu.py tests/cuda/test_wgmma.py tests/cuda/test_route_pack.py \
  -k "T144-H256 or T64-H256-I144-E8-k2 or 140-272-80 or 150-704 or 150-512 or route_pack"
wait
san_report rc_w48 rc_g48 rc_g24 mc57
echo "total $SECONDS s"
