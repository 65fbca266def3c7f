# Stop 66's first call: fc1 on the wide loop applying its activation from registers and storing
# straight to the activation rows (docs/wip/fc1-direct.patch on HEAD, exported to .revs/f1) beside
# fc2-direct alone (.revs/dx, = HEAD's kernels): benchmarks/block_cut.py at blocks of 144
# (qwen3-30b-a3b and gpt-oss-120b T = 4096), two rounds alternating; then on .revs/f1
# test_wgmma's wide cases in 6 shards.  Keys: .revs/dx73.tgz (dx), .revs/f1.tgz (f1: the bench
# at 144 and test_wgmma's b128 cases).
# carry [".whl", ".revs/dx73.tgz", ".revs/f1.tgz", ".revs/dx", ".revs/f1"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/dx73.tgz; tar -xzf .revs/f1.tgz
for d in dx_bc dx_t; do python3 tools/ptx_pack.py install .revs/pack/$d --tree .revs/dx 2>&1 | tail -n 1; done
for d in f1_bc f1_t; do python3 tools/ptx_pack.py install .revs/pack/$d --tree .revs/f1 2>&1 | tail -n 1; done
for r in 1 2; do for t in dx f1; do
  bc $t q_${t}_$r qwen3-30b-a3b "144:4096" 60
  bc $t g_${t}_$r gpt-oss-120b "144:4096" 80
done; done
bc_report 3
cd .revs/f1 && export PYTHONPATH=/tmp/site:$PWD
shards 6 $((${TL:-585} - SECONDS - 10)) tests/cuda/test_wgmma.py \
  -k "b128 or b144 or nan_scale or e4m3_code or x_not_16"
echo "total $SECONDS s"
