# Step 43's first call: the wide loop's wgmma N chosen a CTA (wip/nsel, exported to
# .revs/nsel) against main (.revs/head) in one call, benchmarks/block_cut.py from each
# tree (graph replays, L2 flushed, every row checked against the reference): main at the
# blocks its cut picks, nsel at both 128 and 144 (where the cut should go).  Then the
# wide-loop tests of nsel (keys compiled here), one process each.
# (wip/nsel, the chain-of-reads variant, is a local branch: nsel.patch holds nsel2, the
# barrier-counted one; the chain is its pick reading pri at 64, 80, .. instead of cnt.)
# Keys: .revs/n58.tgz (n58_{nsel,head}_{128,144}, packed here).
# carry [".whl", ".revs/n58.tgz", ".revs/nsel", ".revs/head"]
. docs/wip/dev.sh
dev_setup
TREE=.revs/nsel dev_packs .revs/n58.tgz .revs/pack/n58_nsel_128 .revs/pack/n58_nsel_144
TREE=.revs/head dev_packs .revs/n58.tgz .revs/pack/n58_head_128 .revs/pack/n58_head_144
bc head g_head gpt-oss-120b "128:2048,3584 144:4096" 100
bc nsel g_nsel gpt-oss-120b "128:2048,3584,4096 144:2048,3584,4096" 130
bc head q_head qwen3-30b-a3b "144:2048,4096" 60
bc nsel q_nsel qwen3-30b-a3b "128:2048,4096 144:2048,4096" 90
bc head d_head deepseek-v3 "144:4096" 70
bc nsel d_nsel deepseek-v3 "144:4096" 70
for f in $OUT/bc_*.txt; do echo "== $f"; grep -vE "Warning|warn" $f | grep -v " us$" | tail -n 7; done
grep -h "reference check failed\|Error" $OUT/bc_*.txt | head -n 5
cd .revs/nsel && export PYTHONPATH=/tmp/site:$PWD && python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_wgmma.py \
  -k "wide_loop_n_per_block or b144 or b128_matches" --collect-only 2>/dev/null | grep "::" > $OUT/ids.txt
par_tests 14 $((575 - SECONDS))
