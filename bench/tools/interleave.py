"""Interleaved rounds for the benches: each round runs every command once, in order, so
a burst of load on a shared machine hits all of them alike (hyperfine runs each
command's runs in a block). Not a test: bench/startup.sh and bench/hook.sh import it."""
import os
import statistics
import sys
import time


def medians(cmds, runs, warmup=3):
    """{name: argv} -> {name: median ms of `runs` rounds after `warmup`}; stdin and
    stdout on /dev/null; exits with a message when a command fails."""
    null = os.open("/dev/null", os.O_RDWR)
    acts = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1)]
    t = {k: [] for k in cmds}
    for i in range(runs + warmup):
        for k, argv in cmds.items():
            t0 = time.perf_counter()
            pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=acts)
            _, st = os.waitpid(pid, 0)
            if st != 0:
                sys.exit(f"bench: {k} failed ({st})")
            if i >= warmup:
                t[k].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in t.items()}
