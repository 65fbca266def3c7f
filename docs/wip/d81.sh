# Stop 67: on an H200, the peers side by side on main (5c1e69c's kernels = ab152d1's; keys
# .revs/peers81.tgz from `STAGES=peers TAG=81 bash docs/wip/pack63.sh`); on any other card,
# d80.sh (the bulk-copy rows beside main, test_bulk, the wide tests, memcheck, racecheck).
# carry [".whl", ".peers", ".revs/peers81.tgz", ".revs/d80.tgz", ".revs/dx", ".revs/bk"]
. docs/wip/dev.sh
PACKS=.revs/peers81.tgz h200_harness && exit
exec bash docs/wip/d80.sh
