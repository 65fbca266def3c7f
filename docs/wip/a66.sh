# Stop 63: the peers side by side on main (6bd035e, the turn bases landed), a63.sh with the keys
# of pack66.sh's peers stage.  carry [".whl", ".peers", ".revs/peers66.tgz"]
PACKS=.revs/peers66.tgz exec bash docs/wip/a63.sh
