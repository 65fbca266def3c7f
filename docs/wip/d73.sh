# Stop 65's call: fc2's wide-loop accumulators stored from registers straight to the route rows
# (no tile in shared memory, no barrier: the working tree at the time, exported to .revs/dx)
# beside main (.revs/m2): with NCU=1, ncu's source view of main's qwen3-30b-a3b T = 4096 fc2 first
# (ncu72.sh's question: where its ~8 us a CTA outside the k-loop go; step 50 ran without it,
# 552 s), then benchmarks/block_cut.py at
# blocks of 144 (qwen3-30b-a3b and gpt-oss-120b T = 4096), two rounds alternating; then on
# .revs/dx test_wgmma's wide cases in 6 shards.  Keys: .revs/ls68.tgz (main at T = 4096) and
# .revs/dx73.tgz (the bench at 144 and test_wgmma's wide cases on .revs/dx).
# carry [".whl", ".revs/ls68.tgz", ".revs/dx73.tgz", ".revs/m2", ".revs/dx"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/ls68.tgz; tar -xzf .revs/dx73.tgz
python3 tools/ptx_pack.py install .revs/pack/ls_main --tree .revs/m2 2>&1 | tail -n 1
for d in dx_bc dx_t; do python3 tools/ptx_pack.py install .revs/pack/$d --tree .revs/dx 2>&1 | tail -n 1; done
R=$PWD
if [ -n "${NCU:-}" ]; then
  mkdir -p $OUT/ncu_q
  (cd .revs/m2 && PYTHONPATH=/tmp/site:$PWD NT=150 KBASE=mangled KREGEX=regex:kernels3fc2 \
    OUT=$OUT/ncu_q bash tools/ncu_source.sh qwen3-30b-a3b 4096 1 > $OUT/ncu_q.txt 2>&1)
  echo "== ncu at $SECONDS s"; head -n 60 $OUT/ncu_q/src_T4096.txt
fi
for r in 1 2; do for t in m2 dx; do
  bc $t q_${t}_$r qwen3-30b-a3b "144:4096" 60
  bc $t g_${t}_$r gpt-oss-120b "144:4096" 80
done; done
bc_report 3
cd .revs/dx && export PYTHONPATH=/tmp/site:$PWD
shards 6 $((${TL:-585} - SECONDS - 10)) tests/cuda/test_wgmma.py \
  -k "b128 or b144 or nan_scale or e4m3_code or x_not_16"
echo "total $SECONDS s"
