#!/usr/bin/python3
"""dscc-tune shards as a Slurm job array on a single-node cluster this test starts and stops.

Usage: /usr/bin/python3 test/tuner/slurm_shards_test.py PATH/TO/dscc-tune SOURCE_DIR [SHARDS]

In a temporary folder the test writes a munge key, a slurm.conf (one node,
this machine, free ports, every path in the folder) and starts munged,
slurmctld and slurmd (Debian's munge and slurm-wlm), waits until the node is
idle, then submits `dscc-tune --shard $SLURM_ARRAY_TASK_ID/N` (the
deterministic --fake-timer, so results do not depend on timing) as a job
array with `sbatch --array=0-(N-1) --wait`, merges the shard files with
`dscc-tune merge`, and compares the result byte for byte with a
single-process run. The daemons are stopped and the folder removed whatever
happens.

Exit status: 0 when the merged YAML equals the single run; 1 when it does
not or a shard fails; 77 (ctest SKIP_RETURN_CODE) with the reason printed
when the engine cannot run here (not root, Slurm or munge not installed, a
daemon that does not come up, a node that cannot run even `true`).
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TUNE, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
N = int(sys.argv[3]) if len(sys.argv) > 3 else 4
MODEL = os.path.join(SRC, "bench", "workloads", "layer_norm.dsc")
SHAPES = os.path.join(SRC, "bench", "workloads", "shapes", "layer_norm_rows.yaml")
SKIP = 77


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no %s)\n" % path


if os.geteuid() != 0:
    skip("slurmd and munged need root to start here (running as uid %d)" % os.geteuid())
tools = {}
for t in ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol"):
    tools[t] = shutil.which(t) or next((p for p in ("/usr/sbin/" + t, "/usr/bin/" + t) if os.path.exists(p)), None)
    if not tools[t]:
        skip("%s is not installed (Debian packages slurm-wlm and munge; scripts/setup.sh installs them)" % t)

tmp = tempfile.mkdtemp(prefix="dscc-slurm-")
os.chmod(tmp, 0o755)  # munged refuses keys and sockets in group- or world-writable folders
procs = []
env = dict(os.environ)
rc = 1
try:
    conf = os.path.join(tmp, "slurm.conf")
    env["SLURM_CONF"] = conf  # the one way Slurm's commands find a private cluster's configuration
    for d in ("munge", "state", "spool", "log", "work"):
        os.makedirs(os.path.join(tmp, d), mode=0o700)
    key = os.path.join(tmp, "munge", "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    msock = os.path.join(tmp, "munge", "munge.socket")
    munged = subprocess.Popen([tools["munged"], "--foreground", "--force", "--key-file", key, "--socket", msock,
                               "--pid-file", os.path.join(tmp, "munge", "munged.pid"),
                               "--log-file", os.path.join(tmp, "log", "munged.log"),
                               "--seed-file", os.path.join(tmp, "munge", "munged.seed")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    procs.append(munged)
    for _ in range(50):
        if os.path.exists(msock) or munged.poll() is not None:
            break
        time.sleep(0.1)
    if not os.path.exists(msock):
        skip("munged did not start:\n" + tail(os.path.join(tmp, "log", "munged.log")))

    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    ctld_port, slurmd_port = free_port(), free_port()
    with open(conf, "w") as f:
        f.write("""# A one-node cluster for dscc's tests (test/tuner/slurm_shards_test.py).
ClusterName=dscctest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={msock}
CredType=cred/munge
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/log/slurmctld.log
SlurmdLogFile={tmp}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
""".format(host=host, ctld=ctld_port, slurmd=slurmd_port, msock=msock, tmp=tmp, cpus=cpus))
    # slurmd loads a cgroup plugin even when no job uses cgroups: the one
    # this machine mounts (v1 or v2), without asking systemd for a scope.
    with open(os.path.join(tmp, "cgroup.conf"), "w") as f:
        f.write("CgroupPlugin=autodetect\nIgnoreSystemd=yes\n")
    ctld = subprocess.Popen([tools["slurmctld"], "-D", "-i", "-f", conf], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "log", "slurmctld.err"), "w"))
    procs.append(ctld)
    slurmd = subprocess.Popen([tools["slurmd"], "-D", "-f", conf, "-N", host], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(tmp, "log", "slurmd.err"), "w"))
    procs.append(slurmd)
    state = ""
    for _ in range(60):
        if ctld.poll() is not None or slurmd.poll() is not None:
            break
        p = subprocess.run([tools["sinfo"], "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True)
        state = p.stdout.strip()
        if p.returncode == 0 and state.startswith("idle"):
            break
        time.sleep(0.5)
    if not state.startswith("idle"):
        skip("the Slurm node did not become idle (state '%s'):\n--- slurmctld\n%s%s--- slurmd\n%s%s" % (
            state, tail(os.path.join(tmp, "log", "slurmctld.log")), tail(os.path.join(tmp, "log", "slurmctld.err")),
            tail(os.path.join(tmp, "log", "slurmd.log")), tail(os.path.join(tmp, "log", "slurmd.err"))))
    print("slurm: node %s idle (slurmctld port %d, slurmd port %d)" % (host, ctld_port, slurmd_port))

    work = os.path.join(tmp, "work")
    os.chmod(work, 0o755)
    # A job that does nothing tells an engine that cannot run jobs here (a
    # skip) from a failing shard (a failure).
    p = subprocess.run([tools["sbatch"], "--wait", "--chdir", work, "--output", os.path.join(work, "probe.txt"),
                        "--wrap", "true"], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        skip("Slurm runs but cannot run a job here (sbatch --wrap true: status %d %s):\n--- slurmd\n%s" % (
            p.returncode, p.stderr.strip(), tail(os.path.join(tmp, "log", "slurmd.log"))))
    job = os.path.join(work, "shard.sh")
    with open(job, "w") as f:
        f.write("""#!/bin/bash
# One shard of the tuning per array task (docs/tuning.md, "Spreading the work").
set -euo pipefail
exec {tune} {model} --shapes {shapes} --fake-timer --no-cache --progress=never \\
  --shard ${{SLURM_ARRAY_TASK_ID}}/{n} -o {work}/shard.${{SLURM_ARRAY_TASK_ID}}.yaml
""".format(tune=TUNE, model=MODEL, shapes=SHAPES, n=N, work=work))
    os.chmod(job, 0o755)
    start = time.time()
    p = subprocess.run([tools["sbatch"], "--array=0-%d" % (N - 1), "--wait", "--chdir", work,
                        "--output", os.path.join(work, "out.%a.txt"), "--job-name", "dscc-tune", job],
                       env=env, capture_output=True, text=True, timeout=300)
    print(p.stdout.strip(), p.stderr.strip())
    outs = "".join("--- task %d\n%s" % (i, tail(os.path.join(work, "out.%d.txt" % i))) for i in range(N))
    if p.returncode != 0:
        print("FAIL: the job array failed (status %d)\n%s" % (p.returncode, outs))
        sys.exit(1)
    print("slurm: %d array tasks done in %.1fs" % (N, time.time() - start))
    shards = [os.path.join(work, "shard.%d.yaml" % i) for i in range(N)]
    missing = [s for s in shards if not os.path.exists(s)]
    if missing:
        print("FAIL: shards missing: %s\n%s" % (missing, outs))
        sys.exit(1)
    merged, single = os.path.join(work, "merged.yaml"), os.path.join(work, "single.yaml")
    m = subprocess.run([TUNE, "merge"] + shards + ["-o", merged], capture_output=True, text=True)
    s = subprocess.run([TUNE, MODEL, "--shapes", SHAPES, "--fake-timer", "--no-cache", "-o", single],
                       capture_output=True, text=True)
    if m.returncode != 0 or s.returncode != 0:
        print("FAIL: merge or single run failed:", m.stderr, s.stderr)
        sys.exit(1)
    a, b = open(merged, "rb").read(), open(single, "rb").read()
    if a != b:
        print("FAIL: the merged shards differ from the single run")
        subprocess.run(["diff", merged, single])
        sys.exit(1)
    print("ok: %d shards run by Slurm as a job array, merged: byte-identical to the single run (%d bytes)" % (N, len(a)))
    rc = 0
finally:
    for pr in reversed(procs):
        if pr.poll() is None:
            pr.send_signal(signal.SIGTERM)
    for pr in reversed(procs):
        try:
            pr.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(rc)
