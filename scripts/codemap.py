#!/usr/bin/env python3
"""The shape of src/ in figures: function lengths and the include graph between folders.

  codemap.py functions [SRC]   count, median, longest, how many over 60 lines
  codemap.py folders [SRC]     the include edges between folders of SRC and their cycles

A function runs from a line starting with "{" to the next line starting with "}" (the
tree is clang-formatted with Linux braces); its length is the lines between the two, as
tests/integration/lint_proxy_layers.sh counts them. A folder includes another when one
of its files includes a header of the other: a private header by relative path, or a
public one (include/agentrun/H.h) whose owner is the folder defining most of the ar_
functions H declares (a header declaring none belongs to src/H/ when that exists).
Exit status of `folders`: 1 when there is a cycle, so a lint can call it.
"""
import os
import re
import statistics
import sys

DECL = re.compile(r"^[^#/ \t].*?\b(ar_\w+)\s*\(", re.M)
DEF = re.compile(r"^[A-Za-z_].*?\b(ar_\w+)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(src):
    for folder in sorted(os.listdir(src)):
        d = os.path.join(src, folder)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith((".c", ".h")):
                yield folder, os.path.join(d, f)


def functions(src):
    """(file, line, signature, body lines) of every function in SRC."""
    out = []
    for _, path in sources(src):
        if not path.endswith(".c"):
            continue
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        start = None
        for i, line in enumerate(lines):
            if line.startswith("{"):
                start = i
            elif line.startswith("}") and start is not None:
                out.append((os.path.relpath(path, src), start, lines[start - 1].strip(),
                            i - start - 1))
                start = None
    return out


def cmd_functions(src):
    fns = functions(src)
    lengths = sorted(n for *_, n in fns)
    longest = sorted(fns, key=lambda f: -f[3])[:5]
    print("functions: %d, median %g lines, over 60 lines: %d" %
          (len(fns), statistics.median(lengths), sum(1 for n in lengths if n > 60)))
    for path, line, sig, n in longest:
        print("  %4d  %s:%d  %s" % (n, path, line, sig))
    return 0


def header_owners(src, include):
    defined = {}
    for folder, path in sources(src):
        if path.endswith(".c"):
            for line in open(path, encoding="utf-8", errors="replace"):
                m = DEF.match(line)
                if m and not line.rstrip().endswith(";"):
                    defined.setdefault(m.group(1), folder)
    owners = {}
    for h in sorted(os.listdir(include)):
        text = open(os.path.join(include, h), encoding="utf-8").read()
        votes = {}
        for name in DECL.findall(text):
            if name in defined:
                votes[defined[name]] = votes.get(defined[name], 0) + 1
        if votes:
            owners[h] = max(sorted(votes), key=lambda f: votes[f])
        elif os.path.isdir(os.path.join(src, h[:-2])):
            owners[h] = h[:-2]
        else:
            owners[h] = None
    return owners


def folder_edges(src):
    include = os.path.join(os.path.dirname(os.path.abspath(src)), "include", "agentrun")
    owners = header_owners(src, include)
    edges = {}
    for folder, path in sources(src):
        edges.setdefault(folder, {})
        for inc in INCLUDE.findall(open(path, encoding="utf-8", errors="replace").read()):
            if inc.startswith("agentrun/"):
                to = owners.get(inc[len("agentrun/"):])
            else:
                target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
                rel = os.path.relpath(target, src).split(os.sep)
                to = rel[0] if len(rel) > 1 else None
            if to and to != folder:
                edges[folder].setdefault(to, set()).add("%s: %s" % (
                    os.path.relpath(path, src), inc))
    return edges


def cycles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return comps


def cmd_folders(src):
    edges = folder_edges(src)
    comps = cycles(edges)
    n_edges = sum(len(e) for e in edges.values())
    print("folders: %d, include edges between folders: %d, cycles: %d" %
          (len(edges), n_edges, len(comps)))
    for comp in comps:
        print("cycle between: " + " ".join(comp))
        for a in comp:
            for b in sorted(edges[a]):
                if b in comp:
                    print("  %s -> %s (%s)" % (a, b, "; ".join(sorted(edges[a][b])[:3])))
    if "-v" in sys.argv:
        for a in sorted(edges):
            print("%s -> %s" % (a, " ".join(sorted(edges[a]))))
    return 1 if comps else 0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    if not args or args[0] not in ("functions", "folders"):
        sys.exit(__doc__)
    src = args[1] if len(args) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    sys.exit({"functions": cmd_functions, "folders": cmd_folders}[args[0]](src))


if __name__ == "__main__":
    main()
