# Step 38, call A: the whole gpu suite, plain, in 5 shards, on this tree (227c3d5's kernels).
# Carry [".whl", ".revs/pack"]: every key is packed on the device (16 cores: test_gpu's
# cases + FOLD_CASES + test_self_pack's, test_wgmma's cases, test_fuzz's draws, the bench's
# T = 1 / 8), skipping those .revs/pack/wt_* already holds from a pack here.
# Keys go to .revs/cache (git-ignored, not carried), which a warm machine keeps for
# the next call (suite53-san.sh).  The fresh-process disk-cache test is deselected (it
# compiles into an empty cache by design).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=/tmp/site:$PWD PYMOE_CACHE_DIR=$PWD/.revs/cache OMP_NUM_THREADS=4 PYTHONDONTWRITEBYTECODE=1
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
C=""
for c in $(cat docs/wip/wgmma-cases.txt); do C="$C --case $c"; done
P="python3 tools/ptx_pack.py pack"
( $P .revs/pack/wt_wgmma --preset "" $C --jobs 5 2>&1 | tail -n 1 ) &
( $P .revs/pack/wt_gpu --preset "" --gpu-suite --case-list tests.cuda.test_gpu:FOLD_CASES \
    --case-list tests.cuda.test_self_pack:GPU_KEY_CASES --jobs 6 2>&1 | tail -n 1 ) &
( $P .revs/pack/wt_fuzz --preset "" --fuzz --jobs 3 2>&1 | tail -n 1;
  $P .revs/pack/wt_bench --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1,8 --jobs 3 2>&1 | tail -n 1 ) &
wait
for d in .revs/pack/wt_*; do python3 tools/ptx_pack.py install $d 2>&1 | tail -n 1; done
echo "packed and installed in $SECONDS s"
L=$((575 - SECONDS))
for i in 0 1 2 3 4; do
  timeout $L python3 -m pytest -q -p no:cacheprovider -m gpu tests --shard $i/5 -rfE \
    --deselect tests/cuda/test_launch.py::test_disk_cache_fresh_process_compiles_nothing_and_corrupt_entries_recompile \
    > $OUT/s$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4; do
  f=$OUT/s$i.log; echo "== shard $i"; grep -E "^(FAILED|ERROR) " $f | head -n 8
  tail -n 1 $f
done
echo "total $SECONDS s"
