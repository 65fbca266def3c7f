# Step 39's second call, in one machine's time: ab54.sh (the ring5-64 A/B, both orders,
# alone on the GPU), then r5-54.sh (racecheck on main, the branch's B = 64 tests under
# each sanitizer) in what is left of the 600 s.  Carry [".whl", ".revs/packs.tgz", ".revs/r5"].
SECONDS=0
bash docs/wip/ab54.sh
LIM=$((575 - SECONDS)) bash docs/wip/r5-54.sh 2>&1 | grep -v "^installed\|^Successfully"
