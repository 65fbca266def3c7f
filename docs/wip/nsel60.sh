# Step 43's second call: the N choice counted by one barrier (.revs/nsel2) against main
# (.revs/head) and main with only its loops forceinlined (.revs/fi), benchmarks/block_cut.py
# from each tree in one call; then nsel2's wide-loop tests (keys compiled here), one
# process each, then racecheck and memcheck on its small wide cases.
# Keys: .revs/n58.tgz (n58_head_*) and .revs/n59.tgz (n59_{nsel2,fi}_*), packed here.
# carry [".whl", ".revs/n58.tgz", ".revs/n59.tgz", ".revs/nsel2", ".revs/head", ".revs/fi"]
. docs/wip/dev.sh
dev_setup
TREE=.revs/head dev_packs .revs/n58.tgz .revs/pack/n58_head_128 .revs/pack/n58_head_144
TREE=.revs/nsel2 dev_packs .revs/n59.tgz .revs/pack/n59_nsel2_128 .revs/pack/n59_nsel2_144
TREE=.revs/fi dev_packs .revs/n59.tgz .revs/pack/n59_fi_128 .revs/pack/n59_fi_144
bc head g_head gpt-oss-120b "128:2048,3584 144:3584,4096" 100
bc head q_head qwen3-30b-a3b "144:2048,4096" 60
bc fi q_fi qwen3-30b-a3b "144:2048,4096" 60
bc nsel2 g_nsel2 gpt-oss-120b "128:2048,2560,3072,3584 144:2048,2560,3072,3584,4096" 160
bc nsel2 q_nsel2 qwen3-30b-a3b "128:2048 144:2048,4096" 70
bc head d_head deepseek-v3 "144:4096" 70
bc nsel2 d_nsel2 deepseek-v3 "144:4096" 70
bc_report
cd .revs/nsel2 && export PYTHONPATH=/tmp/site:$PWD
python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_wgmma.py \
  -k "wide_loop_n_per_block or b144 or b128_matches" --collect-only 2>/dev/null | grep "::" > $OUT/ids.txt
par_tests 14 $((400 - SECONDS))
export LIM=$((585 - SECONDS))
san racecheck rc_wide tests/cuda/test_wgmma.py -k "wide_loop_n_per_block and 128-256"
san racecheck rc_b144 tests/cuda/test_wgmma.py -k "b144 and 440-256-144 and wgmma"
san memcheck mc_wide tests/cuda/test_wgmma.py -k "wide_loop_n_per_block or b144"
wait
san_report rc_wide rc_b144 mc_wide
echo "total $SECONDS s"
