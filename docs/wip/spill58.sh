# Step 42's second call: what an expert's spill into one more block of 128 costs
# (main's wide loop, blocks of 128 pinned, benchmarks/block_cut.py): T around the
# means 128 (gpt-oss-120b, qwen3-30b-a3b) and 256 (qwen3), where about half the
# experts take one more, nearly empty, block; then five ring slots in the wide loop
# (.revs/ring5: main with WGMMA_V2_WIDE_RING = 5) beside main, main first and last.
# Keys: .revs/wide.tgz's wide_base (main at aaa6351) and .revs/ring5.tgz (a T's
# own route_pack / combine keys compile here).
# carry [".whl", ".revs/wide.tgz", ".revs/ring5.tgz", ".revs/ring5"]
. docs/wip/dev.sh
dev_setup
dev_packs .revs/wide.tgz .revs/pack/wide_base
TREE=.revs/ring5 dev_packs .revs/ring5.tgz   # (step 42's run lacked TREE: compiled there)
B="python3 -m pymoe bench --block-size 128 --decode-max-tokens 0 --no-progress --mode graph"
ab() {   # TREE NAME: qwen3 T = 2048, 4096 and gpt-oss-120b T = 4096 from TREE
  (cd $1 && PYTHONPATH=/tmp/site:$PWD timeout 100 $B --preset qwen3-30b-a3b --tokens 2048,4096 \
    && PYTHONPATH=/tmp/site:$PWD timeout 80 $B --preset gpt-oss-120b --tokens 4096) > $OUT/ab_$2.txt 2>&1
  echo "$2 at $SECONDS s"
}
ab . main1
ab .revs/ring5 ring5
ab . main2
timeout 150 python3 benchmarks/block_cut.py --preset gpt-oss-120b \
  --sweep "128:3328,3584,3840,4096,4352,4608" > $OUT/spill_g.txt 2>&1
echo "gpt-oss at $SECONDS s"
timeout $((570 - SECONDS)) python3 benchmarks/block_cut.py --preset qwen3-30b-a3b \
  --sweep "128:1792,1920,2048,2176,2304,3584,3840,4096,4352,4608" > $OUT/spill_q.txt 2>&1
echo "qwen3 at $SECONDS s"
for f in $OUT/ab_*.txt; do echo "== $f"; grep -E "graph" $f | awk '{print $1, $2, $5}'; done
for f in $OUT/spill_?.txt; do echo "== $f"; grep -vE "Warning|warn" $f | tail -n 12; done
