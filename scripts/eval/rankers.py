#!/usr/bin/env python3
"""Compare two builds of lid's ranker on every probe set, probe by probe.

How a ranking change is checked before it lands (guest/RANKING.md): rank every set with
the old ranker and with the new one, compare the pooled figures, and list each probe
whose best-placed required unit moved. `dump` ranks every set with the native harness
(`cargo run --release -p lid-core --example eval_native`, the same ranking as the
component's, tested byte for byte) and writes one rankings file per set into a folder;
`diff` compares two such folders.

    cargo build --release -p lid-core --example eval_native
    python3 scripts/eval/rankers.py dump /tmp/old          # before the change
    # ... change the ranker, rebuild eval_native ...
    python3 scripts/eval/rankers.py dump /tmp/new
    python3 scripts/eval/rankers.py diff /tmp/old /tmp/new [--all]

The sets: the eval dev probes, then guest/data/probes-extra.jsonl and every
guest/data/probes-blind*.jsonl over the agents, then the eval-large dev probes and every
guest/data/probes-pack-blind*.jsonl over the knowledge packs. `--shared` names the folder
holding eval/ and eval-large/ (default: the LID_SHARED variable, else ../shared).
`diff` prints, for each set, hit@1 / hit@3 / MRR over probes with an answer (as
`lid eval` counts them) in both folders and the change, then the pooled figures, then
the probes whose first required unit's rank crossed place 1 (every rank change with
`--all`). Standard library only; deterministic output.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "target" / "release" / "examples" / "eval_native"


def number_order(path):
    m = re.search(r"(\d+)\.jsonl$", path.name)
    return (int(m.group(1)) if m else 0, path.name)


def sets(shared):
    """(set name, probes file, whether it ranks knowledge packs), in a fixed order."""
    data = REPO / "guest" / "data"
    out = [("dev", shared / "eval" / "probes-dev.jsonl", False), ("extra", data / "probes-extra.jsonl", False)]
    out += [(p.stem[len("probes-"):], p, False) for p in sorted(data.glob("probes-blind*.jsonl"), key=number_order)]
    out.append(("pack-dev", shared / "eval-large" / "probes-dev.jsonl", True))
    out += [(p.stem[len("probes-"):], p, True) for p in sorted(data.glob("probes-pack-blind*.jsonl"), key=number_order)]
    return out


def dump(folder, shared):
    if not HARNESS.exists():
        sys.exit(f"{HARNESS} is missing: cargo build --release -p lid-core --example eval_native")
    folder.mkdir(parents=True, exist_ok=True)
    for name, probes, packs in sets(shared):
        out = folder / f"{name}.jsonl"
        out.unlink(missing_ok=True)
        corpus = shared / ("eval-large/packs" if packs else "eval/agents")
        args = [str(HARNESS)] + (["--large"] if packs else []) + [str(corpus), str(probes)]
        run = subprocess.run(args, env={**os.environ, "LID_DUMP": str(out)}, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{name}: eval_native failed: {run.stderr.strip()[-500:]}")
        print(f"{name:16} {probes}", flush=True)


def load_probes(shared):
    probes = {}
    for _, path, _ in sets(shared):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    p = json.loads(line)
                    probes[p["id"]] = p
    return probes


def ranks(folder, name, probes):
    """{probe id: (rank of each required unit, top two)} for the set's probes with an answer."""
    out = {}
    path = folder / f"{name}.jsonl"
    if not path.exists():
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            req = probes.get(row["id"], {}).get("required_units") or []
            if not req:
                continue
            order = [s[0] for s in row["scores"]]
            out[row["id"]] = ([order.index(u) + 1 if u in order else len(order) + 1 for u in req], order[:2])
    return out


def figures(r):
    """hit@1 (the top unit is required), hit@3 (every required unit in the top 3), MRR."""
    n = len(r) or 1
    h1 = sum(1 for rk, _ in r.values() if min(rk) == 1) / n
    h3 = sum(1 for rk, _ in r.values() if max(rk) <= 3) / n
    mrr = sum(1 / min(rk) for rk, _ in r.values()) / n
    return h1, h3, mrr


def diff(old, new, shared, every):
    probes = load_probes(shared)
    pooled = {"agents": ({}, {}), "packs": ({}, {})}
    moved = []
    print(f"{'set':16} {'probes':>6}  {'old hit@1 / hit@3 / MRR':25} {'new':25} change")
    for name, _, packs in sets(shared):
        a, b = ranks(old, name, probes), ranks(new, name, probes)
        if not a or not b:
            continue
        fa, fb = figures(a), figures(b)
        print(f"{name:16} {len(a):6}  {' / '.join(f'{x:.3f}' for x in fa):25} {' / '.join(f'{x:.3f}' for x in fb):25} "
              + " / ".join(f"{y - x:+.3f}" for x, y in zip(fa, fb)))
        group = pooled["packs" if packs else "agents"]
        group[0].update(a)
        group[1].update(b)
        for pid in a:
            if pid in b and min(a[pid][0]) != min(b[pid][0]):
                crossed = (min(a[pid][0]) == 1) != (min(b[pid][0]) == 1)
                moved.append((pid, min(a[pid][0]), min(b[pid][0]), crossed, a[pid][1], b[pid][1]))
    for group, (a, b) in pooled.items():
        if a:
            fa, fb = figures(a), figures(b)
            print(f"{'all ' + group:16} {len(a):6}  {' / '.join(f'{x:.4f}' for x in fa):25} {' / '.join(f'{x:.4f}' for x in fb):25} "
                  + " / ".join(f"{y - x:+.4f}" for x, y in zip(fa, fb)))
    up = sum(1 for m in moved if m[2] < m[1])
    print(f"\nfirst required unit moved up for {up} probes, down for {len(moved) - up}")
    for pid, ra, rb, crossed, ta, tb in moved:
        if crossed or every:
            print(f"{pid:18} {ra:3} -> {rb:<3} {probes[pid]['intent'][:100]}\n{'':22}before {ta}  after {tb}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_shared = Path(os.environ.get("LID_SHARED", REPO.parent / "shared"))
    ap.add_argument("--shared", type=Path, default=default_shared, help="folder holding eval/ and eval-large/")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="rank every set into FOLDER (one rankings file per set)")
    d.add_argument("folder", type=Path)
    c = sub.add_parser("diff", help="compare two dump folders")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--all", action="store_true", help="list every rank change, not only those that cross place 1")
    a = ap.parse_args()
    if a.cmd == "dump":
        dump(a.folder, a.shared)
    else:
        diff(a.old, a.new, a.shared, a.all)


if __name__ == "__main__":
    main()
