# Step 42's second call: what an expert's spill into one more block of 128 costs
# (main's wide loop, blocks of 128 pinned, benchmarks/block_cut.py): T around the
# means 128 (gpt-oss-120b, qwen3-30b-a3b) and 256 (qwen3), where about half the
# experts take one more, nearly empty, block.  Keys: .revs/wide.tgz's wide_base
# (main at aaa6351; a T's own route_pack / combine keys compile here).
# carry [".whl", ".revs/wide.tgz"]
. docs/wip/dev.sh
dev_setup
dev_packs .revs/wide.tgz .revs/pack/wide_base
timeout 280 python3 benchmarks/block_cut.py --preset gpt-oss-120b \
  --sweep "128:3328,3584,3840,4096,4352,4608" > $OUT/spill_g.txt 2>&1
echo "gpt-oss at $SECONDS s"
timeout $((560 - SECONDS)) python3 benchmarks/block_cut.py --preset qwen3-30b-a3b \
  --sweep "128:1792,1920,2048,2176,2304,3584,3840,4096,4352,4608" > $OUT/spill_q.txt 2>&1
echo "qwen3 at $SECONDS s"
for f in $OUT/spill_?.txt; do echo "== $f"; grep -vE "Warning|warn" $f | tail -n 12; done
