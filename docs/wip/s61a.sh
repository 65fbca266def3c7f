# Stop 59's first call: fc2pad (fc2 skips staging its padding slots) and s144 (routes
# 128..143 copied a chunk a thread by warpgroup 1) against main, benchmarks/block_cut.py
# from each tree in one call; then the combined tree's (both) b144 tests, keys compiled
# here.  Trees exported to .revs/{head,fc2pad,s144,both} (wip/fc2pad, wip/s144, wip/both).
# Keys: .revs/n58.tgz (main's 128 / 144 at T = 2048 / 4096) and .revs/s61.tgz
# (s61_{fc2pad,s144,both}_{24,48,128,144}, s61_head_{24,48}), packed here.
# carry [".whl", ".revs/n58.tgz", ".revs/s61.tgz", ".revs/head", ".revs/fc2pad",
#        ".revs/s144", ".revs/both"]
. docs/wip/dev.sh
dev_setup
TREE=.revs/head dev_packs .revs/n58.tgz .revs/pack/n58_head_128 .revs/pack/n58_head_144
tar -xzf .revs/s61.tgz
for t in head fc2pad s144 both; do
  for d in .revs/pack/s61_${t}_*; do
    [ -d "$d" ] && python3 tools/ptx_pack.py install $d --tree .revs/$t 2>&1 | tail -n 1
  done
done
echo "installed at $SECONDS s"
for t in head fc2pad s144 both; do bc $t q_$t qwen3-30b-a3b "144:2048,4096" 70; done
for t in head fc2pad s144 both; do
  [ $t = s144 ] && S="144:4096" || S="128:2048 144:4096"
  bc $t g_$t gpt-oss-120b "$S" 90
done
bc_report 5
cd .revs/both && export PYTHONPATH=/tmp/site:$PWD
python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_wgmma.py \
  -k "b144" --collect-only 2>/dev/null | grep "::" > $OUT/ids.txt
par_tests 8 $((580 - SECONDS))
echo "total $SECONDS s"
