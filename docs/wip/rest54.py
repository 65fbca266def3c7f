"""The tests a memcheck shard of docs/wip/san54.sh did not finish (cut by its timeout):
python docs/wip/rest54.py N LOG... > docs/wip/rest54.txt, node ids one a line, from this
machine's collection of the same shard (round robin over `-m gpu tests`, tests/conftest.py)
less the ids its -v log reports PASSED / FAILED / SKIPPED / ERROR."""
import re
import subprocess
import sys

n, logs = int(sys.argv[1]), sys.argv[2:]
DES = "tests/cuda/test_launch.py::test_disk_cache_fresh_process_compiles_nothing_and_corrupt_entries_recompile"
for log in logs:
    i = int(re.search(r"mc(\d+)\.log$", log).group(1))
    text = open(log).read()
    done = set(re.findall(r"^(tests/.*?) (?:PASSED|FAILED|SKIPPED|ERROR|XFAIL)", text, re.M))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                          "-m", "gpu", "tests", "--deselect", DES, "--shard", f"{i}/{n}"],
                         capture_output=True, text=True).stdout
    ids = [l for l in out.splitlines() if l.startswith("tests/")]
    rest = [t for t in ids if t not in done]
    print(f"shard {i}: {len(ids)} collected, {len(done)} in the log, {len(rest)} left", file=sys.stderr)
    for t in rest:
        print(t)
