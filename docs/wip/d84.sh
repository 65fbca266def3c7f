# Stop 68: on an H200, the peers side by side on main (keys .revs/peers81.tgz, main's kernels
# since 5c1e69c); on any other card, ncu72.sh's samples: where fc2 at T = 4096 spends its ~8 us
# a CTA outside the k-loop (qwen3-30b-a3b, then gpt-oss-120b), on main, alone on the GPU.
# Keys for the ncu part: main's bench keys at T = 4096 (.revs/m3 a `git archive` of HEAD's
# pymoe tests tools benchmarks pyproject.toml):
#   python tools/ptx_pack.py pack .revs/pack/ls_m3 --tree .revs/m3 \
#     --preset qwen3-30b-a3b,gpt-oss-120b --tokens 4096 --jobs 2; tar -czf .revs/ls84.tgz .revs/pack/ls_m3
# carry [".whl", ".peers", ".revs/peers81.tgz", ".revs/ls84.tgz"]
. docs/wip/dev.sh
PACKS=.revs/peers81.tgz h200_harness && exit
dev_setup
ncu_fc2 .revs/ls84.tgz ${NT:-150}
echo "total $SECONDS s"
