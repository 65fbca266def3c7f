# Stop 63: tb65.sh's A/B half alone (tbase.patch beside main, benchmarks/block_cut.py from
# each tree at blocks of 48 / 64, two rounds), with tb65.sh's first three pack stages only
# (.revs/tb65a.tgz).  carry [".whl", ".revs/tb65a.tgz", ".revs/m", ".revs/tb"]; about 5 min.
# Never ran (no machine came for it); tb67.sh, which adds the tests, ran instead.
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/tb65a.tgz
for t in m tb; do for d in .revs/pack/tb_$t .revs/pack/tb64_$t .revs/pack/tbg_$t; do
  python3 tools/ptx_pack.py install $d --tree .revs/$t 2>&1 | tail -n 1; done; done
for r in 1 2; do for t in m tb; do
  bc $t q_${t}_$r qwen3-30b-a3b "48:512,640 64:896" 110
  bc $t g_${t}_$r gpt-oss-120b "48:1152" 70
done; done
bc_report 4
echo "total $SECONDS s"
