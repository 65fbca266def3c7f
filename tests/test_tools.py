"""The side-by-side device tools run here too (the reference backend, no GPU):
tools/test_revs.sh (pytest on several trees / GEMMs at once) and
tools/bench_revs.sh (bench per tree, GEMM and pinned block, one table) and
tools/ncu_source_top.py (the summary of tools/ncu_source.sh's ncu source page) and
tools/ptx_pack.py's pack half (the install half needs the device); the ncu
scripts' command lines through a fake ncu."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path):
    return dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable, SITE=str(tmp_path))


def test_test_revs_runs_each_spec(tmp_path):
    r = subprocess.run(["bash", "tools/test_revs.sh", ".:fma", ".:mma", "--",
                        "tests/test_geometry.py", "-k", "tiles_live or route_pack_grid"],
                       cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    lines = r.stdout.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == ["worktree_fma", "worktree_mma"], r.stdout
    assert all("rc=0" in ln and " passed" in ln for ln in lines), r.stdout + r.stderr
    assert (tmp_path / "test_worktree_mma.txt").exists()


def test_bench_revs_table_per_gemm_and_block(tmp_path):
    env = dict(_env(tmp_path), PRESETS="tiny", TOK="2,65", BT="250")
    r = subprocess.run(["bash", "tools/bench_revs.sh", ".:fma", ".:fma:8", ".:fma::0"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout.strip().splitlines()
    names = ["worktree_fma", "worktree_fma_b8", "worktree_fma_d0"]
    assert out[:3] == [f"{n} rc=0" for n in names], r.stdout + r.stderr
    head, row = out[-3].split(), out[-1].split()
    assert head[-3:] == names, out
    assert row[:3] == ["tiny", "65", "ref"] and all(float(v) > 0 for v in row[3:]), out

    def regime(name, t):                  # the bench row's regime column for T = t
        for line in (tmp_path / f"bench_{name}.txt").read_text().splitlines():
            f = line.split()
            if len(f) > 5 and f[:3] == ["tiny", str(t), "ref"]:
                return "packed" if "packed" in f else "decode" if "decode" in f else None
    assert regime("worktree_fma", 2) == "decode"
    assert regime("worktree_fma_d0", 2) == "packed"          # the cut pinned to 0


def _source_top(tmp_path, top: int, csv_text: str):
    """tools/ncu_source_top.py on a source page with csv_text (its TOP top rows)."""
    p = tmp_path / "src.csv"
    p.write_text(csv_text)
    r = subprocess.run([sys.executable, "tools/ncu_source_top.py", str(p), str(top)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r


def test_ncu_source_top_ranks_instructions_and_opcodes(tmp_path):
    """tools/ncu_source_top.py on a source page as ncu writes it (a banner line,
    quoted fields, thousands separators, predicated opcodes)."""
    r = _source_top(tmp_path, 2,
                    '==PROF== banner\n'
                    '"Kernel Name","pymoe::cuda::kernels::fc2::build::kernel[abi:v1](...)"\n'
                    '"Address","Source","Warp Stall Sampling (All Samples)","stall_long_sb"\n'
                    '"0x10","LDG.E.128 R4, [R2.64]","1,200","900"\n'
                    '"0x20","@P0 BAR.SYNC 0x0","300","0"\n'
                    '"0x30","LDG.E R5, [R2.64]","0","0"\n')
    assert "kernel: fc2" in r.stdout
    assert "1500 samples" in r.stdout and "LDG=80.0% BAR=20.0%" in r.stdout
    top = r.stdout.split("top 2 instructions:")[1].strip().splitlines()
    assert len(top) == 2 and "stall_long_sb=900" in top[0] and "BAR.SYNC" in top[1]


def test_ncu_source_top_l2_sectors_by_instruction(tmp_path):
    """SourceCounters' global L2 sectors: the total with its excess over the
    ideal, by opcode, and the instructions that move the most with their sectors
    per executed instruction (20 on a copy whose warp should take 16)."""
    r = _source_top(tmp_path, 3,
                    '"Address","Source","Warp Stall Sampling (All Samples)",'
                    '"Instructions Executed","L2 Theoretical Sectors Global Excessive",'
                    '"L2 Theoretical Sectors Global","L2 Theoretical Sectors Global Ideal"\n'
                    '"0x10","LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64]","100","10","40",'
                    '"200","160"\n'
                    '"0x20","LDG.E R5, [R2.64]","50","10","0","10","10"\n'
                    '"0x30","@P1 BRA 0x10","10","10","0","0","0"\n')
    assert "L2 sectors, global (L2 Theoretical Sectors Global): 210, excessive 40 (19.0%), " \
           "ideal 170" in r.stdout
    assert "L2 sectors by opcode: LDGSTS=95.2% LDG=4.8%" in r.stdout
    top = r.stdout.split("by L2 sectors")[1].strip().splitlines()[1:]
    assert len(top) == 2, r.stdout
    assert top[0].split()[:4] == ["0x10", "200", "40", "20.0"] and "LDGSTS" in top[0]
    assert top[1].split()[:4] == ["0x20", "10", "0", "1.0"]


def test_ncu_source_top_without_memory_columns(tmp_path):
    """A source page from WarpStateStats alone prints no memory section."""
    r = _source_top(tmp_path, 1, '"Address","Source","Warp Stall Sampling (All Samples)"\n'
                                 '"0x10","LDG.E R5, [R2.64]","5"\n')
    assert "L2 sectors" not in r.stdout and "1 instructions, 5 samples" in r.stdout


def test_ncu_source_top_samples_by_region(tmp_path):
    """The regions: a loop is a backward branch and its target (an instruction
    counts in the innermost loop holding it), the rest is "outside loops"; each
    with its mma instructions and its share of the executed instructions."""
    r = _source_top(tmp_path, 1,
                    '"Address","Source","Warp Stall Sampling (All Samples)",'
                    '"Instructions Executed"\n'
                    '"0x10","MOV R1, R2","100","10"\n'
                    '"0x20","HGMMA.64x128x16.F32.BF16 R8, R4, gdesc[UR4], R8","300","40"\n'
                    '"0x30","LDS R5, [R6]","200","40"\n'
                    '"0x40","@P0 BRA 0x30","100","40"\n'
                    '"0x50","@P1 BRA 0x20","200","10"\n'
                    '"0x60","EXIT","100","10"\n')
    reg = r.stdout.split("samples by region")[1].split("top 1")[0].splitlines()[1:]
    got = {ln.split()[1] if ln.split()[0] == "loop" else "outside": ln for ln in reg}
    assert set(got) == {"0x30-0x40", "0x20-0x50", "outside"}, reg
    assert "2 instr   0 mma:  30.0% of samples, 53.3% of executed" in got["0x30-0x40"]
    assert "2 instr   1 mma:  50.0% of samples, 33.3% of executed" in got["0x20-0x50"]
    assert "2 instr   0 mma:  20.0% of samples, 13.3% of executed" in got["outside"]


def _ptx_pack():
    """tools/ptx_pack.py as a module (tools/ is not a package)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import ptx_pack
    finally:
        sys.path.pop(0)
    return ptx_pack


def test_ptx_pack_writes_each_bench_key_once(tmp_path):
    """tools/ptx_pack.py pack: one JSON file a LaunchKey the bench would prewarm
    (tiny preset, T = 1: the decode regime's 3 keys), PTX whose .version the
    H200's driver takes, keys that rebuild to the same LaunchKey, and the source
    hash they were compiled from; a second run compiles nothing but an entry
    of another source."""
    import json
    from pymoe.cuda import launch
    ptx_pack = _ptx_pack()
    out = tmp_path / "pack"
    cmd = [sys.executable, "tools/ptx_pack.py", "pack", str(out), "--preset", "tiny",
           "--tokens", "1", "--jobs", "2"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    files = sorted(out.glob("*.json"))
    assert [f.name.split("_", 1)[1] for f in files] == \
        ["decode_fc1.json", "decode_fc2.json", "combine.json"]
    for f in files:
        d = json.loads(f.read_text())
        key = ptx_pack._key_from_json(d["key"])
        assert ptx_pack._key_to_json(key) == d["key"] and key.kernel in f.name
        assert "\n.version 9.0\n" in d["ptx"] and ".entry" in d["ptx"]
        assert d["src"] == launch._source_hash()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0 and "3 keys, 0 compiled now" in r.stdout, r.stdout + r.stderr
    # an entry of another source is compiled again (install would skip it)
    d = json.loads(files[0].read_text())
    assert ptx_pack._fresh(d, d["src"]) and not ptx_pack._fresh(d, "0" * 64)
    files[0].write_text(json.dumps(dict(d, src="0" * 64)))
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0 and "3 keys, 1 compiled now" in r.stdout, r.stdout + r.stderr
    assert ptx_pack._fresh({"key": d["key"], "ptx": ""}, d["src"])   # unhashed: older packs


def test_ptx_pack_peer_layer_keys():
    """--peer-layer packs the layer .peers/bench_peers.py hands pymoe (silu,
    gate_up, no bias), not the preset's (gpt-oss: swigluoai with biases): the
    same regimes and blocks, different keys.  Selection only, nothing compiled."""
    import argparse
    ptx_pack = _ptx_pack()
    base = dict(preset="gpt-oss-20b", tokens="1,512", format="mxfp4", dtype="bfloat16",
                block_size=None, decode_max_tokens=None)
    own = ptx_pack.bench_keys(argparse.Namespace(peer_layer=False, **base))
    peer = ptx_pack.bench_keys(argparse.Namespace(peer_layer=True, **base))
    gemm = [k for k in own if k.kernel in ("fc1", "decode_fc1")]
    assert gemm and {k.activation for k in gemm} == {"swigluoai"}
    assert all(k.has_bias for k in gemm)
    pgemm = [k for k in peer if k.kernel in ("fc1", "decode_fc1")]
    assert {k.activation for k in pgemm} == {"silu"} and not any(k.has_bias for k in pgemm)
    assert [(k.kernel, k.block) for k in own] == [(k.kernel, k.block) for k in peer]


def test_ptx_pack_test_case_and_suite_keys():
    """--case: the keys a test_wgmma.py case binds (T = 65 on 8 experts: packed,
    wgmma unless the id names another GEMM); --gpu-suite: test_gpu.py's cases
    reach both regimes, every packed GEMM key on wgmma (their random scales fold),
    each key once.  Selection only, nothing compiled."""
    ptx_pack = _ptx_pack()
    keys = ptx_pack.case_keys("65-256-144-8-2-bfloat16-mxfp4-silu-gate_up")
    assert [(k.kernel, k.gemm) for k in keys] == [
        ("route_pack", ""), ("fc1", "wgmma"), ("fc2", "wgmma"), ("combine", "")]
    assert keys[1].hidden_size == 256 and keys[1].intermediate_size == 144
    mma = ptx_pack.case_keys("65-256-144-8-2-float16-nvfp4-silu-gate_up-mma")
    assert {k.gemm for k in mma if k.kernel in ("fc1", "fc2")} == {"mma"}
    suite = ptx_pack.suite_keys()
    assert len(set(suite)) == len(suite)
    kinds = {k.kernel for k in suite}
    assert {"route_pack", "fc1", "fc2", "combine", "decode_fc1", "decode_fc2"} <= kinds
    assert {k.gemm for k in suite if k.kernel in ("fc1", "fc2")} == {"wgmma"}


def test_ptx_pack_fuzz_keys_and_packed_cases(monkeypatch):
    """--fuzz: the keys of test_fuzz.py's drawn problems (its seeded draws, here 20
    of them), each once, from every family it drew; a --case id ending in
    "-packed" pins the packed regime (a T the decode regime would take).
    Selection only, nothing compiled."""
    import importlib

    import tests.cuda.test_fuzz as tf
    ptx_pack = _ptx_pack()
    monkeypatch.setenv("PYMOE_FUZZ_EXAMPLES", "20")
    try:
        tf = importlib.reload(tf)
        calls = []
        real = ptx_pack.problem_keys

        def spy(p, gemm=None, max_tokens=None):
            calls.append((p.case.format, p.case.dtype, p.case.activation))
            return real(p, gemm, max_tokens)

        monkeypatch.setattr(ptx_pack, "problem_keys", spy)
        keys = ptx_pack.fuzz_keys()
    finally:
        monkeypatch.delenv("PYMOE_FUZZ_EXAMPLES")
        importlib.reload(tf)
    assert len(calls) == 20 and keys and len(set(keys)) == len(keys)
    fams = {(k.format, k.dtype, k.activation) for k in keys if k.kernel.endswith("fc1")}
    assert fams == set(calls)
    dec = ptx_pack.case_keys("5-256-144-8-2-bfloat16-mxfp4-silu-gate_up")
    packed = ptx_pack.case_keys("5-256-144-8-2-bfloat16-mxfp4-silu-gate_up-packed")
    assert [k.kernel for k in dec] == ["decode_fc1", "decode_fc2", "combine"]
    # (5 x 2 routes over 8 experts: blocks of 8, which fc1 packs itself)
    assert [k.kernel for k in packed] == ["fc1", "fc2", "combine"] and packed[0].self_pack
    listed = ptx_pack.case_list_keys("tests.cuda.test_self_pack:GPU_KEY_CASES")
    assert listed and None not in listed and len(set(listed)) == len(listed)
    assert any(k.self_pack for k in listed)
    auto = ptx_pack.case_list_keys("tests.cuda.test_gpu:FOLD_CASES")
    table = ptx_pack.case_list_keys("tests.cuda.test_gpu:FOLD_CASES:mma")
    # (the fold test runs each case under both: the table path's decode keys are others)
    assert {k.gemm for k in table if k.kernel.startswith("decode")} == {""}
    assert "wgmma" in {k.gemm for k in auto if k.kernel.startswith("decode")}


def test_ncu_scripts_profile_another_command(tmp_path):
    """tools/ncu_kernels.sh and tools/ncu_source.sh with CMD / KREGEX hand ncu the
    given command line and kernel filter instead of pymoe bench and ^kernel (a
    fake ncu on PATH records its arguments; the real one needs the device)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ncu").write_text(
        "#!/usr/bin/env bash\n"
        'echo "$@" >> "$OUT/ncu_args.txt"\n'
        'echo "  _p_matmul_ogs_x (132, 1, 1)x(256, 1, 1), Context 1, Stream 7"\n'
        'echo "    gpu__time_duration.sum   usecond   412.5"\n')
    (fake / "ncu").chmod(0o755)
    env = dict(_env(tmp_path), PATH=f"{fake}{os.pathsep}{os.environ['PATH']}",
               CMD="python3 .peers/bench_peers.py --peers tk\n  --tokens 4096",
               KREGEX="regex:matmul_ogs")
    r = subprocess.run(["bash", "tools/ncu_kernels.sh", "qwen3-30b-a3b", "1 8"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=60)
    assert "== qwen3-30b-a3b T=cmd rc=0" in r.stdout, r.stdout + r.stderr
    assert "_p_matmul_ogs_x" in r.stdout and "gpu__time_duration.sum" in r.stdout, r.stdout
    r = subprocess.run(["bash", "tools/ncu_source.sh", "qwen3-30b-a3b", "4096", "2"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=60)
    args = (tmp_path / "ncu_args.txt").read_text().splitlines()
    assert len(args) == 3, args                  # kernels once (not per T), source, import
    for a in args[:2]:
        assert "-k regex:matmul_ogs" in a and a.endswith(
            "python3 .peers/bench_peers.py --peers tk --tokens 4096"), a
        assert "pymoe bench" not in a
    assert "--launch-skip 2" in args[1] and "--import" in args[2], args
    assert all("--kernel-name-base function" in a for a in args[:2]), args
    # KBASE: ncu matches KREGEX against that name (mangled: pymoe's fc1 by its module)
    (tmp_path / "ncu_args.txt").unlink()
    subprocess.run(["bash", "tools/ncu_source.sh", "qwen3-30b-a3b", "512", "1"], cwd=ROOT,
                   env=dict(env, KBASE="mangled", KREGEX="regex:kernels3fc1"),
                   capture_output=True, text=True, timeout=60)
    a = (tmp_path / "ncu_args.txt").read_text().splitlines()[0]
    assert "--kernel-name-base mangled -k regex:kernels3fc1 --launch-skip 1" in a, a
    # without CMD: pymoe bench per T, pymoe's kernels, EXTRA's flags last
    env = {k: v for k, v in env.items() if k not in ("CMD", "KREGEX")}
    env["EXTRA"] = "--block-size 128"
    (tmp_path / "ncu_args.txt").unlink()
    subprocess.run(["bash", "tools/ncu_kernels.sh", "gpt-oss-120b", "1 8"], cwd=ROOT, env=env,
                   capture_output=True, text=True, timeout=60)
    args = (tmp_path / "ncu_args.txt").read_text().splitlines()
    assert [a.split(" python3 ")[1] for a in args] == [
        f"-m pymoe bench --preset gpt-oss-120b --tokens {t} --mode eager --repeats 2 "
        "--no-progress --block-size 128" for t in (1, 8)], args
    assert all("-k regex:^kernel" in a for a in args), args
    assert all("lts__t_requests.sum" not in a for a in args), args
    # MEM=1 adds the L2 / DRAM traffic metrics, MORE whatever it names
    (tmp_path / "ncu_args.txt").unlink()
    env.update(MEM="1", MORE=",l1tex__t_requests.sum")
    subprocess.run(["bash", "tools/ncu_kernels.sh", "gpt-oss-120b", "1"], cwd=ROOT, env=env,
                   capture_output=True, text=True, timeout=60)
    (a,) = (tmp_path / "ncu_args.txt").read_text().splitlines()
    metrics = a.split(" --metrics ")[1].split()[0].split(",")
    assert {"lts__t_requests.sum", "lts__t_sectors_op_read.sum", "dram__bytes_write.sum",
            "l1tex__t_requests.sum", "gpu__time_duration.sum"} <= set(metrics), metrics


def test_launch_share_checks_names_and_runs_the_bench():
    """tools/launch_share.py: unknown kernel names refused; without a GPU the
    bench it wraps runs the reference (nothing to leave out) and prints its table."""
    bad = subprocess.run([sys.executable, "tools/launch_share.py", "--drop", "fc3"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "--drop: unknown kernel(s) ['fc3']" in bad.stderr
    neg = subprocess.run([sys.executable, "tools/launch_share.py", "--memset", "-4"],
                         capture_output=True, text=True)
    assert neg.returncode != 0 and "--memset: expected bytes >= 0, got -4" in neg.stderr
    ok = subprocess.run([sys.executable, "tools/launch_share.py", "--drop", "route_pack",
                         "--", "--backend", "ref", "--preset", "tiny", "--tokens", "2",
                         "--repeats", "1", "--no-progress"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "tiny" in ok.stdout and " ref " in ok.stdout


def test_sass_report_hottest_loop_weighs_wgmma_by_n():
    """tools/sass_report.py's hottest loop is the one with the most tensor-core
    work per instruction: of the wide loop's two copies (8 HGMMA each, the n64
    one 360 instructions, the n144 one 365) the n144 one, which full blocks run;
    HMMA counts one n8 step; a loop without tensor-core ops loses to one with."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import sass_report as sr
    finally:
        sys.path.pop(0)
    assert sr.mma_work("HGMMA", ".64x144x16.F32.BF16") == 18
    assert sr.mma_work("HGMMA", ".64x64x16.F32.BF16") == 8
    assert sr.mma_work("HMMA", ".16816.F32.BF16") == 1
    assert sr.mma_work("FFMA", "") == 0

    def loop(start, n, mma_mods):
        k = n - 1 - len(mma_mods)
        body = [(start + 16 * i, "IMAD", "", "R1, R2, R3, R4") for i in range(k)]
        body += [(start + 16 * (k + j), "HGMMA", m, "R0, gdesc[UR4]")
                 for j, m in enumerate(mma_mods)]
        end = start + 16 * (n - 1)
        return body + [(end, "BRA", "", f"0x{start:x}")]

    n64 = loop(0x100, 360, [".64x64x16.F32.BF16"] * 8)
    n144 = loop(0x100 + 16 * 400, 365, [".64x144x16.F32.BF16"] * 8)
    plain = loop(0x100 + 16 * 800, 40, [])
    assert sr.hottest_loop(n64 + n144 + plain) == (n144[0][0], n144[-1][0])
    assert sr.hottest_loop(plain) == (plain[0][0], plain[-1][0])
