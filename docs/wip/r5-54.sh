# Step 39's second call: racecheck on main's ring, GEMMs and decode kernels (owed since
# step 37), and branch wip/ring5-64 (.revs/r5, five ring slots at blocks of 64) through every
# GPU test at blocks of 64, plain and under memcheck / racecheck / synccheck.  Every key
# packed here (docs/wip/pack.sh + the r5 tree's, .revs/pack/ab_r5); carry
# [".whl", ".revs/packs.tgz", ".revs/r5"].  REST: memcheck's leftovers from san54.sh too.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export OMP_NUM_THREADS=2 PYTHONDONTWRITEBYTECODE=1
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
tar -xzf .revs/packs.tgz
for d in .revs/pack/wt_* .revs/pack/ab_main; do PYTHONPATH=/tmp/site:$PWD python3 tools/ptx_pack.py install $d 2>&1 | tail -n 1; done
(cd .revs/r5 && PYTHONPATH=/tmp/site:$PWD python3 ../../tools/ptx_pack.py install ../pack/ab_r5 --tree . 2>&1 | tail -n 1)
echo "installed in $SECONDS s"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PT="python3 -m pytest -v -p no:cacheprovider -m gpu"
LIM=${LIM:-520}
san() {  # TOOL NAME ARGS...: compute-sanitizer TOOL over pytest ARGS, log $OUT/NAME.log
  local tool=$1 name=$2; shift 2
  timeout $LIM $SAN --tool $tool --target-processes all --print-limit 50 --error-exitcode 3 \
    $PT "$@" > $OUT/$name.log 2>&1
}
# main
(export PYTHONPATH=/tmp/site:$PWD
 san racecheck rc_main tests/cuda/test_wgmma.py::test_wgmma_block_gemm_matches_reference tests/cuda/test_mma.py tests/cuda/test_dequant.py &
 san racecheck rcd_main tests/cuda/test_gpu.py -k "(T1- or T8- or decode) and (H256 or H2880 or H136)" &
 if [ -n "${REST:-}" ]; then
   mapfile -t A < "$REST"
   san memcheck mcrest_main "${A[@]}" &
 fi
 wait) &
# the branch: its B = 64 tests (test_wgmma's block GEMM and NaN-scale cases at 64, test_gpu's
# T = 64 / 65 on H = 256), plain first, then each sanitizer
R5W='(block_gemm_matches and (201-256 or 101-2048 or 100-272 or 160-)) or nan_scale_stays_nan and 201-256'
R5G='T65-H256 or T64-H256'
(cd .revs/r5 && export PYTHONPATH=/tmp/site:$PWD
 timeout $LIM $PT tests/cuda/test_wgmma.py -k "$R5W or block_gemm_ptx" > $OUT/r5_plain_w.log 2>&1
 timeout $LIM $PT tests/cuda/test_gpu.py -k "$R5G" > $OUT/r5_plain_g.log 2>&1
 san memcheck r5_mc tests/cuda/test_wgmma.py -k "$R5W" &
 san racecheck r5_rc tests/cuda/test_wgmma.py -k "$R5W" &
 san synccheck r5_sc tests/cuda/test_wgmma.py -k "$R5W" &
 san memcheck r5_mcg tests/cuda/test_gpu.py -k "$R5G" &
 wait) &
wait
for f in $(cd $OUT && ls *.log | sed 's/.log$//'); do
  L=$OUT/$f.log
  echo "== $f: $(grep -cE " PASSED" $L) passed, $(grep -cE " (FAILED|ERROR)( |$)" $L) failed"
  grep -E "^(FAILED|ERROR) " $L | head -n 4
  grep -E "= [0-9]+ (passed|failed)" $L | tail -n 1
  grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $L | sort | uniq -c
  grep -E "^========= +(Invalid|Misaligned|Out of|Uninitialized|Race|Barrier|Program hit|Error|Cuda|Hardware|Divergent)" $L \
    | grep -v cuGetProcAddress | sort | uniq -c | head -n 5
done
echo "total $SECONDS s"
