# Pack, here (no GPU), sweep.sh's keys: blocks BLOCKS (16 24 32 48 64) pinned on PRESETS
# (qwen3-30b-a3b,gpt-oss-120b,deepseek-v3), the decode cut at 0, into .revs/pack/NAME_<B>
# (NAME b24) and .revs/NAME.tgz.  Step 41: as it is (RUNS 1-3), and BLOCKS="64 128"
# PRESETS=qwen3-30b-a3b,gpt-oss-120b NAME=c57 (RUNS 4).
set -e
P="python tools/ptx_pack.py pack"
N=${NAME:-b24}
for b in ${BLOCKS:-16 24 32 48 64}; do
  $P .revs/pack/${N}_$b --preset ${PRESETS:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3} \
    --tokens 1024 --block-size $b --decode-max-tokens 0 --jobs ${JOBS:-2} | tail -n 1
done
tar -czf .revs/$N.tgz .revs/pack/${N}_*
ls -la .revs/$N.tgz
