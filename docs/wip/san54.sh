# compute-sanitizer over the gpu suite (owed since step 37), every key from .revs/packs.tgz
# (docs/wip/pack.sh; test_fuzz at PYMOE_FUZZ_EXAMPLES=25, whose keys the 300 draws hold).
# Carry [".whl", ".revs/packs.tgz"].  One call: memcheck over the whole suite in N shards at
# once (-v, so a shard cut by the timeout shows which tests it finished; docs/wip/rest54.py
# lists the rest), synccheck on the ring, the GEMMs and dequant.  memcheck's API errors
# (the known cuGetProcAddress_v2 probe, 34 a process) are counted apart from the kernels'.
# As run in step 39.  Its "N failed" count also matched the ERROR SUMMARY line: read pytest's
# own summary line.  Shard 7 was cut in test_reliability's 100k graph replays, which under
# memcheck outlast a call: deselect it next time (docs/wip/next55.sh runs what it left).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=/tmp/site:$PWD OMP_NUM_THREADS=2 PYTHONDONTWRITEBYTECODE=1 PYMOE_FUZZ_EXAMPLES=${FUZZ:-25}
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
tar -xzf ${PACKS:-.revs/packs.tgz}
for d in .revs/pack/wt_*; do python3 tools/ptx_pack.py install $d 2>&1 | tail -n 1; done
echo "installed in $SECONDS s"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PT="python3 -m pytest -v -p no:cacheprovider -m gpu"
DES="--deselect tests/cuda/test_launch.py::test_disk_cache_fresh_process_compiles_nothing_and_corrupt_entries_recompile"
N=${N:-8}; MC=${MC:-"0 1 2 3 4 5 6 7"}; LIM=${LIM:-540}
for i in $MC; do
  timeout $LIM $SAN --tool memcheck --target-processes all --print-limit 200 --error-exitcode 3 \
    $PT tests $DES --shard $i/$N > $OUT/mc$i.log 2>&1 &
done
if [ -n "${REST:-}" ]; then     # node ids a cut shard left, one a line (docs/wip/rest54.py)
  mapfile -t A < "$REST"
  timeout $LIM $SAN --tool memcheck --target-processes all --print-limit 200 --error-exitcode 3 \
    $PT $DES "${A[@]}" > $OUT/mcrest.log 2>&1 &
fi
SUB="tests/cuda/test_wgmma.py::test_wgmma_block_gemm_matches_reference tests/cuda/test_mma.py tests/cuda/test_dequant.py"
if [ "${SYNC:-1}" = 1 ]; then
  timeout $LIM $SAN --tool synccheck --target-processes all --print-limit 20 --error-exitcode 3 \
    $PT $SUB > $OUT/sc.log 2>&1 &
fi
wait
for f in $(cd $OUT && ls *.log | sed 's/.log$//'); do
  L=$OUT/$f.log
  echo "== $f: $(grep -cE " PASSED" $L) passed, $(grep -cE " (FAILED|ERROR)" $L) failed"
  grep -E "^(FAILED|ERROR) " $L | head -n 4
  grep -E "= [0-9]+ (passed|failed)" $L | tail -n 1
  grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $L | sort | uniq -c
  echo "   api errors (cuGetProcAddress): $(grep -c "cuGetProcAddress" $L);" \
       "other: $(grep -E "^========= +(Invalid|Misaligned|Out of|Uninitialized|Race|Barrier|Program hit|Error|Cuda|Hardware|Malloc|Leaked|Divergent)" $L | grep -vc cuGetProcAddress)"
  grep -E "^========= +(Invalid|Misaligned|Out of|Uninitialized|Race|Barrier|Program hit|Error|Cuda|Hardware|Divergent)" $L | grep -v cuGetProcAddress | sort | uniq -c | head -n 5
done
echo "total $SECONDS s"
