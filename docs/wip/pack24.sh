# Pack, here (no GPU), the keys of cross48.sh / cross24.sh / cross16.sh (blocks of 16 .. 64
# pinned, on qwen3-30b-a3b, gpt-oss-120b, deepseek-v3) -> .revs/b24.tgz.
set -e
P="python tools/ptx_pack.py pack"
for b in 16 24 32 48 64; do
  $P .revs/pack/b24_$b --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 1024 \
    --block-size $b --decode-max-tokens 0 --jobs ${JOBS:-2} | tail -n 1
done
tar -czf .revs/b24.tgz .revs/pack/b24_*
ls -la .revs/b24.tgz
