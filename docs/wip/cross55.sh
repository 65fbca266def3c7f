# The block cuts measured again (benchmarks/block_cut.py): every T of the sweep at each
# pinned block of routes, alone on the GPU; BLOCK_MAX_MEAN's table is step 19's (H200), from
# before the ring's turn unroll, six slots at 32 and five at 64.  Keys packed here
# (docs/wip/pack-cross.sh -> .revs/cross.tgz); carry [".whl", ".revs/cross.tgz"].
# PRESETS (qwen3-30b-a3b,gpt-oss-120b), SWEEP (pack-cross.sh's), LIM (520 s).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=/tmp/site:$PWD PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
tar -xzf .revs/cross.tgz
for d in .revs/pack/cb_*; do python3 tools/ptx_pack.py install $d 2>&1 | tail -n 1; done
echo "installed in $SECONDS s"
SWEEP=${SWEEP:-"8:32,64,128,256 16:64,128,256,512 32:128,256,384,512,768,1024 64:384,512,768,1024,1536,2048 128:768,1024,1536,2048,3072"}
timeout ${LIM:-520} python3 benchmarks/block_cut.py --preset ${PRESETS:-qwen3-30b-a3b,gpt-oss-120b} \
  --sweep "$SWEEP" > $OUT/cross.txt 2>&1; echo "rc $?"
grep -vE "^  |Warning|warn" $OUT/cross.txt | grep -v " us$" | tail -n 60
echo "total $SECONDS s"
