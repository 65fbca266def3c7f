# The next call after step 40 (its block cuts moved: means 9-11 now run at blocks of 16,
# 29-30 at 32): test_gpu.py, test_wgmma.py and test_self_pack.py on a GPU, whose cases at
# those means (test_gpu's T = 33 / 40 / 48 rows, T = 9 at E 8 k 8, T = 257 at E 128 k 4;
# test_wgmma's NaN-scale case at T = 193 and its 129-512-224 NVFP4 case, now at 16) have
# not run there.  Pack first (docs/wip/pack.sh: geometry.py changed, every key is stale);
# carry [".whl", ".revs/packs.tgz"].  6 shards at once, SUITE_S (400 s) each.
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
dev_packs .revs/packs.tgz .revs/pack/wt_gpu .revs/pack/wt_wgmma
for i in 0 1 2 3 4 5; do
  timeout ${SUITE_S:-400} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE --shard $i/6 \
    tests/cuda/test_gpu.py tests/cuda/test_wgmma.py tests/cuda/test_self_pack.py > $OUT/s$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5; do
  f=$OUT/s$i.log; echo "== shard $i"; grep -E "^(FAILED|ERROR) " $f | head -n 8; tail -n 1 $f | cut -c1-120
done
echo "total $SECONDS s"
