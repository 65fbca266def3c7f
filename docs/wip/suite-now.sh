# The gpu suite on this tree in 4 plain shards, beside memcheck on the files the
# lut removal touches most (dequant, mma), from .revs/pack/wt_* (docs/wip/pack.sh).
# Carry [".whl", ".revs/pack/wt_gpu", ".revs/pack/wt_fold"].  About 7 min.  test_fuzz is
# left out (its drawn keys are not in the packs: ptx_pack.py --fuzz packs them), and so
# are the probes and the reliability runs.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=/tmp/site:$PWD OMP_NUM_THREADS=4 PYTHONDONTWRITEBYTECODE=1
for d in .revs/pack/wt_*; do python3 tools/ptx_pack.py install $d | tail -n 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for i in 0 1 2 3; do
  timeout 470 python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda --ignore=tests/cuda/test_fuzz.py --ignore=tests/cuda/test_probes.py --ignore=tests/cuda/test_reliability.py --shard $i/4 -rf > /tmp/s$i.log 2>&1 &
done
timeout 470 $SAN --tool memcheck --target-processes all --print-limit 5 --error-exitcode 3 \
  python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_dequant.py tests/cuda/test_mma.py \
  > /tmp/mc.log 2>&1 &
wait
for f in /tmp/s0.log /tmp/s1.log /tmp/s2.log /tmp/s3.log /tmp/mc.log; do
  echo "== $f"; grep -E "FAILED|Error|error" $f | grep -v "cuGetProcAddress\|CUDA_ERROR_NOT\|=========     " | head -n 8
  grep -E "passed|failed" $f | tail -n 1; grep -E "ERROR SUMMARY" $f | sort | uniq -c
done
