# The 16 / 24 cut at means 6 .. 18, and 32 / 48 at a mean of 30 (step 41's third call):
# benchmarks/block_cut.py on keys packed here (docs/wip/pack24.sh -> .revs/b24.tgz);
# carry [".whl", ".revs/b24.tgz"].
. docs/wip/dev.sh
dev_setup
dev_packs .revs/b24.tgz .revs/pack/b24_16 .revs/pack/b24_24 .revs/pack/b24_32 .revs/pack/b24_48
timeout 150 python3 benchmarks/block_cut.py --preset qwen3-30b-a3b,gpt-oss-120b \
  --sweep "16:96,128,144,192,256,288 24:96,128,144,192,256,288 32:480,960 48:480,960" > $OUT/c.txt 2>&1; echo "rc $? at $SECONDS s"
grep -vE "^  |Warning|warn" $OUT/c.txt | grep -v " us$" | tail -n 20
