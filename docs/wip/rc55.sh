# racecheck on what next55.sh's racecheck left uncovered: the wide decode_fc2 CTA (I = 2048 /
# 2080 on H = 256, so it ends within a call; the H = 2880 decode cases outlast one under
# racecheck) and test_wgmma's 129-512 block case (cut in next55.sh).  Carry [".whl",
# ".revs/packs.tgz"].
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2 LIM=${LIM:-420}
dev_packs .revs/packs.tgz .revs/pack/wt_gpu .revs/pack/wt_wgmma
san racecheck rc_wide tests/cuda/test_gpu.py -k "H256-I2080 or H256-I2048"
san racecheck rc_w129 tests/cuda/test_wgmma.py::test_wgmma_block_gemm_matches_reference -k "129-512"
wait
san_report rc_wide rc_w129
echo "total $SECONDS s"
