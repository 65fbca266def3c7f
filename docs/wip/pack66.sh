# Stop 63 (the second session of 2026-12-07): pack63.sh again for main at 6bd035e (the turn
# bases), into .revs/{peers,gpu,fuzz,wg}66.tgz (STAGES as there).
TAG=66 exec bash docs/wip/pack63.sh
