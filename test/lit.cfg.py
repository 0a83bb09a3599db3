# lit configuration: runs every .dsc / .test file under test/ with dscc tools on PATH.
import os
import lit.formats

config.name = "dscc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".dsc", ".test"]
config.excludes = ["unit", "inputs", "lit.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dscc_obj_root, "test")
path = os.pathsep.join([config.dscc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.environment["PATH"] = path + os.pathsep + os.environ.get("PATH", "")
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%srcroot", config.dscc_src_root))
config.substitutions.append(("%workloads", os.path.join(config.dscc_src_root, "bench", "workloads")))
# %preload_cuda_record CMD runs CMD with the CUDA stand-in preloaded. A sanitizer
# build preloads ASan's runtime before it, and checks no leaks there: the
# preload reaches the system linker and compiler dscc runs, which leak.
# %preload_cuda_flagged: the stand-in whose kernels all flagged index 7 (test/shim).
asan = getattr(config, "asan_runtime", "")
for name, lib in (("%preload_cuda_record", config.cuda_record), ("%preload_cuda_flagged", config.cuda_flagged)):
    config.substitutions.append((name, "env LD_PRELOAD=" + asan + ":" + lib + " ASAN_OPTIONS=detect_leaks=0"
                                 if asan else "env LD_PRELOAD=" + lib))

# The shared yardstick sits beside the project in the development and CI
# checkouts, never on a user's machine.
shared_workloads = os.path.join(config.dscc_src_root, "..", "shared", "workloads")
if os.path.isdir(shared_workloads):
    config.available_features.add("shared-workloads")
    config.substitutions.append(("%shared_workloads", shared_workloads))

# AVX-512: code built for x86-64-v4 runs only on such a CPU; tests that run
# it say REQUIRES: avx512f (their IR checks run everywhere).
try:
    with open("/proc/cpuinfo") as f:
        if " avx512f" in f.read():
            config.available_features.add("avx512f")
except OSError:
    pass

# The CUDA toolkit, where present: ptxas assembles generated PTX, libdevice
# provides GPU math. Tests that need them say so with REQUIRES and are
# reported UNSUPPORTED (with that reason) where the toolkit is absent.
import shutil
cuda_bin = "/usr/local/cuda/bin"
ptxas = shutil.which("ptxas") or (os.path.join(cuda_bin, "ptxas") if os.path.exists(os.path.join(cuda_bin, "ptxas")) else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
if os.path.exists("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"):
    config.available_features.add("libdevice")
