# Step 38's last call: the whole gpu suite (5 shards, plain) on this tree, then the ring
# A/B (.revs/knobs: five ring slots at blocks of 64, seven in the wide loop) with every
# key packed here: carry [".whl", ".revs/packs.tgz", ".revs/knobs"] (packs.tgz:
# .revs/pack/{wt_gpu,wt_wgmma,wt_fuzz,wt_bench,ab_main,ab_knobs}).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
tar -xzf .revs/packs.tgz
for d in .revs/pack/wt_* .revs/pack/ab_main; do PYTHONPATH=/tmp/site:$PWD python3 tools/ptx_pack.py install $d 2>&1 | tail -n 1; done
(cd .revs/knobs && PYTHONPATH=/tmp/site:$PWD python3 ../../tools/ptx_pack.py install ../pack/ab_knobs --tree . 2>&1 | tail -n 1)
echo "installed in $SECONDS s"
export OMP_NUM_THREADS=3 PYTHONDONTWRITEBYTECODE=1
for i in 0 1 2 3 4; do
  PYTHONPATH=/tmp/site:$PWD timeout ${SUITE_S:-320} python3 -m pytest -q -p no:cacheprovider -m gpu tests --shard $i/5 -rfE \
    --deselect tests/cuda/test_launch.py::test_disk_cache_fresh_process_compiles_nothing_and_corrupt_entries_recompile \
    > $OUT/s$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4; do
  f=$OUT/s$i.log; echo "== shard $i"; grep -E "^(FAILED|ERROR) " $f | head -n 8; tail -n 1 $f | cut -c1-120
done
echo "suite done at $SECONDS s"
PRESETS=qwen3-30b-a3b,gpt-oss-120b TOK=512,1024,4096 BT=90 OUT=$OUT/b1 bash tools/bench_revs.sh . .revs/knobs 2>&1 | tail -n 7
[ -n "${REVERSE:-}" ] && PRESETS=qwen3-30b-a3b TOK=512,1024,4096 BT=60 OUT=$OUT/b2 bash tools/bench_revs.sh .revs/knobs . 2>&1 | tail -n 4
echo "total $SECONDS s"
