# Stop 64's third call: fc2 as persistent CTAs on the wide loop (the working tree at the time,
# exported to .revs/ps; step 49) beside main (.revs/m2): benchmarks/block_cut.py at blocks of 144
# (qwen3-30b-a3b and gpt-oss-120b T = 4096), two rounds alternating; then on .revs/ps the wide
# loop's GPU tests (test_wgmma's b128 / b144 / nan-scale / e4m3 / misaligned-x cases) in 6 shards,
# racecheck on the b144 cases beside them.  Keys: .revs/ls68.tgz (main at T = 4096) and
# .revs/ps69.tgz (/tmp/pack_ps.sh: the bench at 144, and test_wgmma's wide cases).
# carry [".whl", ".revs/ls68.tgz", ".revs/ps69.tgz", ".revs/m2", ".revs/ps"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/ls68.tgz; tar -xzf .revs/ps69.tgz
python3 tools/ptx_pack.py install .revs/pack/ls_main --tree .revs/m2 2>&1 | tail -n 1
for d in ps_bc ps_t; do python3 tools/ptx_pack.py install .revs/pack/$d --tree .revs/ps 2>&1 | tail -n 1; done
for r in 1 2; do for t in m2 ps; do
  bc $t q_${t}_$r qwen3-30b-a3b "144:4096" 60
  bc $t g_${t}_$r gpt-oss-120b "144:4096" 80
done; done
bc_report 3
cd .revs/ps && export PYTHONPATH=/tmp/site:$PWD
LIM=$((${TL:-585} - SECONDS - 15)) san racecheck rc_w tests/cuda/test_wgmma.py -k "b144 and 440 and wgmma"
shards 6 $((${TL:-585} - SECONDS - 10)) tests/cuda/test_wgmma.py \
  -k "b128 or b144 or nan_scale or e4m3_code or x_not_16"
san_report rc_w
echo "total $SECONDS s"
