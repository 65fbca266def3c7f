# Step 42's third call: blocks of 144 (wip/b144, exported to .revs/b144) against
# 128 in one process from that tree (benchmarks/block_cut.py, both pinned, every T
# packed), around the means where 128 spills (gpt-oss-120b / deepseek-v3 T = 4096,
# qwen3-30b-a3b T = 2048 / 4096) and away from them (means 64 .. 112, 512).
# Keys: .revs/b144.tgz (b144_128, b144_144 packed here from .revs/b144).
# carry [".whl", ".revs/b144.tgz", ".revs/b144"]
. docs/wip/dev.sh
dev_setup
TREE=.revs/b144 dev_packs .revs/b144.tgz
cd .revs/b144
export PYTHONPATH=/tmp/site:$PWD
timeout 130 python3 benchmarks/block_cut.py --preset gpt-oss-120b \
  --sweep "128:${GT:-2048,3584,4096} 144:${GT:-2048,3584,4096}" > $OUT/b144_g.txt 2>&1
echo "gpt-oss at $SECONDS s"
timeout 110 python3 benchmarks/block_cut.py --preset qwen3-30b-a3b \
  --sweep "128:${QT:-2048,4096,8192} 144:${QT:-2048,4096,8192}" > $OUT/b144_q.txt 2>&1
echo "qwen3 at $SECONDS s"
timeout $((330 - SECONDS)) python3 benchmarks/block_cut.py --preset deepseek-v3 \
  --sweep "128:4096 144:4096" > $OUT/b144_d.txt 2>&1
echo "deepseek at $SECONDS s"
for f in $OUT/b144_?.txt; do echo "== $f"; grep -vE "Warning|warn" $f | grep -v " us$" | tail -n 8; done
grep -h "reference check failed\|Error" $OUT/b144_?.txt | head -n 5
# then test_wgmma's b144 cases (keys compiled here), one process each
ls tests/cuda/test_wgmma.py > /dev/null && python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/cuda/test_wgmma.py -k b144 --collect-only 2>/dev/null | grep "::" > $OUT/ids.txt
par_tests 4 $((560 - SECONDS))
