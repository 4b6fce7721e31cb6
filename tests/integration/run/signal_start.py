#!/usr/bin/env python3
"""Signal agentrun at many points of its start, with delays growing from 0 to past the
moment the command runs; every run must end promptly with the signal's status (128+N,
or agentrun itself killed by N before it took signals over), never the command's own
success. Usage: signal_start.py AGENTRUN SIGNAME RUNS STEP_MS [run args...]"""
import signal
import subprocess
import sys
import time

agentrun, signame, runs, step_ms, *args = sys.argv[1:]
sig = getattr(signal, signame)
bad = []
for i in range(int(runs)):
    delay = i * float(step_ms) / 1000
    # Popen returns after the exec: the signal reaches agentrun, never the fork before it
    p = subprocess.Popen([agentrun, "run", *args, "--", "sleep", "30"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay)
    sent = time.monotonic()
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    took = time.monotonic() - sent
    if p.returncode not in (128 + sig, -sig) or took > 5:
        bad.append(f"delay {delay * 1000:.1f} ms: status {p.returncode} after {took:.2f} s; "
                   f"stderr: {err.decode(errors='replace')[-300:]!r}")
print(f"{signame}: {int(runs) - len(bad)} of {runs} runs ended with 128+{int(sig)}")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
