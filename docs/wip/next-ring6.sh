# Device call for step 37's wip/ring6 (six ring slots, 4 k-tiles ahead, at blocks
# up to 32; docs/performance.md step 37), after docs/wip/pack-ring6.sh here.  Carry
# [".whl", ".revs"].  About 7 min: the bench of both trees side by side (graph, L2
# flushed), deepseek-v3 T = 512 with blocks of 16 pinned, then ring6's wgmma and
# self-pack gpu tests.  Land where no row is slower
# and the tests pass; a per-block rule if only some blocks gain.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
for n in main ring6; do for p in bench b16; do
  PYTHONPATH=/tmp/site:$PWD/.revs/$n python3 tools/ptx_pack.py install .revs/pack/${n}_$p --tree .revs/$n
done; done
(cd .revs/ring6 && PYTHONPATH=/tmp/site:. python3 tools/ptx_pack.py install ../pack/ring6_gpu --tree .)
nvidia-smi --query-gpu=name --format=csv,noheader
PRESETS=deepseek-v3,gpt-oss-120b,qwen3-30b-a3b TOK=8,64,256,512 BT=240 \
  OUT=/tmp/b bash tools/bench_revs.sh .revs/main .revs/ring6 2>&1 | tail -n 16
# deepseek-v3 T = 512 (mean 16 routes an expert: blocks of 32) with blocks of 16 pinned
PRESETS=deepseek-v3 TOK=512 BT=120 OUT=/tmp/c bash tools/bench_revs.sh .revs/main \
  .revs/main::16 .revs/ring6::16 2>&1 | tail -n 4
cd .revs/ring6 && PYTHONPATH=/tmp/site:. timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/cuda/test_wgmma.py tests/cuda/test_self_pack.py -k "not fuzz" 2>&1 | tail -n 4
