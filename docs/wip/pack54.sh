# Step 39's keys beyond docs/wip/pack.sh (run it first), here, into .revs/pack/* and
# .revs/packs.tgz: test_wgmma's two new NVFP4 cases at blocks of 64 (wt_extra), test_fuzz's
# 30 draws under memcheck (wt_fuzz30, PYMOE_FUZZ_EXAMPLES=30: 4 keys the 300 do not draw),
# the A/B's bench keys for main (ab_main) and for wip/ring5-64 exported to .revs/r5 with its
# B = 64 test keys (ab_r5; .revs/r5/tests/cuda/r5cases.py lists test_gpu's T = 64 / 65 cases
# on H = 256); PEERS=1: the peers harness's layer (wt_peers).
set -e
P="python tools/ptx_pack.py pack"
$P .revs/pack/wt_extra --tree .revs/main --preset "" --case 160-704-208-8-2-bfloat16-nvfp4-swigluoai-up_gate \
  --case 160-640-336-8-2-float16-nvfp4-relu2-gate_up --jobs 2 | tail -n 1
PYMOE_FUZZ_EXAMPLES=30 $P .revs/pack/wt_fuzz30 --tree .revs/main --preset "" --fuzz --jobs 2 | tail -n 1
$P .revs/pack/ab_main --tree .revs/main --preset qwen3-30b-a3b,gpt-oss-120b --tokens 512,1024 --jobs 2 | tail -n 1
C=""; for c in 201-256-144-8-2-bfloat16-mxfp4-silu-gate_up 101-2048-768-16-8-bfloat16-mxfp4-silu-gate_up \
  100-272-80-6-3-float16-mxfp4-swigluoai-interleaved 160-704-208-8-2-bfloat16-nvfp4-swigluoai-up_gate \
  160-640-336-8-2-float16-nvfp4-relu2-gate_up; do C="$C --case $c"; done
(cd .revs/r5 && PYTHONPATH=$PWD $P ../pack/ab_r5 --tree . --preset qwen3-30b-a3b,gpt-oss-120b --tokens 512,1024 \
  $C --case-list tests.cuda.r5cases:CASES --jobs 2 | tail -n 1)
if [ "${PEERS:-0}" = 1 ]; then   # a second tarball, .revs/peers.tgz
  $P .revs/pack/wt_peers --tree .revs/main --preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 --peer-layer \
    --tokens 1,8,32,64,512,4096 --jobs 2 | tail -n 1
  tar -czf .revs/peers.tgz .revs/pack/wt_peers; ls -la .revs/peers.tgz; exit 0
fi
tar -czf .revs/packs.tgz .revs/pack/wt_* .revs/pack/ab_*
ls -la .revs/packs.tgz
