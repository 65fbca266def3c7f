# Pack, here (no GPU), every key the next device calls need into .revs/pack/* and
# .revs/packs.tgz (about 6 MB; git-ignored, a fresh machine has none): the whole gpu
# suite's (test_gpu's cases, FOLD_CASES, test_self_pack's GPU_KEY_CASES, test_wgmma's
# cases in wgmma-cases.txt, test_fuzz's draws) and the bench's T = 1 / 8, all from a
# `git archive` of HEAD (an edit to pymoe/ afterwards makes them stale: pack again).
# About 30 min on 2 cores (step 38: packing them on the device took 483 s of device time).
# Needs `pip install nvidia-nvvm==13.0.88` (the device's own NVVM release).
set -e
rm -rf .revs/main; mkdir -p .revs/main .revs/pack
git archive HEAD pymoe tests tools pyproject.toml | tar -x -C .revs/main
P="python tools/ptx_pack.py pack"
C=""; for c in $(cat docs/wip/wgmma-cases.txt); do C="$C --case $c"; done
$P .revs/pack/wt_wgmma --tree .revs/main --preset "" $C --jobs 2 | tail -n 1
$P .revs/pack/wt_gpu --tree .revs/main --preset "" --gpu-suite --case-list tests.cuda.test_gpu:FOLD_CASES \
  --case-list tests.cuda.test_self_pack:GPU_KEY_CASES --jobs 2 | tail -n 1
$P .revs/pack/wt_fuzz --tree .revs/main --preset "" --fuzz --jobs 2 | tail -n 1
$P .revs/pack/wt_bench --tree .revs/main --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1,8 --jobs 2 | tail -n 1
tar -czf .revs/packs.tgz .revs/pack/wt_*
ls -la .revs/packs.tgz
