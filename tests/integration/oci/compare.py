# Compare what `agentrun run` built with what runc built from the rendered config.json
# for the same policy, both seen from /proc inside (and the cgroup limits from outside).
# Usage: compare.py CONFIG RUN_OUT OCI_OUT RUN_LIMITS OCI_LIMITS
# Each *_OUT holds: mountinfo, "@@ENV", environ lines, "@@END". Each *_LIMITS one
# "name value" per line. Prints one line per field compared ("same NAME: VALUE" or
# "DIFF NAME: run=... oci=..."); exits 1 on any difference.
import json
import sys


def sections(path):
    mounts, env, cur = [], [], None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line == "@@ENV":
            cur = env
        elif line == "@@END":
            break
        elif cur is None:
            mounts.append(line)
        elif line:
            cur.append(line)
    return mounts, env


def unescape(s):
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mount_table(lines):
    """mount point -> (fstype, ro, root) of the mount visible there (the last one)."""
    table = {}
    for line in lines:
        f = line.split(" ")
        if len(f) < 10 or "-" not in f:
            continue
        sep = f.index("-")
        opts = f[5].split(",") + f[sep + 3].split(",")
        table[unescape(f[4])] = (f[sep + 1], "ro" in opts, unescape(f[3]))
    return table


def main():
    config = json.load(open(sys.argv[1]))
    run_m, run_env = sections(sys.argv[2])
    oci_m, oci_env = sections(sys.argv[3])
    run_t, oci_t = mount_table(run_m), mount_table(oci_m)
    kubeconfig = next((e.split("=", 1)[1] for e in config["process"]["env"]
                       if e.startswith("KUBECONFIG=")), None)
    facts = []  # (name, run value, oci value)

    def masked(t, p):
        if p not in t:
            return "absent"
        # a file is masked with /dev/null (writes go nowhere either way), a directory
        # with an empty read-only tmpfs
        if t[p][2].endswith("/null"):
            return "masked by /dev/null"
        return "masked %s %s" % (t[p][0], "ro" if t[p][1] else "rw")

    for p in config["linux"]["maskedPaths"]:
        facts.append(("masked " + p, masked(t=run_t, p=p), masked(t=oci_t, p=p)))

    def ro(t, p):
        return "absent" if p not in t else ("ro" if t[p][1] else "rw")

    for p in config["linux"]["readonlyPaths"]:
        facts.append(("read-only " + p, ro(run_t, p), ro(oci_t, p)))
    facts.append(("root", ro(run_t, "/"), ro(oci_t, "/")))
    base = {"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys", "/sys/fs/cgroup"}
    for m in config["mounts"]:
        d = m["destination"]
        if d in base:
            continue

        def desc(t):
            if d not in t:
                return "absent"
            kind = "tmpfs" if t[d][0] == "tmpfs" else "bind"
            # run binds the kubeconfig as a private read-only copy from a tmpfs of its own
            # (owned by the sandbox's uid, the host file untouched; docs/sandbox.md), the
            # OCI config binds the host file: both are the credential read-only at KUBECONFIG
            if d == kubeconfig and t is run_t and kind == "tmpfs":
                kind = "bind"
            return kind + (" ro" if t[d][1] else " rw")

        facts.append(("mount " + d, desc(run_t), desc(oci_t)))
    facts.append(("env", " ".join(sorted(run_env)), " ".join(sorted(oci_env))))
    facts.append(("env = config.json process.env", " ".join(sorted(config["process"]["env"])),
                  " ".join(sorted(oci_env))))
    lim = [dict(l.split(" ", 1) for l in open(p).read().splitlines() if " " in l)
           for p in sys.argv[4:6]]
    for k in sorted(set(lim[0]) | set(lim[1])):
        facts.append(("limit " + k, lim[0].get(k, "absent"), lim[1].get(k, "absent")))

    bad = 0
    for name, a, b in facts:
        if a == b:
            print("same %s: %s" % (name, a))
        else:
            bad += 1
            print("DIFF %s: run=%s oci=%s" % (name, a, b))
    sys.exit(1 if bad else 0)


main()
