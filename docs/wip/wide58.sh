# Step 42's first call: the wide loop's n-tiles a CTA (benchmarks/wide_ntiles.py, the
# working tree) beside main's wide loop (.revs/base = git archive of aaa6351), blocks
# of 128 pinned, every T packed; then test_wgmma's wide cases (keys compiled here).
# Keys packed here: .revs/wide.tgz (wide_new, wide_base: qwen3 / gpt-oss / deepseek
# at blocks of 128).  carry [".whl", ".revs/wide.tgz", ".revs/base"]
. docs/wip/dev.sh
dev_setup
dev_packs .revs/wide.tgz
B="python3 -m pymoe bench --block-size 128 --decode-max-tokens 0 --no-progress"
(cd .revs/base && PYTHONPATH=/tmp/site:$PWD timeout 100 $B --preset qwen3-30b-a3b \
  --tokens ${QT:-2048,4096,8192}) > $OUT/base_q.txt 2>&1
echo "base qwen3 at $SECONDS s"
timeout 170 python3 benchmarks/wide_ntiles.py --preset qwen3-30b-a3b --tokens ${QT:-2048,4096,8192} \
  --ntiles 1,2,3,4 > $OUT/nt_q.txt 2>&1
echo "new qwen3 at $SECONDS s"
(cd .revs/base && PYTHONPATH=/tmp/site:$PWD timeout 90 $B --preset gpt-oss-120b \
  --tokens ${GT:-2048,4096}) > $OUT/base_g.txt 2>&1
echo "base gpt-oss at $SECONDS s"
timeout 120 python3 benchmarks/wide_ntiles.py --preset gpt-oss-120b --tokens ${GT:-2048,4096} \
  --ntiles 1,2,4 > $OUT/nt_g.txt 2>&1
echo "new gpt-oss at $SECONDS s"
# the wide cases one process each (each compiles its own keys), 12 at once
python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_wgmma.py --collect-only \
  -k "wide_ntiles or b128 or (nan_scale and 128)" 2>/dev/null | grep "::" > $OUT/ids.txt
par_tests 12 $((590 - SECONDS))
for f in $OUT/base_?.txt; do echo "== $f"; grep -E "^ *[a-z].*[0-9]" $f | tail -n 8; done
for f in $OUT/nt_?.txt; do echo "== $f"; tail -n 6 $f; done
echo "total $SECONDS s"
