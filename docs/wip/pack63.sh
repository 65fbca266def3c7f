# Stop 61 (session of 2026-12-07): every key this session's device calls need, packed here
# from a `git archive` of HEAD into .revs/main, each stage its own tarball as it finishes so a
# call can start on the first: peers (the harness's layer, T = 1 / 8 / 64 / 512 / 4096 ->
# .revs/peers63.tgz, ~16 min), the gpu suite (test_gpu's cases, FOLD_CASES, test_self_pack's
# GPU_KEY_CASES -> .revs/gpu63.tgz, ~33 min), test_fuzz's draws (.revs/fuzz63.tgz), test_wgmma's
# cases (wgmma-cases.txt -> .revs/wg63.tgz, ~23 min).  STAGES picks (default all four); TAG names
# the tarballs (default 63: .revs/${s}${TAG}.tgz).
set -eo pipefail       # a stage that fails (or is killed) leaves no tarball
rm -rf .revs/main; mkdir -p .revs/main .revs/pack
git archive HEAD pymoe tests tools benchmarks pyproject.toml | tar -x -C .revs/main
P="python tools/ptx_pack.py pack"
for s in ${STAGES:-peers gpu fuzz wg}; do
  case $s in
  peers) $P .revs/pack/wt_peers --tree .revs/main --preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 \
           --peer-layer --tokens 1,8,64,512,4096 --jobs 2 | tail -n 1 ;;
  gpu) $P .revs/pack/wt_gpu --tree .revs/main --preset "" --gpu-suite --case-list tests.cuda.test_gpu:FOLD_CASES \
         --case-list tests.cuda.test_self_pack:GPU_KEY_CASES --jobs 2 | tail -n 1 ;;
  fuzz) $P .revs/pack/wt_fuzz --tree .revs/main --preset "" --fuzz --jobs 2 | tail -n 1 ;;
  wg) C=""; for c in $(cat docs/wip/wgmma-cases.txt); do C="$C --case $c"; done
      $P .revs/pack/wt_wg --tree .revs/main --preset "" $C --jobs 2 | tail -n 1 ;;
  esac
  tar -czf .revs/$s${TAG:-63}.tgz .revs/pack/wt_$s; ls -la .revs/$s${TAG:-63}.tgz; date
done
