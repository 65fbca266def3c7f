# Here (no GPU), before docs/wip/next-ring6.sh: export main and wip/ring6 (`git
# checkout -b wip/ring6 main && git am docs/wip/ring6.patch` if the branch is gone) into
# .revs/, and pack each tree's bench keys (T = 8 .. 512 on the three presets:
# blocks of 8 .. 64, the rows the ring depth touches) and the ring6 tree's gpu
# suite.  About 20 min on 2 cores.  Needs `pip install nvidia-nvvm==13.0.88`.
set -e
for x in main wip/ring6; do
  n=${x#wip/}; d=.revs/$n; rm -rf $d; mkdir -p $d
  git archive $x pymoe tests tools pyproject.toml setup.cfg | tar -x -C $d
  PYTHONPATH=$d python tools/ptx_pack.py pack .revs/pack/${n}_bench --tree $d \
    --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 8,64,256,512 --jobs 2
  PYTHONPATH=$d python tools/ptx_pack.py pack .revs/pack/${n}_b16 --tree $d \
    --preset deepseek-v3 --tokens 512 --block-size 16 --jobs 2
done
(cd .revs/ring6 && PYTHONPATH=. python tools/ptx_pack.py pack ../pack/ring6_gpu --gpu-suite --jobs 2)
