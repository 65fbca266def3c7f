# Stop 64: keys for d69.sh (packed here, 2 cores): WFIRST (wfirst2.patch, tree .revs/wf3) beside
# main (.revs/m2, a `git archive` of HEAD) at blocks of 24 (gpt-oss-120b and deepseek-v3 T = 512)
# and 32 (gpt-oss-120b T = 896), then test_fuzz's draws on main (pack63.sh's fuzz stage, TAG 68).
set -eo pipefail
P="python tools/ptx_pack.py pack"
for t in m2 wf3; do
  $P .revs/pack/wf_$t --tree .revs/$t --preset gpt-oss-120b,deepseek-v3 --tokens 512 \
    --block-size 24 --decode-max-tokens 0 --jobs 2 | tail -n 1
  $P .revs/pack/wf32_$t --tree .revs/$t --preset gpt-oss-120b --tokens 896 \
    --block-size 32 --decode-max-tokens 0 --jobs 2 | tail -n 1
done
tar -czf .revs/wf68.tgz .revs/pack/wf_m2 .revs/pack/wf_wf3 .revs/pack/wf32_m2 .revs/pack/wf32_wf3
ls -la .revs/wf68.tgz; date
TAG=68 STAGES=fuzz bash docs/wip/pack63.sh
