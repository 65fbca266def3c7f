# The sanitizer runs step 39 left owed, on the landed tree (pack it first: docs/wip/pack.sh;
# carry [".whl", ".revs/packs.tgz"]), one call:
#   - racecheck on the GEMMs and the decode kernels, one process a few tests (step 39's
#     single process was cut after 1 of test_wgmma's block-GEMM cases; the decode one
#     after 9 tests, before its summary);
#   - memcheck on the 10 tests of shard 7 of 8 that step 39 did not reach (rest55.txt): the
#     shard and its rerun were both cut inside test_reliability's 100k graph replays, which
#     under memcheck take longer than a call (that test runs plain in the suite).
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
dev_packs .revs/packs.tgz
W=tests/cuda/test_wgmma.py::test_wgmma_block_gemm_matches_reference
san racecheck rc_w0 $W -k "201-256 or 65-256 or 129-512"
san racecheck rc_w1 $W -k "101-2048"
san racecheck rc_w2 $W -k "100-272 or 160-"
san racecheck rc_b128 tests/cuda/test_wgmma.py::test_block_gemm_b128_matches_reference -k "513-256 or 700-256"
san racecheck rc_mma tests/cuda/test_mma.py
san racecheck rc_deq tests/cuda/test_dequant.py
san racecheck rc_dec0 tests/cuda/test_gpu.py -k "(T1- or decode) and (H256 or H2880 or H136)"
san racecheck rc_dec1 tests/cuda/test_gpu.py -k "T8- and (H256 or H2880 or H136)"
mapfile -t A < docs/wip/rest55.txt
san memcheck mc_rest "${A[@]}"
wait
san_report
echo "total $SECONDS s"
