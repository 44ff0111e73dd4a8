#!/usr/bin/env python3
"""Compare lid's rankings with the hybrid baseline's, probe by probe.

Reads lid's rankings (one JSON line per probe, as `lid eval --rankings FILE` writes
them through the component, or `eval_native` natively to the file named by `LID_DUMP`:
{"id", "agent", "scores": [[unit, score], ...]}) and the baseline's (`hybrid.py
--dump`, the "hybrid" method's lines), keeps the probes with
an answer that both ranked, and prints for each group of sets: hit@1, hit@3 and MRR
of both, how many intents each alone puts right at 1, and a two-sided exact sign test
on those (the chance of a split at least that uneven if both were equally good).

    cat guest/data/probes-blind15.jsonl guest/data/probes-blind16.jsonl > /tmp/probes.jsonl
    target/release/lid eval --agents ../shared/eval/agents --probes /tmp/probes.jsonl \\
      --rankings /tmp/lid.jsonl
    /tmp/baseline-venv/bin/python scripts/baseline/hybrid.py --set blind15 --set blind16 \\
      --method hybrid --dump /tmp/base.jsonl
    python3 scripts/baseline/compare.py /tmp/lid.jsonl /tmp/base.jsonl blind15,blind16

Groups are comma-separated set names (an id's part before its last '-'); without one,
every set both files share, pooled. Standard library only.
"""
import json
import math
import sys


def load(path, method=None):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if method and row.get("method", method) != method:
                continue
            out[row["id"]] = row
    return out


def names(row):
    return [u for u, _ in (row.get("scores") or row.get("ranked") or [])]


def sign_test(a, b):
    """Two-sided exact binomial test of a against b successes at p = 1/2."""
    n = a + b
    if n == 0:
        return 1.0
    k = min(a, b)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    lid, base = load(argv[1]), load(argv[2], "hybrid")
    groups = [g.split(",") for g in argv[3:]] or [None]
    for group in groups:
        n = lid1 = base1 = lid_only = base_only = lid3 = base3 = 0
        lid_rr = base_rr = 0.0
        for pid, b in sorted(base.items()):
            req = b.get("required_units") or []
            if not req or pid not in lid:
                continue
            if group and pid.rsplit("-", 1)[0] not in group:
                continue
            ln, bn = names(lid[pid]), names(b)
            if not all(u in ln and u in bn for u in req):
                continue
            a, c = ln[0] in req, bn[0] in req
            n += 1
            lid1 += a
            base1 += c
            lid_only += a and not c
            base_only += c and not a
            lid3 += all(ln.index(u) < 3 for u in req)
            base3 += all(bn.index(u) < 3 for u in req)
            lid_rr += 1 / (1 + min(ln.index(u) for u in req))
            base_rr += 1 / (1 + min(bn.index(u) for u in req))
        label = ",".join(group) if group else "all"
        if n == 0:
            print(f"{label}: no probe with an answer in both files")
            continue
        print(
            f"{label}: {n} intents  hit@1 lid {lid1 / n:.3f} baseline {base1 / n:.3f}"
            f"  (lid alone {lid_only}, baseline alone {base_only}, sign test p = {sign_test(lid_only, base_only):.3f})"
            f"  hit@3 {lid3 / n:.3f} / {base3 / n:.3f}  MRR {lid_rr / n:.3f} / {base_rr / n:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
