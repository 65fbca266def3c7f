# Stop 64's fourth call, by card: on an H200 the peers side by side on main (a66.sh); else step
# 49's persistent fc2 with the thread index masked to its range ((tid + z) & 255: the k-loop 369
# static instructions against 385, main 360; tree .revs/ps2 = persist-fc2.patch + that) beside
# main (.revs/m2): block_cut at blocks of 144 (qwen3-30b-a3b and gpt-oss-120b T = 4096), two
# rounds alternating, then its wide tests in 6 shards with what time is left.  Keys:
# .revs/ls68.tgz (main), .revs/ps70.tgz (/tmp/pack_ps.sh's lines for .revs/ps2).
# carry [".whl", ".peers", ".revs/peers66.tgz", ".revs/ls68.tgz", ".revs/ps70.tgz", ".revs/m2",
#        ".revs/ps2"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
# (on an H200, the session's last 490 s: the rows still in question only)
TL=${TL:-400} PPRE=qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 PTOK=${PTOK:-1,512,4096} \
  h200_harness && exit
tar -xzf .revs/ls68.tgz; tar -xzf .revs/ps70.tgz
python3 tools/ptx_pack.py install .revs/pack/ls_main --tree .revs/m2 2>&1 | tail -n 1
for d in ps2_bc ps2_t; do python3 tools/ptx_pack.py install .revs/pack/$d --tree .revs/ps2 2>&1 | tail -n 1; done
for r in 1 2; do for t in m2 ps2; do
  bc $t q_${t}_$r qwen3-30b-a3b "144:4096" 60
  bc $t g_${t}_$r gpt-oss-120b "144:4096" 80
done; done
bc_report 3
cd .revs/ps2 && export PYTHONPATH=/tmp/site:$PWD
shards 6 $((${TL:-400} - SECONDS)) tests/cuda/test_wgmma.py -k "b128 or b144 or nan_scale or e4m3_code"
echo "total $SECONDS s"
