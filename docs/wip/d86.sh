# Stop 69: (1) on any card, test_gpu's fold and misaligned decode cases on branch dfold
# (exported to .revs/df; keys df_t in .revs/d85.tgz, and in .revs/d86.tgz df_tm, the fold
# test's table path: `ptx_pack.py pack .revs/pack/df_tm --tree .revs/df --preset ""
# --case-list tests.cuda.test_gpu:FOLD_CASES:mma`), the one check it owes before it lands
# (step 55: T = 1 0 .. -0.8 us on an H100); (2) on an H200 the peers side by side on main
# (keys .revs/peers81.tgz) in the time left (TOTAL, default 590 s, less what (1) took);
# on any other card d84.sh's ncu of fc2 at T = 4096 on main (keys .revs/ls84.tgz).
# carry [".whl", ".peers", ".revs/peers81.tgz", ".revs/ls84.tgz", ".revs/d85.tgz", ".revs/d86.tgz",
#        ".revs/df"]
. docs/wip/dev.sh
dev_setup
tree_packs .revs/d85.tgz df_t:df
tree_packs .revs/d86.tgz df_tm:df
fold_tests df ${TT:-120}
echo "== dfold tests at $SECONDS s"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACKS=.revs/peers81.tgz TL=$((${TOTAL:-590} - SECONDS)) bash docs/wip/a63.sh
else
  ncu_fc2 .revs/ls84.tgz ${NT:-150}
fi
echo "total $SECONDS s"
