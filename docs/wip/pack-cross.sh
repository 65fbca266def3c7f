# Pack, here (no GPU), the keys of benchmarks/block_cut.py's sweep (cross55.sh): every
# block of routes pinned, the decode cut pinned at 0, on qwen3-30b-a3b, gpt-oss-120b and
# deepseek-v3, from .revs/main (docs/wip/pack.sh's export of HEAD) -> .revs/cross.tgz.
set -e
P="python tools/ptx_pack.py pack"
for spec in 8:32,64,128,256 16:64,128,256,512 32:128,256,384,512,768,1024 \
            64:384,512,768,1024,1536,2048 128:768,1024,1536,2048,3072; do
  b=${spec%%:*}; t=${spec#*:}
  $P .revs/pack/cb_$b --tree .revs/main --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 \
    --tokens $t --block-size $b --decode-max-tokens 0 --jobs 2 | tail -n 1
done
tar -czf .revs/cross.tgz .revs/pack/cb_*
ls -la .revs/cross.tgz
