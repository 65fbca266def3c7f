# Once the bulk-copy rows land (main's pymoe/cuda and geometry.py then equal branch bst2's at
# d3128dc, exported to .revs/b2): the peers harness on an H200, keys .revs/peersb2.tgz (packed
# from .revs/b2 with --peer-layer, T = 1 / 8 / 64 / 512 / 4096, three presets).  Check first
# that the hashes agree: `python tools/ptx_pack.py install .revs/pack/b2_peers --tree .` reports
# what it installed.  carry [".whl", ".peers", ".revs/peersb2.tgz"]
. docs/wip/dev.sh
PACKS=.revs/peersb2.tgz h200_harness || echo "not an H200: nothing run"
