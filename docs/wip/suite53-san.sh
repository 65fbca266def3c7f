# compute-sanitizer over the gpu suite (step 38 left it owed), every key from
# .revs/packs.tgz (docs/wip/pack.sh; carry [".whl", ".revs/packs.tgz"]).  memcheck in shards (test_fuzz at 30 draws),
# racecheck and synccheck on the kernels steps 36-37 changed: the v2 ring at blocks of 8 / 32
# / 64 / 128 (test_wgmma's block cases), the mma and fma GEMMs' and dequant's scale values
# made from the byte (test_mma, test_dequant), the decode kernels (test_gpu -k decode).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=/tmp/site:$PWD OMP_NUM_THREADS=3 PYTHONDONTWRITEBYTECODE=1 PYMOE_FUZZ_EXAMPLES=30
nvidia-smi --query-gpu=name --format=csv,noheader
tar -xzf .revs/packs.tgz
for d in .revs/pack/wt_*; do python3 tools/ptx_pack.py install $d 2>&1 | tail -n 1; done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
SECONDS=0
PT="python3 -m pytest -q -p no:cacheprovider -m gpu"
DES="--deselect tests/cuda/test_launch.py::test_disk_cache_fresh_process_compiles_nothing_and_corrupt_entries_recompile"
# memcheck: shards MC of N (two calls: MC="0 1 2 3", then MC="4 5 6 7" SAN_SUB=0)
N=${N:-8}; MC=${MC:-"0 1 2 3"}
for i in $MC; do
  timeout 560 $SAN --tool memcheck --target-processes all --print-limit 5 --error-exitcode 3 \
    $PT tests $DES --shard $i/$N > $OUT/mc$i.log 2>&1 &
done
if [ "${SAN_SUB:-1}" = 1 ]; then
SUB="tests/cuda/test_wgmma.py::test_wgmma_block_gemm_matches_reference tests/cuda/test_mma.py tests/cuda/test_dequant.py"
timeout 560 $SAN --tool racecheck --target-processes all --print-limit 5 --error-exitcode 3 \
  $PT $SUB > $OUT/rc.log 2>&1 &
timeout 560 $SAN --tool synccheck --target-processes all --print-limit 5 --error-exitcode 3 \
  $PT $SUB > $OUT/sc.log 2>&1 &
timeout 560 $SAN --tool racecheck --target-processes all --print-limit 5 --error-exitcode 3 \
  $PT tests/cuda/test_gpu.py -k "(T1- or T8- or decode) and (H256 or H2880 or H136)" > $OUT/rcd.log 2>&1 &
fi
wait
for f in $(cd $OUT && ls *.log | sed 's/.log$//'); do
  echo "== $f"; grep -E "^(FAILED|ERROR) " $OUT/$f.log | head -n 6
  grep -E " passed| failed" $OUT/$f.log | tail -n 1
  grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$f.log | sort | uniq -c
done
echo "total $SECONDS s"
