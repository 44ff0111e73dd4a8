//! The concept lexicon behind the semantic signal of recall ranking (§21.3.3).
//!
//! Owns the embedded table `guest/data/lexicon.bin` (built from WordNet 3.1 by
//! `scripts/lexicon/build_lexicon.py`; WordNet licence in
//! `guest/data/LEXICON-LICENSE.txt`) and the lookup of a word's concepts:
//! synonym sets, derivational relatives and near hypernyms, each with a tier.
//! Inflected forms are reduced with WordNet's "morphy" detachment rules.
//!
//! The table is read in place, with no start-up parsing: a sparse index of
//! every 8th record's offset is binary-searched, then at most 8 records are
//! scanned, their front-coded words rebuilt on the way (layout `LIDLEX04`, in
//! the build script's doc comment).

static DATA: &[u8] = include_bytes!("../../data/lexicon.bin");
const MAGIC: &[u8] = b"LIDLEX04";
/// Records between two sparse index entries.
const SPARSE: usize = 8;

/// Strength of a concept link by tier: 0 main sense, 1 other sense or
/// derivation, 2 hypernym.
pub const TIER_STRENGTH: [f32; 3] = [1.0, 0.7, 0.45];

/// A concept id with the strength of its link to a word.
pub type Concept = (u32, f32);

fn u32_at(i: usize) -> Option<u32> {
    let b = DATA.get(i..i + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn valid() -> bool {
    DATA.get(..8) == Some(MAGIC)
}

fn sparse_count() -> usize {
    if valid() {
        u32_at(16).unwrap_or(0) as usize
    } else {
        0
    }
}

fn sparse(i: usize) -> Option<usize> {
    u32_at(20 + 4 * i).map(|v| v as usize)
}

/// A record's word is front-coded: `(prefix, suffix)`, the number of bytes it
/// shares with the previous record's word and the bytes that follow them.
fn word_parts(start: usize) -> Option<(usize, &'static [u8])> {
    let prefix = *DATA.get(start)? as usize;
    let len = *DATA.get(start + 1)? as usize;
    Some((prefix, DATA.get(start + 2..start + 2 + len)?))
}

/// Where a record's commonness byte is (just after its word).
fn body_at(start: usize) -> usize {
    word_parts(start).map_or(usize::MAX, |(_, suffix)| start + 2 + suffix.len())
}

fn skip_record(i: usize) -> Option<usize> {
    let mut p = body_at(i).checked_add(1)?;
    let n = *DATA.get(p)? as usize;
    p += 1;
    for _ in 0..n {
        loop {
            let b = *DATA.get(p)?;
            p += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
    }
    Some(p)
}

/// The whole word of a record the sparse index points at (prefix 0).
fn word_at(start: usize) -> &'static [u8] {
    word_parts(start).map_or(&[], |(_, suffix)| suffix)
}

fn commonness_at(start: usize) -> f32 {
    DATA.get(body_at(start)).copied().unwrap_or(0) as f32 / 20.0
}

/// The concepts of a record: its values are stored ascending, each as the
/// difference from the one before.
fn concepts_at(start: usize, out: &mut Vec<Concept>) {
    let Some(mut p) = body_at(start).checked_add(1) else { return };
    let n = DATA.get(p).copied().unwrap_or(0) as usize;
    p += 1;
    let mut value: u32 = 0;
    for _ in 0..n {
        let mut v: u32 = 0;
        let mut shift = 0;
        loop {
            let Some(&b) = DATA.get(p) else { return };
            p += 1;
            if shift < 32 {
                v |= ((b & 0x7F) as u32) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        value = value.wrapping_add(v);
        let tier = (value & 3) as usize;
        let strength = TIER_STRENGTH.get(tier).copied().unwrap_or(0.3);
        push_max(out, value >> 2, strength);
    }
}

fn push_max(out: &mut Vec<Concept>, id: u32, s: f32) {
    if let Some(e) = out.iter_mut().find(|e| e.0 == id) {
        if s > e.1 {
            e.1 = s;
        }
    } else {
        out.push((id, s));
    }
}

fn find(word: &[u8]) -> Option<usize> {
    let n = sparse_count();
    if n == 0 || word.is_empty() {
        return None;
    }
    // last sparse entry whose word is <= `word`
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if word_at(sparse(mid)?) <= word {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo == 0 {
        return None;
    }
    let mut p = sparse(lo - 1)?;
    // The words from there on, rebuilt from their shared prefixes; every word
    // is at most 255 + 255 bytes long.
    let mut buf = [0u8; 512];
    let mut len = 0;
    for _ in 0..SPARSE {
        if p >= DATA.len() {
            return None;
        }
        let (prefix, suffix) = word_parts(p)?;
        if prefix > len {
            return None;
        }
        len = prefix + suffix.len();
        buf.get_mut(prefix..len)?.copy_from_slice(suffix);
        match buf[..len].cmp(word) {
            std::cmp::Ordering::Equal => return Some(p),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => p = skip_record(p)?,
        }
    }
    None
}

/// Number of words in the embedded lexicon.
pub fn len() -> usize {
    if valid() {
        u32_at(8).unwrap_or(0) as usize
    } else {
        0
    }
}

const RULES: &[(&str, &str)] = &[
    ("s", ""),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
    ("es", "e"),
    ("es", ""),
    ("ed", "e"),
    ("ed", ""),
    ("ing", "e"),
    ("ing", ""),
    ("er", ""),
    ("est", ""),
    ("er", "e"),
    ("est", "e"),
    ("ly", ""),
    ("ise", "ize"),
    ("ised", "ize"),
    ("ising", "ize"),
    ("isation", "ization"),
    ("our", "or"),
];

/// What the lexicon knows of a word.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    /// Concepts, strongest link per concept, sorted by id.
    pub concepts: Vec<Concept>,
    /// ln(1 + occurrences in WordNet glosses) of the word (or its base form):
    /// how common, hence how unspecific, the word is. `None` if unknown.
    pub commonness: Option<f32>,
}

/// Concepts of a lowercase word (see [`lookup`]). Empty for unknown words.
pub fn concepts(word: &str) -> Vec<Concept> {
    lookup(word).concepts
}

/// Look a lowercase word up: its own entry and its base forms by WordNet's
/// morphy detachment rules, plus British spellings.
pub fn lookup(word: &str) -> Entry {
    let mut out = Vec::new();
    let mut common: Option<f32> = None;
    if word.len() < 2 || word.len() > 30 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Entry::default();
    }
    let mut tried: Vec<usize> = Vec::new();
    let mut look = |cand: &[u8], out: &mut Vec<Concept>| {
        if let Some(start) = find(cand) {
            if !tried.contains(&start) {
                tried.push(start);
                if common.is_none() {
                    common = Some(commonness_at(start));
                }
                concepts_at(start, out);
            }
        }
    };
    look(word.as_bytes(), &mut out);
    let mut buf: Vec<u8> = Vec::with_capacity(word.len() + 4);
    for (suf, rep) in RULES {
        let Some(base) = word.strip_suffix(suf) else { continue };
        if base.len() < 2 {
            continue;
        }
        buf.clear();
        buf.extend_from_slice(base.as_bytes());
        buf.extend_from_slice(rep.as_bytes());
        look(&buf, &mut out);
        // doubled final consonant: stopped -> stopp -> stop
        let l = buf.len();
        if rep.is_empty() && l >= 3 && buf[l - 1] == buf[l - 2] && !b"aeiouls".contains(&buf[l - 1]) {
            look(&buf[..l - 1], &mut out);
        }
    }
    out.sort_by_key(|a| a.0);
    Entry { concepts: out, commonness: common }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(a: &str, b: &str) -> bool {
        let ca = concepts(a);
        let cb = concepts(b);
        ca.iter().any(|x| cb.iter().any(|y| y.0 == x.0))
    }

    #[test]
    fn loads_and_links_synonyms() {
        assert!(len() > 10_000);
        assert!(shares("salary", "wage"));
        assert!(shares("hire", "employ"));
        assert!(shares("payments", "pay"));
        assert!(!shares("salary", "keyboard"));
        assert!(concepts("").is_empty());
        assert!(concepts("zzzzqqq").is_empty());
        assert!(concepts("ÄÖÜ").is_empty());
        let long = lookup("long").commonness.unwrap_or(0.0);
        let pw = lookup("passwords").commonness.unwrap_or(9.0);
        assert!(long > pw, "{long} {pw}");
        assert_eq!(lookup("zzzzqqq").commonness, None);
    }

    /// Every record, read in order with its front-coded word rebuilt, is the one
    /// `find` lands on; the words ascend; the sparse index points at every 8th
    /// record, each holding a whole word; the concept values ascend.
    #[test]
    fn every_word_is_found_at_its_record() {
        let mut p = 20 + 4 * sparse_count();
        let mut word: Vec<u8> = Vec::new();
        let mut count = 0;
        while p < DATA.len() {
            let (prefix, suffix) = word_parts(p).expect("record");
            if count % SPARSE == 0 {
                assert_eq!(sparse(count / SPARSE), Some(p));
                assert_eq!(prefix, 0);
            }
            let before = word.clone();
            word.truncate(prefix);
            word.extend_from_slice(suffix);
            assert!(word > before, "{:?} after {:?}", word, before);
            assert_eq!(find(&word), Some(p), "{}", String::from_utf8_lossy(&word));
            let mut concepts = Vec::new();
            concepts_at(p, &mut concepts);
            assert!(concepts.windows(2).all(|w| w[0].0 < w[1].0));
            p = skip_record(p).expect("next record");
            count += 1;
        }
        assert_eq!(p, DATA.len());
        assert_eq!(count, len());
        assert_eq!(find(b"aaaaaaaaaaaaaaaaaaaaaa"), None);
        assert_eq!(find(b"zzzzzzzzzzzz"), None);
    }

    /// A link's strength is its tier's ([`TIER_STRENGTH`]); a word is in its own main sense,
    /// so its strongest link is full. An inflected word whose base form the detachment rules
    /// reach (`payments` -> `payment`, `goes` -> `go`, `stopped` -> `stop`) links to each of the base's concepts at least as
    /// strongly as the base does (the strongest link per concept is kept). Commonness is
    /// ln(1 + occurrences), stored in twentieths of a byte: between 0 and 12.75.
    #[test]
    fn links_are_tiers_and_the_strongest_link_per_concept_is_kept() {
        for w in ["salary", "wage", "hire", "employ", "payment", "long"] {
            let e = lookup(w);
            assert!(e.concepts.iter().all(|c| TIER_STRENGTH.contains(&c.1)), "{w}: {:?}", e.concepts);
            assert!(e.concepts.iter().any(|c| c.1 == TIER_STRENGTH[0]), "{w}: {:?}", e.concepts);
            let c = e.commonness.expect("known");
            assert!((0.0..=12.75).contains(&c), "{w}: {c}");
        }
        for (w, base) in [("payments", "payment"), ("hired", "hire"), ("wages", "wage"), ("employed", "employ"), ("goes", "go"), ("stopped", "stop"), ("running", "run"), ("planned", "plan")] {
            let (cw, cb) = (concepts(w), concepts(base));
            for (id, s) in &cb {
                assert!(cw.iter().any(|(i, t)| i == id && t >= s), "{w} {base}: concept {id} at {s}");
            }
        }
        // words of two letters are looked up; single letters are not words to look up
        assert!(!concepts("go").is_empty());
        assert!(concepts("a").is_empty() && concepts("x").is_empty());
    }
}
