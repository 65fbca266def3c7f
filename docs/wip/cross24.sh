# Blocks of 24 (between 16 and 32) and 48 (between 32 and 64) timed beside their
# neighbours (benchmarks/block_cut.py, every row checked against the reference).  Keys
# packed here (docs/wip/pack24.sh -> .revs/b24.tgz); carry [".whl", ".revs/b24.tgz"].
. docs/wip/dev.sh
dev_setup
dev_packs .revs/b24.tgz
timeout ${LIM:-200} python3 benchmarks/block_cut.py --preset qwen3-30b-a3b \
  --sweep "16:160,192,224 24:160,192,224,256,320,384 32:192,224,256,320,384 48:512" \
  > $OUT/q.txt 2>&1; echo "rc $? at $SECONDS s"
timeout $((${END2:-400} - SECONDS)) python3 benchmarks/block_cut.py --preset gpt-oss-120b \
  --sweep "16:320,384,448,512 24:320,384,448,512,640,768 32:384,448,512,640,768 48:1024" \
  > $OUT/g.txt 2>&1; echo "rc $? at $SECONDS s"
timeout $((${END:-560} - SECONDS)) python3 benchmarks/block_cut.py --preset deepseek-v3 \
  --sweep "16:384,512 24:384,512 32:512 48:1024 64:1024" > $OUT/d.txt 2>&1; echo "rc $? at $SECONDS s"
for f in q g d; do grep -vE "^  |Warning|warn" $OUT/$f.txt | grep -v " us$" | tail -n 14; done
echo "total $SECONDS s"
