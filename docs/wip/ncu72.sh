# Step 49's Next 2 (not run yet): where qwen3-30b-a3b T = 4096's fc2 spends its ~8 us a CTA
# outside the k-loop (setup loads, the ring's first copies, the epilogue), from ncu's warp-state
# samples per SASS instruction on main, alone on the GPU; then the same for gpt-oss-120b (45
# k-tiles a CTA, for the per-k-tile share).  Read the samples by region: before the first
# BAR.SYNC of the k-loop, the k-loop, after its last HGMMA.  Keys (main's bench keys at T =
# 4096, about 8 min here; .revs/m2 a `git archive` of HEAD's pymoe tests tools benchmarks):
#   python tools/ptx_pack.py pack .revs/pack/ls_main --tree .revs/m2 \
#     --preset qwen3-30b-a3b,gpt-oss-120b --tokens 4096 --jobs 2
#   tar -czf .revs/ls68.tgz .revs/pack/ls_main
# About 4 min on the device.
# carry [".whl", ".peers", ".revs/peers66.tgz", ".revs/ls68.tgz"]
. docs/wip/dev.sh
dev_setup
TL=${TL:-540} h200_harness && exit
ncu_fc2 .revs/ls68.tgz ${NT:-150}
echo "total $SECONDS s"
