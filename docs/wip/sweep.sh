# benchmarks/block_cut.py's sweeps of pinned blocks, alone on the GPU, on keys packed here
# (TGZ; carry [".whl", TGZ]): RUNS holds "PRESETS|SWEEP" runs separated by ';', one
# block_cut process each, all within END (560) s of the start.  Step 41's calls
# (docs/wip/README.md has their RUNS) were scripts of their own with these same lines.
. docs/wip/dev.sh
dev_setup
dev_packs "$TGZ"
i=0
IFS=';' read -ra RUN <<< "$RUNS"
for run in "${RUN[@]}"; do
  timeout $((${END:-560} - SECONDS)) python3 benchmarks/block_cut.py --preset "${run%%|*}" \
    --sweep "${run#*|}" > $OUT/sweep$i.txt 2>&1
  echo "run $i rc $? at $SECONDS s"; i=$((i + 1))
done
for f in $OUT/sweep*.txt; do grep -vE "^  |Warning|warn" $f | grep -v " us$" | tail -n 20; done
echo "total $SECONDS s"
