# Stop 69: one L1 / shared-memory carveout for every kernel (branch `carve`: PYMOE_CARVEOUT,
# exported to .revs/cv; and on dfold2, branch `dfold2-carve`, .revs/dc).  Hypothesis (step
# 55): an SM runs CTAs of kernels with different carveouts only after draining and
# reconfiguring, so a dependent (PDL) kernel whose driver-chosen split differs from its
# primary's cannot run its prologue beside the primary's tail; that would explain the
# narrow decode_fc2's unexplained losses (dynamic shared memory +2 us, step 32; the fold
# +1.6 us, step 36, +2.7 us, step 55), each a change of its shared memory.  The harness's
# pymoe alone, rounds alternating: main; cv with PYMOE_CARVEOUT=100 (every kernel prefers
# the most shared memory); dc (=100, qwen3-30b-a3b only: does the narrow fold pay then?).
# Prediction: cv -1 .. -3 us at T = 1 where decode_fc2 is narrow (qwen3-30b-a3b) and dc
# at or below main there; little elsewhere.  Default layers qwen3-30b-a3b and gpt-oss-120b
# (d85: a tree's first process spends ~60 s loading, a later one ~90 s on all three layers
# at T = 1 / 8 / 64), so two rounds fit one call; PPRE / PTOK / ROUNDS / TL widen it.
# Keys: .revs/d87.tgz (cv_peers: `ptx_pack.py pack .revs/pack/cv_peers --tree .revs/cv
# --peer-layer --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1,8,64,512,4096`;
# dc_peers: --tree .revs/dc --preset qwen3-30b-a3b --tokens 1,8,64) and main's peers81.tgz.
# carry [".whl", ".peers", ".revs/peers81.tgz", ".revs/d87.tgz", ".revs/cv", ".revs/dc"]
. docs/wip/dev.sh
dev_setup
dev_packs .revs/peers81.tgz
tree_packs .revs/d87.tgz cv_peers:cv dc_peers:dc
C=PYMOE_CARVEOUT=${CARVE:-100}
PPRE=${PPRE:-qwen3-30b-a3b,gpt-oss-120b} pymoe_rounds ${TREES:-main cv::$C dc:qwen3-30b-a3b:$C}
echo "total $SECONDS s"
