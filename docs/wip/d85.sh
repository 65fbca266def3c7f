# Stop 68: on an H200, the peers side by side on main (keys .revs/peers81.tgz); on any other
# card: (1) the decode fold in place (branch dfold, exported to .revs/df) beside main, the
# harness's pymoe alone at T = 1 / 8 / 64 on the three layers, two rounds alternating;
# (2) test_gpu's fold and misaligned decode cases on df; (3) d84.sh's ncu of fc2 at T = 4096
# on main while time lasts.  Prediction (local SASS, deepseek-v3 T = 1: decode_fc1's loop
# 281 -> 250 instructions, decode_fc2's 241 -> 227): deepseek-v3 T = 1 -3 .. -5 us (its
# decode_fc1 is issue-bound, step 33), less on the others.
# Keys: main's are peers81.tgz's (--peer-layer at T = 1 .. 4096) and ls84.tgz's (d84.sh);
# .revs/d85.tgz holds df_peers (`ptx_pack.py pack .revs/pack/df_peers --tree .revs/df
# --peer-layer --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1,8,64`) and df_t
# (--case-list tests.cuda.test_gpu:FOLD_CASES / MISALIGNED_CASES).
# Also branch dfold2 (.revs/df2: the narrow decode_fc2 folded too, qwen3-30b-a3b's) on
# qwen3-30b-a3b only, keys .revs/d85b.tgz (df2_peers: --preset qwen3-30b-a3b --tokens 1,8,64;
# df2_t: the same case lists).  TREES (default "main df df2:qwen3-30b-a3b", pymoe_rounds's specs) picks the trees.
# carry [".whl", ".peers", ".revs/peers81.tgz", ".revs/ls84.tgz", ".revs/d85.tgz", ".revs/df",
#        ".revs/d85b.tgz", ".revs/df2"]
. docs/wip/dev.sh
[ "${HARN:-1}" = 1 ] && PACKS=.revs/peers81.tgz h200_harness && exit
dev_setup
dev_packs .revs/peers81.tgz
tree_packs .revs/d85.tgz df_peers:df df_t:df
tree_packs .revs/d85b.tgz df2_peers:df2 df2_t:df2
TL=${TL:-100} pymoe_rounds ${TREES:-main df df2:qwen3-30b-a3b}
for t in df df2; do fold_tests $t; done
echo "== tests at $SECONDS s"
[ $SECONDS -lt ${NCU_BY:-330} ] || exit 0
ncu_fc2 .revs/ls84.tgz 100
echo "total $SECONDS s"
