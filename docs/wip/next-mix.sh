# The next device call (docs/performance.md step 31), carry [".whl", ".revs"], about 6 min:
# wip/decode-mix (decode_fc2 wide over >= 32 k-tiles) against main at T = 1 (graph, twice
# each, alternating); the branch's GPU decode cases (docs/wip/mix_cases.py); the probe with
# its rows printed as measured (its first GPU run faulted); main's graph shares at T = 512.
# .revs needs: main (git archive main pymoe), mix2 (git archive wip/decode-mix pymoe tests
# pyproject.toml setup.cfg, plus sel.txt = `python docs/wip/mix_cases.py` run in that tree
# with PYTHONPATH=<main>/docs/wip:.), inst.sh, and packs.tgz holding pack/main_t1 and
# pack/mix2_t1 (ptx_pack.py pack --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1,
# main_t1 also --tokens 512 for the shares) and pack/mix2_tests (--preset "" --case-list
# mix_cases:CASES), each packed in its own tree.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
bash .revs/inst.sh > /tmp/inst.txt 2>&1; tail -n 3 /tmp/inst.txt
R=$PWD
for rep in 1 2; do for t in main mix2; do
 (cd .revs/$t && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pymoe bench --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1 --mode graph --no-progress 2>&1 | grep -E " graph " | cut -c1-100 | sed "s/^/$t /")
done; done
(cd .revs/mix2 && PYTHONPATH=/tmp/site:$PWD timeout 230 python3 -m pytest -q -p no:cacheprovider -m gpu $(cat sel.txt) 2>&1 | tail -n 6)
(cd tools && CUDA_LAUNCH_BLOCKING=1 PYTHONPATH=/tmp/site timeout 80 python3 probe_decode_floor.py 2>&1 | grep -vE "^  |moduleUnload|check_status|^Traceback|Exception ignored|CUDADriverError|^Error in|^Original" | tail -n 45)
(cd .revs/main && export PYTHONPATH=/tmp/site:$PWD
 for d in "" "combine" "route_pack" "fc2,combine"; do
   echo "== main T512 drop=[$d]"
   timeout 100 python3 $R/tools/launch_share.py --drop "$d" -- --preset qwen3-30b-a3b,gpt-oss-120b --tokens 512 --mode graph --no-progress 2>&1 | grep -E " graph " | cut -c1-100
 done)
