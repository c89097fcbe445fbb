#!/usr/bin/env python3
"""report.py -- the performance tables of one benchmark run, in markdown.

Usage: python3 bench/report.py [--tbs TB_PER_S] PATH...

PATH is the folder that bench/gpu_run.sh leaves ($OUT: bench.json from
build-gpu/bench/ndf_bench, peers_<family>.json from bench/peers_<family>.py,
bandwidth.json with the card's measured copy bandwidth), or any JSON-lines
file of either program.  It uses the Python standard library only, so it
runs wherever the JSON lands.

It prints one table per op family: each workload's ndforge warm time next to
every peer measured in the same run, and the memory floor, with the device,
the date and the command that reproduces the table above it.  Records are
joined by their "name" (the workload key ndf_bench and the peers share).
  ndforge  ndf_bench's warm_ms: the median CUDA-event time of one call;
  peers    cupyx, torch, ...: their own warm_ms, timed the same way;
           scipy: cpu_ms, one run on one CPU thread;
  floor    bytes / the card's bandwidth: bytes = input read once + output
           written once (ndf_bench's "bytes"; a peer's where ndforge has no
           record), bandwidth = the card's copy bandwidth: --tbs, else the
           run's bandwidth.json, else the table below.
A workload recorded twice counts once, by its last record.
"""
import argparse
import json
import math
import os
import sys

# Copy bandwidth (read + write) measured with torch on each card, in bytes/s, for
# runs without a bandwidth.json; ndf_bench and the peers compute their floor_ms
# with the H200's.
CARD_BYTES_PER_S = {"H200": 4.19e12}
DEFAULT_BYTES_PER_S = CARD_BYTES_PER_S["H200"]

# (key, title, the ops of ndf_bench's table); a peer record's family is its
# "bench" (peers_<key>); an op not named here gets a table of its own.
FAMILIES = [
    ("grey", "Grey morphology", ("grey_erosion", "grey_dilation", "grey_opening")),
    ("rank", "Rank filters", ("median_filter", "rank_filter", "percentile_filter")),
    ("binary", "Binary morphology and label", ("binary_erosion", "binary_fill_holes", "label")),
    ("distance", "Distance transforms",
     ("distance_transform_edt", "distance_transform_cdt", "distance_transform_bf")),
    ("sinkhorn", "Sinkhorn (entropic optimal transport)", ("sinkhorn", "sinkhorn_log", "sinkhorn_dense")),
    ("ecc", "Euler characteristic curves", ("euler_characteristic_curve", "soft_ecc")),
    ("ect", "Euler characteristic transforms", ("euler_characteristic_transform", "soft_ect")),
]
FAMILY_OF_OP = {op: key for key, _, ops in FAMILIES for op in ops}
PEER_ORDER = ("cupyx", "torch", "torch_separable")


def read_lines(path):
    """The JSON objects of one JSON-lines file; other lines are skipped."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def input_files(path):
    """A run folder's JSON files: ndf_bench's, then each peers script's."""
    if not os.path.isdir(path):
        return [path]
    files = [os.path.join(path, "bench.json")]
    peers = sorted(os.path.join(path, f) for f in os.listdir(path)
                   if f.startswith("peers_") and f.endswith(".json"))
    # gpu_run.sh also concatenates the peers' files into peers.json: read it only alone.
    files += peers or [os.path.join(path, "peers.json")]
    files.append(os.path.join(path, "bandwidth.json"))
    return [f for f in files if os.path.isfile(f)]


class Run:
    def __init__(self):
        self.ours = {}     # name -> ndf_bench record
        self.peers = {}    # (peer, name) -> record
        self.failed = []   # peer records without a workload: a peer that did not import
        self.family = {}   # name -> family key
        self.order = []    # names, first seen first
        self.bandwidth = {}  # device -> bytes/s measured in the run (bandwidth.json)

    def add(self, r):
        name = r.get("name")
        if "bytes_per_s" in r and "device" in r:
            self.bandwidth[r["device"]] = r["bytes_per_s"]
            return
        if "peer" in r:
            if not name:
                self.failed.append(r)
                return
            self.peers[(r["peer"], name)] = r
            fam = str(r.get("bench", "")).replace("peers_", "", 1)
            self.family.setdefault(name, fam)
        elif name and "warm_ms" in r:
            self.ours[name] = r
            self.family[name] = FAMILY_OF_OP.get(r.get("op"), r.get("op") or "other")
        else:
            return
        if name not in self.order:
            self.order.append(name)


def ms(v):
    """3 significant digits, no exponent: 0.0292, 1.68, 20.2, 173."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "—"
    if v >= 100:
        return "%.0f" % v
    if v <= 0:
        return "0"
    return "%.*f" % (max(0, 2 - math.floor(math.log10(v))), v)


def day(date):
    return str(date)[:10] if date else ""


def card_bandwidth(devices, tbs, measured):
    """(bytes/s, note) for the floor on these devices."""
    if tbs:
        return tbs * 1e12, "%.3g TB/s (given)" % tbs
    for d in devices:
        if d in measured:
            return measured[d], "%.3g TB/s, the copy bandwidth measured on this card in this run" % (measured[d] / 1e12)
    for card, bw in CARD_BYTES_PER_S.items():
        if any(card in d for d in devices):
            return bw, "%.3g TB/s, the %s's measured copy bandwidth" % (bw / 1e12, card)
    return DEFAULT_BYTES_PER_S, ("%.3g TB/s, the H200's: no bandwidth is known for this card, pass --tbs"
                                 % (DEFAULT_BYTES_PER_S / 1e12))


def peer_cell(r, notes, peer, name):
    if r is None:
        return "—"
    if r.get("error"):
        notes.append("%s on `%s`: error: %s" % (peer, name, r["error"]))
        return "error"
    if r.get("skipped"):
        return "n/a"
    cell = ms(r.get("warm_ms", r.get("cpu_ms")))
    if "MISMATCH" in str(r.get("check", "")).upper():
        notes.append("%s on `%s`: %s" % (peer, name, r["check"]))
        cell += " ✗"
    return cell


def peer_header(p):
    return "scipy CPU ms" if p == "scipy" else "%s ms" % p


def peers_script(key):
    """bench/peers_<key>.py when it exists: the peers of this family."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.isfile(os.path.join(here, "peers_%s.py" % key))


def table(key, title, run, names, tbs):
    ours = [run.ours[n] for n in names if n in run.ours]
    prs = [r for (p, n), r in run.peers.items() if n in names]
    peers = sorted({r["peer"] for r in prs},
                   key=lambda p: (p == "scipy", PEER_ORDER.index(p) if p in PEER_ORDER else len(PEER_ORDER), p))
    gpu_devices = sorted({r.get("device") for r in ours + prs
                          if r.get("device") and not str(r.get("device")).lower().startswith("cpu")})
    dates = sorted({day(r.get("date")) for r in ours + prs if r.get("date")})
    bw, bw_note = card_bandwidth(gpu_devices, tbs, run.bandwidth)
    versions = []
    for p in peers:
        v = sorted({str(r.get("version")) for r in prs if r["peer"] == p and r.get("version")})
        versions.append("%s %s" % (p, "/".join(v)) if v else p)

    out = ["### %s" % title, ""]
    when = dates[0] if len(dates) == 1 else "%s to %s" % (dates[0], dates[-1]) if dates else "date unknown"
    out.append("%s, %s. ndforge%s%s." % (", ".join(gpu_devices) or "device unknown", when,
                                          " %s" % ours[0]["version"] if ours and ours[0].get("version") else "",
                                          "; peers: " + ", ".join(versions) if versions else "; no peer in this run"))
    bench_args = "NDF_BENCH_ARGS=--deferred-errors " if any(o.get("deferred_errors") for o in ours) else ""
    out.append("Reproduce: `%sNDF_PEERS=%s bench/gpu_run.sh --quick` on the GPU machine (tables in "
               "`$OUT/tables.md`)." % (bench_args, key if peers_script(key) else "none"))
    out.append("")
    cols = ["workload", "ndforge ms"] + [peer_header(p) for p in peers] + ["floor ms"]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|")
    notes = []
    deferred = []
    for n in names:
        o = run.ours.get(n)
        if o is None:
            cell = "—"
        elif o.get("error"):
            cell = "error"
            notes.append("ndforge on `%s`: error: %s" % (n, o["error"]))
        else:
            cell = ms(o.get("warm_ms"))
            if str(o.get("check", "")).startswith("mismatch"):
                cell += " ✗"
                notes.append("ndforge on `%s`: output differs from the CPU backend" % n)
        if o is not None and o.get("deferred_errors"):
            deferred.append(n)
        row = [n, cell] + [peer_cell(run.peers.get((p, n)), notes, p, n) for p in peers]
        nbytes = o.get("bytes") if o else None
        if nbytes is None:
            nbytes = next((run.peers[(p, n)].get("bytes") for p in peers
                           if (p, n) in run.peers and run.peers[(p, n)].get("bytes")), None)
        row.append(ms(nbytes / bw * 1e3) if nbytes else "—")
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("Warm medians in ms (CUDA events)%s; floor: bytes moved (input read once, output written "
               "once) / %s." % ("; scipy: one run on one CPU thread" if "scipy" in peers else "", bw_note))
    if deferred:
        waiting = [o["name"] for o in ours if o["name"] not in deferred]
        if not waiting:
            which = ": every workload"
        elif len(waiting) < len(deferred):
            which = ", except " + ", ".join("`%s`" % n for n in waiting)
        else:
            which = ": " + ", ".join("`%s`" % n for n in deferred)
        out.append("ndforge with deferred data checks (`ndf_bench --deferred-errors`)%s." % which)
    seen = set()
    for p in peers:
        for r in prs:
            if r["peer"] != p:
                continue
            for field in ("boundary", "note"):
                text = r.get(field)
                if text and (p, text) not in seen:
                    seen.add((p, text))
                    notes.append("%s: %s" % (p, text))
    for r in run.failed:
        if str(r.get("bench", "")).replace("peers_", "", 1) == key:
            notes.append("%s did not run: %s" % (r.get("peer"), r.get("error", "")))
    if notes:
        out.append("")
    for t in notes:
        out.append("- %s" % t)
    out.append("")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+", metavar="PATH",
                    help="a folder bench/gpu_run.sh left ($OUT), or JSON-lines files of ndf_bench / peers_*.py")
    ap.add_argument("--tbs", type=float, help="the card's bandwidth in TB/s for the floor (default: by card)")
    args = ap.parse_args(argv)

    run = Run()
    for path in args.paths:
        files = input_files(path)
        if not files:
            print("report.py: %s: no bench.json or peers_*.json" % path, file=sys.stderr)
        for f in files:
            try:
                recs = read_lines(f)
            except OSError as e:
                print("report.py: %s" % e, file=sys.stderr)
                continue
            for r in recs:
                run.add(r)
    if not run.order:
        print("report.py: no benchmark records in %s" % " ".join(args.paths), file=sys.stderr)
        return 1

    known = [k for k, _, _ in FAMILIES]
    titles = {k: t for k, t, _ in FAMILIES}
    extra = sorted({run.family[n] for n in run.order} - set(known))
    lines = []
    for key in known + extra:
        names = [n for n in run.order if run.family[n] == key]
        if names:
            lines += table(key, titles.get(key, key), run, names, args.tbs)
    sys.stdout.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
