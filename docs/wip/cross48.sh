# Blocks of 48 routes against 32 and 64 (means 28 .. 56; step 41's first call, when 48
# was not yet an automatic choice): benchmarks/block_cut.py, every row checked against
# the reference.  Keys packed here (docs/wip/pack24.sh -> .revs/b24.tgz); carry
# [".whl", ".revs/b24.tgz"].
. docs/wip/dev.sh
dev_setup
dev_packs .revs/b24.tgz .revs/pack/b24_32 .revs/pack/b24_48 .revs/pack/b24_64
timeout ${LIM:-250} python3 benchmarks/block_cut.py --preset qwen3-30b-a3b \
  --sweep "32:448,512,576,640 48:448,512,576,640,704,768,896 64:512,576,640,704,768,896" \
  > $OUT/q.txt 2>&1; echo "rc $? at $SECONDS s"
timeout $((${END:-540} - SECONDS)) python3 benchmarks/block_cut.py --preset gpt-oss-120b \
  --sweep "32:896,1024,1152,1280 48:896,1024,1152,1280,1536,1792 64:1024,1152,1280,1536,1792" \
  > $OUT/g.txt 2>&1; echo "rc $? at $SECONDS s"
for f in q g; do grep -vE "^  |Warning|warn" $OUT/$f.txt | grep -v " us$" | tail -n 14; done
echo "total $SECONDS s"
