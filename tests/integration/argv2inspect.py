#!/usr/bin/env python3
"""What docker would record for the agent's `docker run` flags of a rendered plan
(`agentrun render --format json`), as `docker inspect CONTAINER NETWORK` prints it.
Usage: argv2inspect.py PLAN.json [ARG...]: each ARG is left out of the argv on purpose
(a test's way to make drift). Used by cli_render.sh and readme_examples.sh."""
import json, sys
units = {"k": 10, "m": 20, "g": 30, "t": 40}
def size(s):
    return int(s[:-1]) << units[s[-1]] if s[-1] in units else int(s)
steps = json.load(open(sys.argv[1]))["steps"]
argv = [s for s in steps if s["label"] == "agent"][0]["argv"]
argv = [a for a in argv if a not in sys.argv[2:]]  # flags a test leaves out on purpose
takes = {"--name", "--network", "--tmpfs", "--cap-drop", "--security-opt", "--cgroupns", "--pids-limit",
         "--memory", "--memory-swap", "--cpus", "--user", "-e", "-v"}
hc = {"ReadonlyRootfs": False, "Privileged": False, "CapDrop": [], "CapAdd": None,
      "SecurityOpt": [], "Tmpfs": {}, "PidMode": "", "IpcMode": "private", "UsernsMode": "",
      "CgroupnsMode": "host"}  # docker's default on cgroup v1 and hybrid hosts
cfg = {"User": "", "Env": []}
mounts, nets, name = [], {}, ""
i = 2
while argv[i].startswith("-"):
    flag = argv[i]
    val = argv[i + 1] if flag in takes else None
    i += 2 if flag in takes else 1
    if flag == "--name": name = val
    elif flag == "--network": hc["NetworkMode"] = val; nets[val] = {}
    elif flag == "--read-only": hc["ReadonlyRootfs"] = True
    elif flag == "--tmpfs": hc["Tmpfs"][val.partition(":")[0]] = val.partition(":")[2]
    elif flag == "--cap-drop": hc["CapDrop"].append(val)
    elif flag == "--security-opt": hc["SecurityOpt"].append(val)
    elif flag == "--cgroupns": hc["CgroupnsMode"] = val
    elif flag == "--pids-limit": hc["PidsLimit"] = int(val)
    elif flag == "--memory": hc["Memory"] = size(val)
    elif flag == "--memory-swap": hc["MemorySwap"] = size(val)
    elif flag == "--cpus": hc["NanoCpus"] = int(round(float(val) * 1e9))
    elif flag == "--user": cfg["User"] = val
    elif flag == "-e": cfg["Env"].append(val)
    elif flag == "-v":
        src, dst, mode = val.split(":")
        m = {"Source": src, "Destination": dst, "RW": mode != "ro"}
        m.update({"Type": "bind"} if src.startswith("/") else {"Type": "volume", "Name": src})
        mounts.append(m)
    elif flag not in ("--rm", "-i", "-d"): sys.exit("argv2inspect: unknown flag " + flag)
cfg["Image"], cfg["Cmd"] = argv[i], argv[i + 1:]
out = [{"Name": "/" + name, "AppArmorProfile": "", "HostConfig": hc, "Config": cfg,
        "Mounts": mounts, "NetworkSettings": {"Networks": nets}}]
# the agent's network as `docker inspect CONTAINER NETWORK` would add it
for s in steps:
    if s["label"] != "internal network": continue
    a = [x for x in s["argv"][3:] if x not in sys.argv[2:]]
    opts = {a[k + 1].partition("=")[0]: a[k + 1].partition("=")[2] for k in range(len(a)) if a[k] == "-o"}
    out.append({"Name": a[-1], "Driver": "bridge", "Internal": "--internal" in a, "Options": opts,
                "IPAM": {"Config": [{"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}]}})
json.dump(out, sys.stdout)
