# Pack the kernels the next device calls need, here (no GPU), into .revs/pack/wt_*
# (git-ignored; a fresh machine has none): the whole gpu suite's keys, the fold bit
# test's and the bench's T = 1 / 8 keys, all from this tree (an edit to pymoe/cuda or
# pymoe/geometry.py afterwards makes them stale: pack again).  About 15 min on 2 cores.
# Needs `pip install nvidia-nvvm==13.0.88` (the device's own NVVM release).
# The device scripts (next-suite.sh, next-h200.sh) install every .revs/pack/wt_* there.
set -e
mkdir -p .revs/pack
P="python tools/ptx_pack.py pack"
$P .revs/pack/wt_bench --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1,8 --jobs 2
$P .revs/pack/wt_fold --preset "" --case-list tests.cuda.test_gpu:FOLD_CASES --jobs 2
$P .revs/pack/wt_gpu --preset "" --gpu-suite --jobs 2
ls .revs/pack/wt_* | wc -l
