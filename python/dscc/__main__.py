"""``python3 -m dscc ARGS...``: the dscc command line (``python3 -m dscc compile model.dsc -o model.so``)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path


def find_dscc():
    """The dscc executable that belongs to this module: installed (PREFIX/bin), the build tree's, else PATH's."""
    here = Path(__file__).resolve().parent
    candidates = [here.parents[3] / "bin" / "dscc" if len(here.parents) > 3 else None,  # PREFIX/lib/python3/dist-packages/dscc
                  here.parent.parent / "tools" / "dscc"]                                # BUILD/python/dscc
    for c in candidates:
        if c is not None and c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("dscc")


def run_cli(args):
    exe = find_dscc()
    if exe is None:
        print("dscc: error: cannot find the dscc executable (not beside this module, not on PATH)", file=sys.stderr)
        return 2
    return subprocess.call([exe, *args])


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv[1:]))
