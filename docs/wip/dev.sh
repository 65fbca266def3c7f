# Sourced by the device scripts here (`. docs/wip/dev.sh` from the repository root):
#   h200_harness         on an H200 only: the peers harness (a63.sh), then true (callers
#                        exit); elsewhere false
#   dev_setup            the numpy 2.4 wheel into /tmp/site (../shared/gpu/prep-wheels'
#                        line), PYTHONPATH, no .pyc; prints the GPU; SECONDS from 0
#   dev_packs TGZ [DIR..] unpack TGZ (packed here, git-ignored under .revs/) and install
#                        each DIR into the device's disk cache (default: every .revs/pack/*
#                        the tarball holds); keys of the source tree TREE (default .:
#                        ptx_pack skips the others)
#   san TOOL NAME ARGS.. compute-sanitizer TOOL on `pytest -v -m gpu ARGS` in the
#                        background, LIM (540 s) each, log $OUT/NAME.log
#   san_report [NAME..]  after `wait`: each log's passed / failed, its sanitizer
#                        summary and first reports (default: every $OUT/*.log)
#   bc TREE NAME PRESET SWEEP LIM
#                        benchmarks/block_cut.py from .revs/TREE's own source, LIM s,
#                        into $OUT/bc_NAME.txt
#   bc_report [N]        after the bc runs: each $OUT/bc_*.txt's last N (6) lines of
#                        table and any failed reference check
#   shards N LIM ARGS..  `pytest -m gpu --shard i/N ARGS` for i < N at once, LIM s each,
#                        logs $OUT/s$i.log; waits for every background job (san's too),
#                        then each shard's failures and last line
#   par_tests P LIM      each test id of $OUT/ids.txt in its own pytest process (each
#                        compiles its own keys), P at once, LIM s each; then how many
#                        passed and the tails of the logs that did not pass
#   pymoe_rounds SPEC..  the harness's pymoe alone (.peers/bench_peers.py --peers pymoe) from
#                        each SPEC's tree, ROUNDS (2) rounds alternating, TL (110) s each, PTOK
#                        (1,8,64) tokens, into $OUT/p_<tree>_<round>.txt; then each file's rows.
#                        SPEC: TREE[:PRESETS[:VAR=VALUE]] (TREE main: the checkout, else
#                        .revs/TREE; PRESETS default PPRE or the three layers; VAR=VALUE an
#                        environment setting for that tree's runs)
#   fold_tests TREE [LIM] test_gpu's fold and misaligned decode cases from .revs/TREE, LIM
#                        (120) s, the last lines of pytest's report
#   ncu_fc2 TGZ [NT]     install TGZ's keys (main's bench keys at T = 4096), then ncu's
#                        samples of fc2 (tools/ncu_source.sh, NT s each, default 150) on
#                        qwen3-30b-a3b and gpt-oss-120b into $OUT/<preset>/
h200_harness() {
  # true after running the peers harness (a63.sh; PACKS, default .revs/peers66.tgz, and its
  # TL / PPRE / PTOK) where the card is an H200; false (nothing run) on any other card, so a
  # call script can do `h200_harness && exit` and go on with its own work elsewhere
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || return 1
  echo "== H200: the harness"
  PACKS=${PACKS:-.revs/peers66.tgz} bash docs/wip/a63.sh
}
dev_setup() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit
  export PYTHONPATH=/tmp/site:$PWD PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name --format=csv,noheader
  SECONDS=0
}
dev_packs() {
  local tgz=$1 d; shift
  tar -xzf "$tgz"
  [ $# -gt 0 ] || set -- $(tar -tzf "$tgz" | grep -oE "^\.revs/pack/[^/]+" | sort -u)
  for d in "$@"; do python3 tools/ptx_pack.py install "$d" --tree "${TREE:-.}" 2>&1 | tail -n 1; done
  echo "installed in $SECONDS s"
}
tree_packs() {
  # tree_packs TGZ NAME:TREE ...: unpack TGZ, then install .revs/pack/NAME into .revs/TREE's key
  # hashes (each tree's own source)
  local tgz=$1 p; shift
  tar -xzf "$tgz"
  for p in "$@"; do
    python3 tools/ptx_pack.py install ".revs/pack/${p%%:*}" --tree ".revs/${p#*:}" 2>&1 | tail -n 1
  done
}
san() {
  local tool=$1 name=$2; shift 2
  local bin; bin=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  timeout "${LIM:-540}" "$bin" --tool "$tool" --target-processes all --print-limit 50 \
    --error-exitcode 3 python3 -m pytest -v -p no:cacheprovider -m gpu "$@" > "$OUT/$name.log" 2>&1 &
}
san_report() {
  local f L
  [ $# -gt 0 ] || set -- $(cd "$OUT" && ls *.log | sed 's/.log$//')
  for f in "$@"; do L=$OUT/$f.log
    echo "== $f: $(grep -oE "(PASSED|FAILED)" $L | sort | uniq -c | tr -s ' ' | paste -sd' ')"
    grep -E "= [0-9]+ (passed|failed)" $L | tail -n 1
    grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|didn't terminate" $L | sort | uniq -c
    grep -o "Program hit.*\|Invalid __.*\|Race reported.*" $L | grep -v cuGetProcAddress | sort | uniq -c | head -n 5
  done
}
bc() {
  (cd .revs/$1 && PYTHONPATH=/tmp/site:$PWD timeout $5 python3 benchmarks/block_cut.py \
    --preset $3 --sweep "$4") > $OUT/bc_$2.txt 2>&1
  echo "$2 at $SECONDS s"
}
bc_report() {
  local f
  for f in $OUT/bc_*.txt; do echo "== $f"; grep -vE "Warning|warn" $f | grep -v " us$" | tail -n ${1:-6}; done
  grep -h "reference check failed\|Error" $OUT/bc_*.txt | head -n 5
}
shards() {
  local n=$1 lim=$2 i f; shift 2
  for i in $(seq 0 $((n - 1))); do
    timeout "$lim" python3 -m pytest -q -p no:cacheprovider -m gpu -rfE --shard $i/$n "$@" \
      > $OUT/s$i.log 2>&1 &
  done
  wait
  for i in $(seq 0 $((n - 1))); do
    f=$OUT/s$i.log; echo "== shard $i"; grep -E "^(FAILED|ERROR) " $f | head -n 8; tail -n 1 $f | cut -c1-120
  done
}
par_tests() {
  local p=$1 lim=$2 f
  xargs -P "$p" -I{} sh -c 'timeout '"$lim"' python3 -m pytest -q -p no:cacheprovider -m gpu \
    "{}" > "$OUT/t_$(echo "{}" | md5sum | cut -c1-8).txt" 2>&1' < "$OUT/ids.txt"
  echo "tests at $SECONDS s: $(cat $OUT/t_*.txt | grep -cE "[0-9]+ passed") passed of $(wc -l < $OUT/ids.txt)"
  for f in $OUT/t_*.txt; do grep -qE "[0-9]+ passed" $f || { echo "== $f"; tail -n 25 $f; }; done | head -n 80
}
ncu_fc2() {
  local p
  dev_packs "$1"
  for p in qwen3-30b-a3b gpt-oss-120b; do
    mkdir -p $OUT/$p
    NT=${2:-150} KBASE=mangled KREGEX=regex:kernels3fc2 OUT=$OUT/$p bash tools/ncu_source.sh $p 4096 1 \
      > $OUT/ncu_$p.txt 2>&1 || true
    echo "== $p at $SECONDS s"; head -n 45 $OUT/$p/src_T4096.txt 2>/dev/null
  done
}
pymoe_rounds() {
  local r spec t pre var d
  for r in $(seq ${ROUNDS:-2}); do for spec in "$@"; do
    IFS=: read -r t pre var <<< "$spec"
    d=$PWD; [ "$t" = main ] || d=$PWD/.revs/$t
    env $var PYTHONPATH=/tmp/site:$d timeout ${TL:-110} python3 .peers/bench_peers.py --peers pymoe \
      --preset ${pre:-${PPRE:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3}} --tokens ${PTOK:-1,8,64} \
      > $OUT/p_${t}_$r.txt 2>&1
    echo "$t round $r rc $? at $SECONDS s"
  done; done
  for d in $OUT/p_*.txt; do echo "== $d"; grep "^pymoe" $d | awk '{print $2, $3, $5, $8}'; done
}
fold_tests() {
  (cd .revs/$1 && PYTHONPATH=/tmp/site:$PWD timeout ${2:-120} python3 -m pytest -q -p no:cacheprovider \
    -m gpu -rfE tests/cuda/test_gpu.py -k "fold or decode_misaligned" 2>&1 | tail -n 8)
}
