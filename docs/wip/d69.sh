# Stop 64's second call, by card: on an H200 the peers side by side on main (a66.sh); else
# (1) WFIRST 1 (wfirst2.patch, .revs/wf3) beside main (.revs/m2) with benchmarks/block_cut.py at
# blocks of 24 (gpt-oss-120b and deepseek-v3 T = 512) and 32 (gpt-oss-120b T = 896), two rounds
# alternating; (2) test_fuzz on main in 6 shards (the turn bases' owed test); (3) where qwen3-30b-a3b
# and gpt-oss-120b T = 4096 spend a replay (tools/launch_share.py: the plain bench, then without
# the combine, without fc2 and the combine, without route_pack).  Keys: docs/wip/pack68.sh
# (.revs/wf68.tgz, .revs/fuzz68.tgz) and `ptx_pack pack .revs/pack/ls_main --preset
# qwen3-30b-a3b,gpt-oss-120b --tokens 4096` (.revs/ls68.tgz).
# carry [".whl", ".peers", ".revs/peers66.tgz", ".revs/wf68.tgz", ".revs/fuzz68.tgz",
#        ".revs/ls68.tgz", ".revs/m2", ".revs/wf3"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
TL=${TL:-585} h200_harness && exit
tar -xzf .revs/wf68.tgz
for t in m2 wf3; do for d in wf wf32; do
  python3 tools/ptx_pack.py install .revs/pack/${d}_$t --tree .revs/$t 2>&1 | tail -n 1; done; done
dev_packs .revs/fuzz68.tgz; dev_packs .revs/ls68.tgz
for r in 1 2; do for t in m2 wf3; do
  bc $t g_${t}_$r gpt-oss-120b "24:512 32:896" 70
  bc $t d_${t}_$r deepseek-v3 "24:512" 70
done; done
bc_report 3
shards 6 150 tests/cuda/test_fuzz.py
for p in qwen3-30b-a3b gpt-oss-120b; do for d in "" combine fc2,combine route_pack; do
  timeout 60 python3 tools/launch_share.py --drop "$d" -- --preset $p --tokens 4096 --mode graph \
    --no-progress > $OUT/ls_${p}_${d:-all}.txt 2>&1; echo "[$p drop '$d'] rc $?"
  grep -vE "Warn|warn" $OUT/ls_${p}_${d:-all}.txt | tail -n 2
done; done
echo "total $SECONDS s"
