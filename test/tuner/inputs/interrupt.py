# Starts dscc-tune, sends SIGINT after a few seconds, and checks that it wrote what it had measured (exit status 130).
import re
import signal
import subprocess
import sys
import time

tool, model, shapes, out = sys.argv[1:5]
p = subprocess.Popen([tool, model, "--shapes", shapes, "--budget", "10m", "--no-cache", "-o", out],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(4)
p.send_signal(signal.SIGINT)
stdout, stderr = p.communicate(timeout=120)
text = open(out).read()
measured = int(re.search(r"measured: (\d+)", text).group(1))
points = int(re.search(r"points: (\d+)", text).group(1))
print("status", p.returncode)
print("measured some" if 0 < measured < points else "measured %d of %d" % (measured, points))
print(stderr.strip().splitlines()[-1])
