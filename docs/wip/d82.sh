# Stop 67, with little device time left: d80.sh's bench (bulk-copy rows .revs/bk beside main's
# kernels .revs/dx, qwen3-30b-a3b / gpt-oss-120b T = 4096 at blocks of 144, two rounds) and
# tests/cuda/test_bulk.py, then test_wgmma's wide cases on bk only while TLB (default 240) s last.
# carry [".whl", ".revs/d80.tgz", ".revs/dx", ".revs/bk"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tree_packs .revs/d80.tgz dx_bc:dx bk_bc:bk bk_t:bk
for r in 1 2; do for t in dx bk; do
  bc $t q_${t}_$r qwen3-30b-a3b "144:4096" 50
  bc $t g_${t}_$r gpt-oss-120b "144:4096" 60
done; done
bc_report 3
cd .revs/bk && export PYTHONPATH=/tmp/site:$PWD
timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_bulk.py 2>&1 | tail -n 3
L=$((${TLB:-240} - SECONDS))
[ $L -gt 40 ] && shards 6 $L tests/cuda/test_wgmma.py -k "b128 or b144 or nan_scale or e4m3_code or x_not_16"
echo "total $SECONDS s"
