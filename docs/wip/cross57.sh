# The 64 / 128 cut at means 52-60 (step 40 left it unmeasured between 48 and 64):
# benchmarks/block_cut.py on keys packed here:
#   python tools/ptx_pack.py pack .revs/pack/c57_$b --preset qwen3-30b-a3b,gpt-oss-120b \
#     --tokens 1024 --block-size $b --decode-max-tokens 0   (b = 64, 128)
#   tar -czf .revs/c57.tgz .revs/pack/c57_*
# carry [".whl", ".revs/c57.tgz"].
. docs/wip/dev.sh
dev_setup
dev_packs .revs/c57.tgz
timeout ${LIM:-200} python3 benchmarks/block_cut.py --preset qwen3-30b-a3b,gpt-oss-120b \
  --sweep "64:832,896,960,1664,1792,1920 128:832,896,960,1664,1792,1920" > $OUT/c.txt 2>&1
echo "rc $? at $SECONDS s"; grep -vE "^  |Warning|warn" $OUT/c.txt | grep -v " us$" | tail -n 16
