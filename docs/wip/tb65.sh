# Step 47's tbase.patch (the ring loop's copy addresses moved a turn at a time where a thread
# stages two routes: blocks of 48, and fc1 at 64) beside main in one call:
# benchmarks/block_cut.py from each tree at blocks of 48 (qwen3-30b-a3b T = 512 / 640,
# gpt-oss-120b T = 1152) and 64 (qwen3-30b-a3b T = 896), two rounds; then test_wgmma's block
# cases at 48 / 64 and test_gpu's on the tbase tree, and racecheck on the misaligned-x cases.
# Trees (export here): .revs/m (main: `git archive HEAD pymoe benchmarks tests tools
# pyproject.toml setup.cfg`), .revs/tb (the same after `git apply docs/wip/tbase.patch`).
# Keys, packed here (about 15 min on 2 cores), for each tree t in m, tb:
#   python tools/ptx_pack.py pack .revs/pack/tb_$t --tree .revs/$t --preset qwen3-30b-a3b \
#     --tokens 512,640 --block-size 48 --decode-max-tokens 0 --jobs 2
#   ... --preset qwen3-30b-a3b --tokens 896 --block-size 64 (into .revs/pack/tb64_$t)
#   ... --preset gpt-oss-120b --tokens 1152 --block-size 48 (into .revs/pack/tbg_$t)
#   python tools/ptx_pack.py pack .revs/pack/tbwg --tree .revs/tb --preset "" \
#     $(for c in $(cat docs/wip/wgmma-cases.txt); do echo --case $c; done) \
#     --gpu-suite --case-list tests.cuda.test_gpu:FOLD_CASES --jobs 2
#   tar -czf .revs/tb65.tgz .revs/pack/tb*
# carry [".whl", ".revs/tb65.tgz", ".revs/m", ".revs/tb"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/tb65.tgz
for t in m tb; do for d in .revs/pack/tb_$t .revs/pack/tb64_$t .revs/pack/tbg_$t; do
  python3 tools/ptx_pack.py install $d --tree .revs/$t 2>&1 | tail -n 1; done; done
python3 tools/ptx_pack.py install .revs/pack/tbwg --tree .revs/tb 2>&1 | tail -n 1
for r in 1 2; do for t in m tb; do
  bc $t q_${t}_$r qwen3-30b-a3b "48:512,640 64:896" 90
  bc $t g_${t}_$r gpt-oss-120b "48:1152" 60
done; done
bc_report 4
cd .revs/tb && export PYTHONPATH=/tmp/site:$PWD
LIM=$((${TL:-570} - SECONDS - 20)) san racecheck rc_x tests/cuda/test_wgmma.py -k "x_not_16 and (48 or 64)"
shards 6 $((${TL:-570} - SECONDS)) tests/cuda/test_wgmma.py tests/cuda/test_gpu.py
san_report rc_x
echo "total $SECONDS s"
