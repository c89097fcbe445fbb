#!/usr/bin/env bash
# test_cli_help.sh -- every command's --help against the options it parses.
#
#   tests/test_cli_help.sh path/to/ndforge SCRATCH_DIR
#
# The commands are those `ndforge --help` names (with the subcommands it
# names, e.g. cache list), and `run OP` for every op it lists (and n4).  Each
# must print its usage on stdout and exit 0 for --help.  The options that
# several commands share (--device, --cpu-threads, --batch-dims,
# --batch-axis, --tune, --output-dtype) are probed with a bad value: a
# command that does not reject the option as unknown (or not for it) takes
# it, and then its --help must name it; a --help that names --device or
# --cpu-threads must belong to a command that takes it.  A probe must exit
# non-zero (the bad value stops it before anything runs).  Needs only
# python3.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup help "sys" "$@"

cat > help.py <<'PY'
import re, subprocess, sys
cli = sys.argv[1]
PROBES = [("device", "bogus"), ("cpu-threads", "0"), ("batch-dims", "-1"), ("batch-axis", "x"),
          ("tune", "x"), ("output-dtype", "bogus")]
BOTH_WAYS = ("device", "cpu-threads")
UNKNOWN = re.compile(r"unknown|does not apply|takes no")


def run(args):
    return subprocess.run([cli] + args, capture_output=True, text=True, timeout=60)


top = run(["--help"]).stdout
cmds = []
for line in top.splitlines():
    m = re.match(r"  ndforge ([a-z]+)(?: ([a-z]+)\b)?", line)
    if m and [w for w in m.groups() if w] not in cmds:
        cmds.append([w for w in m.groups() if w])
ops = re.findall(r"[a-z][a-z0-9_]*", top[top.index("Ops (scipy.ndimage names):") + 26:top.index("Interpolation:")])
interp = re.findall(r"[a-z][a-z0-9_]*", top[top.index("Interpolation:") + 14:top.index("(NIfTI")])
assert ops and interp and ["run"] in cmds and ["demo"] in cmds, (ops, interp, cmds)
cmds += [["run", op] for op in ops + interp + ["n4"]]
bad = checked = 0
for c in cmds:
    h = run(c + ["--help"])
    if h.returncode != 0 or not h.stdout.startswith("usage:"):
        print("FAIL: ndforge %s --help exited %d: %s" % (" ".join(c), h.returncode, (h.stderr or h.stdout).strip()[:200]))
        bad += 1
        continue
    if c == ["run"]:
        continue  # run's own help describes every op's options
    for opt, val in PROBES:
        p = run(c + ["--" + opt, val])
        checked += 1
        takes = not UNKNOWN.search(p.stderr)
        named = re.search(r"--%s\b" % re.escape(opt), h.stdout) is not None
        if p.returncode == 0:
            print("FAIL: ndforge %s --%s %s exited 0" % (" ".join(c), opt, val))
            bad += 1
        elif takes and not named:
            print("FAIL: ndforge %s takes --%s (%s) but its --help does not name it" % (" ".join(c), opt,
                  p.stderr.strip()[:120]))
            bad += 1
        elif named and not takes and opt in BOTH_WAYS:
            print("FAIL: ndforge %s --help names --%s, which it rejects: %s" % (" ".join(c), opt, p.stderr.strip()[:120]))
            bad += 1
print("%d commands, %d option probes, %d failures" % (len(cmds), checked, bad))
sys.exit(1 if bad else 0)
PY
if "$py" help.py "$cli"; then npass=$((npass + 1)); else fail "--help against the options parsed"; fi
cli_summary
