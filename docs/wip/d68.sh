# Stop 64's first call, by card: on an H200 the peers side by side on main (a66.sh: pack66's
# peers keys, .revs/peers66.tgz; 438 s on an H100); on an H100 (the harness ran there in stop
# 63) what step 48 left unmeasured: gpt-oss-120b T = 1152 at blocks of 48, main before the turn
# bases (.revs/m, 4fd1547) against main (.revs/tb = 6bd035e's pymoe), two rounds alternating,
# keys tb65.tgz's tbg_*; then test_bad_inputs, test_self_pack and test_streams on main's
# pymoe (.revs/tb) in 6 shards (keys: tbwg; the rest compile there).
# carry [".whl", ".peers", ".revs/peers66.tgz", ".revs/tb65.tgz", ".revs/m", ".revs/tb"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
TL=${TL:-585} h200_harness && exit
echo "== not an H200: block_cut and tests"
tar -xzf .revs/tb65.tgz
for t in m tb; do python3 tools/ptx_pack.py install .revs/pack/tbg_$t --tree .revs/$t 2>&1 | tail -n 1; done
python3 tools/ptx_pack.py install .revs/pack/tbwg --tree .revs/tb 2>&1 | tail -n 1
for r in 1 2; do for t in m tb; do bc $t g_${t}_$r gpt-oss-120b "48:1152" 70; done; done
bc_report 4
cd .revs/tb && export PYTHONPATH=/tmp/site:$PWD
shards 6 $((${TL:-585} - SECONDS)) tests/cuda/test_bad_inputs.py tests/cuda/test_self_pack.py \
  tests/cuda/test_streams.py
echo "total $SECONDS s"
