#!/usr/bin/env bash
# Lint: the files of src/proxy form layers. From the object files (nm: the symbols
# each defines and the ones it leaves undefined) it derives which file calls into
# which, and fails on any cycle between files, naming the symbols on it, and on any
# call that does not go down the order src/proxy/internal.h declares (`layers: a -> b,
# c -> ...`, lowest first: a file calls only into layers below its own), or a file the
# order does not name. It also fails on a function in src/proxy longer than 60 lines,
# and on a client state set outside the driver (conn.c sets c->state; steps return the
# next one).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cmd nm
need_cmd python3
objdir="$AR_BUILD_DIR/CMakeFiles/ar_proxy.dir/src/proxy"
[ -d "$objdir" ] || { fail "no object files in $objdir (build first)"; finish; }
rc=0
out=$(python3 - "$objdir" "$AR_SOURCE_DIR/src/proxy" <<'PY'
import os, re, subprocess, sys
objdir, srcdir = sys.argv[1], sys.argv[2]
defs, undef = {}, {}
for f in sorted(os.listdir(objdir)):
    # an object whose source moved away (a stale build) is no file of the proxy
    if not f.endswith(".c.o") or not os.path.exists(os.path.join(srcdir, f[:-2])):
        continue
    name = f[:-4]
    defs[name], undef[name] = set(), set()
    for line in subprocess.run(["nm", os.path.join(objdir, f)], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undef[name].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRGSV":
            defs[name].add(parts[2])
owner = {s: n for n, ss in defs.items() for s in ss}
edges = {n: {} for n in defs}
for n, ss in undef.items():
    for s in ss:
        o = owner.get(s)
        if o and o != n:
            edges[n].setdefault(o, []).append(s)
# Tarjan's strongly connected components: a component of more than one file is a cycle
index, low, stack, on, comps = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        comps.append(comp)
sys.setrecursionlimit(10000)
for v in sorted(edges):
    if v not in index:
        visit(v)
bad = 0
for comp in comps:
    if len(comp) > 1:
        bad = 1
        print("cycle between: " + " ".join(sorted(comp)))
        for a in sorted(comp):
            for b in sorted(edges[a]):
                if b in comp:
                    print("  %s -> %s (%s)" % (a, b, ", ".join(sorted(edges[a][b])[:4])))
# the declared order: "layers: ev -> iobuf, http1 -> ... -> loop." in internal.h
header = open(os.path.join(srcdir, "internal.h")).read()
m = re.search(r"layers:(.*?)\.\n", header, re.S)
if m is None:
    bad = 1
    print("src/proxy/internal.h declares no `layers:` order")
    order = []
else:
    text = re.sub(r"\([^)]*\)", "", re.sub(r"\n\s*\*", " ", m.group(1)))
    order = [[f.strip() for f in layer.split(",") if f.strip()] for layer in text.split("->")]
level = {f: i for i, layer in enumerate(order) for f in layer}
for a in sorted(edges):
    if a not in level:
        bad = 1
        print("not in the declared layers: %s.c" % a)
        continue
    for b in sorted(edges[a]):
        if b in level and level[b] >= level[a]:
            bad = 1
            print("%s: %s -> %s (%s): layer %d calls layer %d" % (
                "sideways" if level[b] == level[a] else "upwards", a, b,
                ", ".join(sorted(edges[a][b])[:4]), level[a], level[b]))
for f in sorted(level):
    if f not in edges:
        bad = 1
        print("declared but no such file: %s.c" % f)
print("files: %d, edges: %d, layers: %d" % (len(edges), sum(len(e) for e in edges.values()),
                                             len(order)))
# functions: from a line starting with "{" to the next line starting with "}"
for f in sorted(os.listdir(srcdir)):
    if not f.endswith(".c"):
        continue
    lines = open(os.path.join(srcdir, f)).read().split("\n")
    start = None
    for i, l in enumerate(lines):
        if l.startswith("{"):
            start = i
        elif l.startswith("}") and start is not None:
            n = i - start - 1
            if n > 60:
                bad = 1
                print("long function: %s:%d: %s (%d lines)" % (f, start, lines[start - 1], n))
            start = None
    if f not in ("conn.c", "http1.c"):
        for i, l in enumerate(lines):
            if re.search(r"->state\s*=[^=]", l):
                bad = 1
                print("state set outside the driver: %s:%d: %s" % (f, i + 1, l.strip()))
sys.exit(bad)
PY
) || rc=$?
if [ "$rc" = 0 ]; then pass "src/proxy: calls only down the declared layers, no function over 60 lines, states set by the driver only ($(echo "$out" | tail -1))"; else
	fail "src/proxy layering: $out"
fi
finish
