# T = 1's fixed costs (docs/performance.md step 30), one device call, carry [".whl", ".revs"]:
# tools/probe_decode_floor.py (graph entry, launch boundaries, the layer's bytes
# streamed as one fused launch or two); graph shares of fc1 / fc2 / combine at
# T = 1 (main, k8) and T = 512 (main); ncu at T = 1 (main vs k8): per-kernel
# metrics and decode_fc1's source stalls.  About 6 min.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
bash .revs/inst.sh
R=$PWD
(cd tools && PYTHONPATH=/tmp/site timeout 200 python3 probe_decode_floor.py > $OUT/probe_floor.txt 2>&1; echo "probe rc=$?" >> $OUT/probe_floor.txt)
# graph shares at T = 1 (main, k8): plain, fc1 alone, fc2 alone, without combine
for t in main k8; do
  (cd .revs/$t && export PYTHONPATH=/tmp/site:$PWD
   for d in "" "fc2,combine" "fc1,combine" "combine"; do
     echo "== $t drop=[$d]"
     timeout 100 python3 $R/tools/launch_share.py --drop "$d" -- --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1 --mode graph --no-progress 2>&1 | grep -E "graph"
   done) > $OUT/share_$t.txt 2>&1
done
(cd .revs/main && export PYTHONPATH=/tmp/site:$PWD
 for d in "" "combine" "route_pack" "fc2,combine" "route_pack,fc1,combine"; do
   echo "== main T512 drop=[$d]"
   timeout 100 python3 $R/tools/launch_share.py --drop "$d" -- --preset qwen3-30b-a3b,gpt-oss-120b --tokens 512 --mode graph --no-progress 2>&1 | grep -E "graph"
 done) > $OUT/share_512.txt 2>&1
for t in main k8; do
  (cd .revs/$t && export PYTHONPATH=/tmp/site:$PWD
   for p in qwen3-30b-a3b deepseek-v3; do
     OUT=$OUT TAG=_${t}_$p MEM=1 bash $R/tools/ncu_kernels.sh $p 1 > $OUT/k_${t}_$p.txt 2>&1
   done
   mkdir -p $OUT/src_$t; OUT=$OUT/src_$t bash $R/tools/ncu_source.sh qwen3-30b-a3b 1 3 > $OUT/s_${t}.txt 2>&1
  )
done
cat $OUT/share_*.txt; tail -n 52 $OUT/probe_floor.txt
for f in $OUT/k_*.txt; do echo "== $f"; grep -E "gpu__time|dram__throughput|issue_active|warps_active|cycles_active|cycles_elapsed|inst_executed|long_scoreboard|barrier|dram__bytes_read|grid_size|registers" $f | sed -E 's/ +/ /g' | cut -c1-110; done
for t in main k8; do echo "== src $t"; head -n 40 $OUT/s_$t.txt; done
