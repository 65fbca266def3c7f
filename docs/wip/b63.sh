# Stop 61's second call (after pack63.sh's gpu and fuzz stages): ncu's warp-state samples of
# qwen3-30b-a3b T = 512 fc1 (blocks of 48, the ring loop; step 45's Next 2: what paces it if not
# its copies), alone on the GPU, then test_gpu and test_fuzz on main (9277ca1) in 6 shards.
# carry [".whl", ".revs/gpu63.tgz", ".revs/fuzz63.tgz", ".revs/peers63.tgz"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
if [ "${NCU:-1}" = 1 ]; then        # NCU=0: the tests alone
  dev_packs .revs/peers63.tgz
  NT=${NT:-110} KBASE=mangled KREGEX=regex:kernels3fc1 bash tools/ncu_source.sh qwen3-30b-a3b 512 1 > $OUT/src.txt 2>&1
  echo "ncu_source at $SECONDS s"; grep -m1 -oE "kernels::[a-z0-9_]+::" $OUT/src_T512.log
  tail -n 3 $OUT/src_T512.log | cut -c1-200
fi
dev_packs .revs/gpu63.tgz; dev_packs .revs/fuzz63.tgz
shards 6 $((${TL:-570} - SECONDS)) tests/cuda/test_gpu.py tests/cuda/test_fuzz.py
echo "total $SECONDS s"
[ "${NCU:-1}" = 1 ] && head -n 45 $OUT/src_T512.txt
true
