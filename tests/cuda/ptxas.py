"""Assemble PTX with the local toolkit's ptxas when there is one (no GPU needed):
an inline-PTX typo that Numba passes through would otherwise show up only as
CUDA_ERROR_INVALID_PTX on the GPU."""
import glob
import os
import re
import shutil
import subprocess
import tempfile


def find_ptxas():
    return shutil.which("ptxas") or next(iter(sorted(glob.glob("/usr/local/cuda*/bin/ptxas"))),
                                         None)


def assemble(ptx: str, arch: str = "sm_90") -> str | None:
    """None when ptxas is absent; else its -v output (raises on errors).  Numba's
    NVVM may emit a newer .version than this ptxas knows; the line is lowered to
    the ptxas's own ISA version, as the instructions pymoe uses are older."""
    exe = find_ptxas()
    if exe is None:
        return None
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", ver)
    if not m or int(m.group(1)) < 12:
        return None                       # unknown or too old for the ISA pymoe emits
    major, minor = int(m.group(1)), int(m.group(2))
    isa = f"{major - 4}.{minor}"          # CUDA 12.x -> PTX ISA 8.x, 13.x -> 9.x
    ptx = re.sub(r"^\.version .*$", f".version {isa}", ptx, count=1, flags=re.M)
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as fh:
            fh.write(ptx)
        r = subprocess.run([exe, f"-arch={arch}", "-v", src, "-o", os.devnull],
                           capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"ptxas rejected the PTX:\n{r.stderr[-2000:]}")
    return r.stderr
