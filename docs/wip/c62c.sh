# Stop 60: the chunk staging (wip/chunks, landed as 4938a1a) against main in one call:
# benchmarks/block_cut.py from each tree (T = 512 on the three layers at blocks of 48 / 24 /
# 24, qwen3 T = 64 at 16, the b144 row), then test_wgmma, test_bad_inputs and
# test_self_pack on chunks in 6 shards for the rest of the call (TL, 575 s).
# Trees: .revs/both (main's pymoe), .revs/chunks (`git archive` of wip/chunks: pymoe
# benchmarks tests tools pyproject.toml setup.cfg).  Keys, packed here with
# `python tools/ptx_pack.py pack DIR --tree TREE --decode-max-tokens 0 --jobs 2` and:
#   .revs/s61.tgz   main's s61_both_{24,48,144} (stop 59)
#   .revs/c62.tgz   c62_24 (--preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 --tokens 512
#                   --block-size 24), c62_48 (qwen3-30b-a3b 512 48), c62_16
#                   (qwen3-30b-a3b,gpt-oss-120b 64 16), c62_144 (qwen3-30b-a3b 4096 144)
#                   of chunks; c62m_16 (as c62_16) of main
#   .revs/c62wg.tgz c62_wg: chunks' --case of each line of wgmma-cases.txt (--preset "")
# carry [".whl", ".revs/s61.tgz", ".revs/c62.tgz", ".revs/c62wg.tgz", ".revs/both", ".revs/chunks"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/s61.tgz; tar -xzf .revs/c62.tgz; tar -xzf .revs/c62wg.tgz
for d in .revs/pack/s61_both_{24,48,144} .revs/pack/c62m_16; do
  python3 tools/ptx_pack.py install $d --tree .revs/both 2>&1 | tail -n 1
done
for d in .revs/pack/c62_{16,24,48,144,wg}; do
  python3 tools/ptx_pack.py install $d --tree .revs/chunks 2>&1 | tail -n 1
done
echo "installed at $SECONDS s"
for t in both chunks; do
  bc $t q_$t qwen3-30b-a3b "48:512 16:64" 60
  bc $t g_$t gpt-oss-120b "24:512" 40
  bc $t d_$t deepseek-v3 "24:512" 60
done
for t in both chunks; do bc $t w_$t qwen3-30b-a3b "144:4096" 50; done
bc_report 4
cd .revs/chunks && export PYTHONPATH=/tmp/site:$PWD
shards 6 $((${TL:-575} - SECONDS)) tests/cuda/test_wgmma.py tests/cuda/test_bad_inputs.py \
  tests/cuda/test_self_pack.py
echo "total $SECONDS s"
