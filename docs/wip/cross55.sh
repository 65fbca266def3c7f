# The block cuts measured again (benchmarks/block_cut.py): every T of the sweep at each
# pinned block of routes, alone on the GPU; BLOCK_MAX_MEAN's table is step 19's (H200), from
# before the ring's turn unroll, six slots at 32 and five at 64.  Keys packed here
# (docs/wip/pack-cross.sh -> .revs/cross.tgz); carry [".whl", ".revs/cross.tgz"].
# PRESETS (qwen3-30b-a3b,gpt-oss-120b), SWEEP (pack-cross.sh's), LIM (330 s); then deepseek-v3
# on DSWEEP (none: skipped) until END (570) s.
. docs/wip/dev.sh
dev_setup
dev_packs .revs/cross.tgz
SWEEP=${SWEEP:-"8:32,64,128,256 16:64,128,256,512 32:128,256,384,512,768,1024 64:384,512,768,1024,1536,2048 128:768,1024,1536,2048,3072"}
timeout ${LIM:-330} python3 benchmarks/block_cut.py --preset ${PRESETS:-qwen3-30b-a3b,gpt-oss-120b} \
  --sweep "$SWEEP" > $OUT/cross.txt 2>&1; echo "rc $? at $SECONDS s"
grep -vE "^  |Warning|warn" $OUT/cross.txt | grep -v " us$" | tail -n 60
# deepseek-v3 (its reference check is the slow part): the rows near its cuts only
if [ "${DSWEEP:-}" != none ]; then
  timeout $((${END:-570} - SECONDS)) python3 benchmarks/block_cut.py --preset deepseek-v3 \
    --sweep "${DSWEEP:-16:256,512 32:256,512,1024 64:512,1024,2048 128:2048}" > $OUT/cross_ds.txt 2>&1
  echo "rc $? at $SECONDS s"; grep -vE "^  |Warning|warn" $OUT/cross_ds.txt | tail -n 12
fi
echo "total $SECONDS s"
