# Stop 62: the ring loop reading k-tile c's slot words before its copies (wfirst.patch's WFIRST in
# gemm_wgmma_v2.py: 1 weights and scales first, 2 weights only first, 0 = main's order), the
# peers harness's pymoe alone on each tree (T = 8 / 64 / 512, three layers), ROUNDS rounds
# interleaved; then deepseek-v3 T = 8 / 64 on `pymoe bench` from dd174db (step 41's run) and
# main (a 4-5% move between the two harness runs there: code or routing?).
# Trees: . (main), .revs/wf1, .revs/wf2 (pymoe copies with WFIRST set), .revs/old (dd174db).
# Keys: .revs/peers63.tgz (main), .revs/wf.tgz (wf1, wf2: --peer-layer --tokens 8,64,512),
#       .revs/ab63.tgz (ab_old / ab_main: --preset deepseek-v3 --tokens 8,64).
# carry [".whl", ".peers", ".revs/peers63.tgz", ".revs/wf.tgz", ".revs/ab63.tgz", ".revs/wf1",
#        ".revs/wf2", ".revs/old"]
. docs/wip/dev.sh
dev_setup
dev_packs .revs/peers63.tgz
TREE=.revs/wf1 dev_packs .revs/wf.tgz .revs/pack/wf1
TREE=.revs/wf2 dev_packs .revs/wf.tgz .revs/pack/wf2
tar -xzf .revs/ab63.tgz
python3 tools/ptx_pack.py install .revs/pack/ab_old --tree .revs/old | tail -n 1
python3 tools/ptx_pack.py install .revs/pack/ab_main --tree . | tail -n 1
for r in $(seq ${ROUNDS:-2}); do
  for t in main wf1 wf2; do
    d=$PWD; [ $t = main ] || d=$PWD/.revs/$t
    PYTHONPATH=/tmp/site:$d timeout ${PT:-200} python3 .peers/bench_peers.py --peers pymoe \
      --preset ${PPRE:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3} --tokens ${PTOK:-8,64,512} \
      > $OUT/p_${t}_$r.txt 2>&1
    echo "$t round $r rc $? at $SECONDS s"
  done
done
PRESETS=deepseek-v3 TOK=8,64 BT=100 bash tools/bench_revs.sh .revs/old . > $OUT/revs.txt 2>&1
echo "revs at $SECONDS s"; tail -n 6 $OUT/revs.txt
for f in $OUT/p_*.txt; do echo "== $f"; grep "^pymoe" $f | awk '{print $2, $3, $5, $8, $9}'; done
