//! Per-unit statistics for recall ranking (§21.3.3): the inverted index.
//!
//! Owns everything [`super::Ranker::build`] derives from the units once, so that
//! ranking an intent only walks the postings of its words:
//! field term frequencies and lengths (BM25F), each field's content words in order
//! (the phrase signal: adjacent pairs, [`Index::pair_postings`]), concept postings from the
//! lexicon (semantic signal), a character-trigram index over the vocabulary
//! (morphology and typos), and the unit link graph plus task-type triggers
//! (graph signal). All of it is `serde`-serialisable (postcard), so it can be
//! computed at manifest publish time and shipped as a precomputed index; its tables are
//! [`Column`]s, read in place from the cached blob a recall decodes ([`super::column`]).
//! Hash maps are used only for lookups during the build, never iterated, so
//! nothing depends on hash iteration order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

pub use super::column::{flat, Column, Flat};
use super::column::{copy_records, le4};
use super::lexicon;
use super::stem::stem;
use super::text::{each_plain_token, each_word, is_stopword, words};
use super::UnitDoc;

/// FNV-1a: a fast deterministic hasher for the build's lookup tables.
#[derive(Default, Clone, Copy)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// Fields of a unit, in index order.
pub const NF: usize = 5;
pub const F_NAME: usize = 0;
pub const F_DESC: usize = 1;
pub const F_INTENTS: usize = 2;
pub const F_KEYWORDS: usize = 3;
pub const F_BODY: usize = 4;

/// BM25F field weights: name, description, trigger intents, keywords, body.
pub const FIELD_WEIGHT: [f32; NF] = [3.0, 2.0, 2.0, 2.5, 1.0];
/// BM25F per-field length normalisation.
pub const FIELD_B: [f32; NF] = [0.3, 0.5, 0.5, 0.3, 0.75];
/// BM25 term-frequency saturation, in the lexical signal and in a word's match strength in
/// the semantic one ([`sat`]). 1.5 (`lid-rank-14`; 1.2 before): a unit that names a word
/// several times, or in its name and keywords, is told apart from one that mentions it
/// once, as instruction units are long and their key words recur. A plateau from 1.4 to
/// 1.6 on the agents' probe sets; from 1.6 the dev set loses a probe and the packs lose.
pub const K1: f32 = 1.5;

/// A corpus of at least this many units (a knowledge pack; an agent's manifest holds a few
/// dozen at most) also indexes every content word in the exact form it is written in, as a
/// term of its own ([`surface_term`]): the ranker's *surface* signal (`lid-rank-15`), a
/// second, unstemmed BM25 view. Among hundreds of units, many of them near-identical
/// sections, the word forms an intent shares with a unit tell the right one apart where
/// their stems do not ("rejecting samples … out of bounds" against "rejected", "bound").
/// Smaller corpora have no surface terms: their indexes and rankings are as before.
pub const SURFACE_MIN_UNITS: usize = 50;

/// The term under which a content word's exact form is indexed ([`SURFACE_MIN_UNITS`]):
/// the word behind `=`, which no stem contains.
pub fn surface_term(word: &str) -> String {
    format!("={word}")
}

/// The term under which a token of the plain view is indexed (`lid-rank-19`, in every
/// corpus): the token behind `~`, which no stem or surface term contains. Its postings
/// hold plain BM25's term part (`tf (k1 + 1) / (tf + k1 (1 - b + b len / avg_len))`, with
/// [`PLAIN_K1`], [`PLAIN_B`] and the unit's length in plain tokens), so the ranker's vote
/// sums `idf × w` ([`super::text::each_plain_token`] says what a token is).
pub fn plain_term(token: &str) -> String {
    format!("~{token}")
}

/// BM25's textbook constants for the plain view: one field (every field of the unit, in
/// one), so none of the ranker's own field weights.
pub const PLAIN_K1: f32 = 1.2;
pub const PLAIN_B: f32 = 0.75;

impl Flat for (u32, f32) {
    const SIZE: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
        out.extend_from_slice(&self.1.to_le_bytes());
    }
    #[inline(always)]
    fn get(b: &[u8]) -> Self {
        (u32::from_le_bytes(le4(b, 0)), f32::from_le_bytes(le4(b, 4)))
    }
    fn get_all(b: &[u8]) -> Vec<Self> {
        b.as_chunks::<8>().0.iter().map(|c| (u32::from_le_bytes([c[0], c[1], c[2], c[3]]), f32::from_le_bytes([c[4], c[5], c[6], c[7]]))).collect()
    }
}

impl Flat for Posting {
    const SIZE: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        (self.doc, self.w).put(out)
    }
    #[inline(always)]
    fn get(b: &[u8]) -> Self {
        let (doc, w) = <(u32, f32)>::get(b);
        Posting { doc, w }
    }
    fn get_all(b: &[u8]) -> Vec<Self> {
        copy_records(b)
    }
}

/// The range of item `i` of a flat table whose item `i` is `starts[i]..starts[i + 1]`
/// (`None` when `i` is out of range).
pub fn span(starts: &[u32], i: usize) -> Option<std::ops::Range<usize>> {
    Some(*starts.get(i)? as usize..*starts.get(i.checked_add(1)?)? as usize)
}

/// Whether `starts` are the offsets of a flat table of `items` items over `len` elements,
/// as [`span`] reads them: `items + 1` of them, from 0, ascending, ending at `len`.
pub fn offsets_fit(starts: &[u32], items: usize, len: usize) -> bool {
    Some(starts.len()) == items.checked_add(1) && starts.first() == Some(&0) && starts.last().is_some_and(|&e| e as usize == len) && starts.is_sorted()
}

/// Item `i` of a flat table of `items` ([`span`]; empty when out of range).
fn nth<'a, T>(items: &'a [T], starts: &[u32], i: usize) -> &'a [T] {
    span(starts, i).and_then(|r| items.get(r)).unwrap_or(&[])
}

/// Item `i` of a flat table of strings held as UTF-8 bytes ([`span`]; "" when out of
/// range or not UTF-8). Each item is checked as it is read, not the whole table as it is
/// decoded: a recall reads a few of a cached index's thousands of terms.
fn nth_str<'a>(blob: &'a [u8], starts: &[u32], i: usize) -> &'a str {
    std::str::from_utf8(nth(blob, starts, i)).unwrap_or("")
}

/// Where `key` is in a sorted table of `n` strings (`at(i)` is string `i`'s bytes: UTF-8
/// sorts as its bytes do, so the search checks no string).
fn find_sorted<'a>(n: usize, at: impl Fn(usize) -> &'a [u8], key: &[u8]) -> Option<usize> {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match at(mid).cmp(key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// One word of a doc while its index is built: (interim stem id, field, surface id,
/// compound, position among the doc's content words or `u32::MAX` for a compound).
type Occurrence = (u32, u8, u32, bool, u32);

/// Saturating map of a BM25F pseudo term frequency into [0, 1).
pub fn sat(w: f32) -> f32 {
    if w <= 0.0 {
        0.0
    } else {
        w / (w + K1)
    }
}

/// One unit's occurrences of one term, as ranking needs them (also a unit's strength
/// for a concept). `repr(C)`, no padding: in memory exactly its little-endian wire bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Posting {
    pub doc: u32,
    /// BM25F pseudo frequency: sum over fields of weight * tf / length norm.
    pub w: f32,
}

/// A posting while the index is built: also the raw term frequency per field (the link
/// graph needs the body count; ranking does not, so it is not kept).
#[derive(Debug, Clone)]
struct BuildPosting {
    doc: u32,
    tf: [u16; NF],
    w: f32,
}

/// The ranker's index over one agent's units.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Index {
    pub n_docs: u32,
    /// Unit names, concatenated: doc `d`'s is `name_blob[name_start[d]..name_start[d + 1]]`
    /// (one allocation however many units, as for terms).
    pub name_blob: Column<u8>,
    pub name_start: Column<u32>,
    /// Per doc: its place in name order (by doc among equal names), so ranking breaks a
    /// score tie with one integer comparison instead of two names, and takes the units
    /// no signal reached in name order without comparing names at all.
    pub name_rank: Column<u32>,
    /// All stems, sorted, concatenated: term id `t` is
    /// `term_blob[term_start[t]..term_start[t + 1]]` (so a stem's id is found by binary
    /// search, and a cached index decodes without one allocation per term).
    pub term_blob: Column<u8>,
    pub term_start: Column<u32>,
    /// Term id `t` -> postings `posting_list[posting_start[t]..posting_start[t + 1]]`,
    /// ordered by doc (flat, so a cached index decodes with two allocations, not one per term).
    pub posting_start: Column<u32>,
    pub posting_list: Column<Posting>,
    /// Concept id -> the vocabulary terms that express it, as `Posting { doc: term id,
    /// w: strength in [0, 1] }` in term order: the strongest link of any surface form of
    /// the term (a word and its inflections) to the concept. A unit's strength for a
    /// concept is then that of its term, scaled by the term's saturated frequency in the
    /// unit ([`sat`]), read from the term's postings at query time: a table over the
    /// vocabulary, not one row per unit and concept (which was half of a pack's index).
    pub concepts: Csr<Posting>,
    /// Packed padded character trigram -> term ids (alphabetic terms of 4+ chars).
    pub trigrams: Csr<u32>,
    /// Term id -> number of distinct trigrams (0 for terms not fuzzy-matched).
    pub term_grams: Column<u8>,
    /// Per doc: field lengths in words.
    pub field_len: Column<[u32; NF]>,
    /// Positional postings: posting `k` (of `posting_list`) occurs at the positions
    /// `pos_list[pos_start[k]..pos_start[k + 1]]` of its doc's content words (compounds
    /// and stopwords skipped), numbered field by field in text order (doc `d`'s field
    /// `f` holds the next `field_len[d][f]` of them). The phrase signal reads adjacent
    /// positions of two terms here ([`Index::pair_postings`]) instead of indexing every
    /// pair as a term (which took most of a large corpus' index), and a term's positions
    /// travel with its postings, so a segmented index ([`Index::split`]) fetches only
    /// the query's.
    pub pos_start: Column<u32>,
    pub pos_list: Column<u32>,
    /// Empty for an index that holds its postings; for the head of a segmented index
    /// ([`Index::split`]), the first term id of each postings segment, then the term
    /// count: segment `s` holds terms `segments[s]..segments[s + 1]`.
    pub segments: Column<u32>,
    /// The segments installed into a split head ([`Index::install`]), by number,
    /// ascending: its postings are read from them where they are, not copied into one
    /// table (`None` for an index that was never split, or not installed yet).
    #[serde(skip)]
    pub installed: Option<Vec<(u32, Segment)>>,
    pub avg_len: [f32; NF],
    /// Per doc: linked units as `Posting { doc, w: strength }`, undirected, strongest
    /// first: doc `d`'s are `link_list[link_start[d]..link_start[d + 1]]`.
    pub link_start: Column<u32>,
    pub link_list: Column<Posting>,
    /// Wake reason -> the docs that list it in `load_triggers.task_types` or
    /// `required_by_task_types` (a handful of rows, however many units).
    pub triggers: Triggers,
}

/// Task types and the docs each triggers, flat: reason `r` (sorted) is
/// `blob[start[r]..start[r + 1]]`, its docs (ascending) `docs[doc_start[r]..doc_start[r + 1]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Triggers {
    pub blob: Column<u8>,
    pub start: Column<u32>,
    pub doc_start: Column<u32>,
    pub docs: Column<u32>,
}

impl Default for Triggers {
    fn default() -> Self {
        Triggers { blob: Column::default(), start: vec![0].into(), doc_start: vec![0].into(), docs: Column::default() }
    }
}

impl Triggers {
    fn build(units: &[UnitDoc<'_>]) -> Triggers {
        let mut by: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
        for (d, u) in units.iter().enumerate() {
            for t in u.task_types.iter().chain(u.required_by_task_types) {
                by.entry(t.as_str()).or_default().insert(d as u32);
            }
        }
        let (mut blob, mut start, mut doc_start, mut all) = (String::new(), vec![0], vec![0], Vec::new());
        for (reason, docs) in by {
            blob.push_str(reason);
            start.push(blob.len() as u32);
            all.extend(docs);
            doc_start.push(all.len() as u32);
        }
        Triggers { blob: blob.into_bytes().into(), start: start.into(), doc_start: doc_start.into(), docs: all.into() }
    }

    /// The docs a wake reason triggers (ascending; empty for an unknown reason).
    pub fn docs(&self, reason: &str) -> &[u32] {
        let n = self.start.len().saturating_sub(1);
        match find_sorted(n, |r| nth(&self.blob, &self.start, r), reason.as_bytes()) {
            Some(r) => nth(&self.docs, &self.doc_start, r),
            None => &[],
        }
    }
}

/// A compressed sparse map: sorted keys, each with a slice of values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(bound(serialize = "T: Flat + bytemuck::Pod", deserialize = "T: Flat + bytemuck::Pod"))]
pub struct Csr<T: Flat + bytemuck::Pod> {
    pub keys: Column<u64>,
    /// `offsets[i]..offsets[i + 1]` are the values of `keys[i]`.
    pub offsets: Column<u32>,
    pub values: Column<T>,
}

impl<T: Flat + bytemuck::Pod> Csr<T> {
    /// Build from (key, value) pairs; pairs are sorted by key, stably.
    pub fn from_pairs(mut pairs: Vec<(u64, T)>) -> Csr<T> {
        pairs.sort_by_key(|p| p.0);
        let (mut keys, mut offsets, mut values) = (Vec::new(), vec![0], Vec::with_capacity(pairs.len()));
        for (k, v) in pairs {
            if keys.last() != Some(&k) {
                if !keys.is_empty() {
                    offsets.push(values.len() as u32);
                }
                keys.push(k);
            }
            values.push(v);
        }
        if !keys.is_empty() {
            offsets.push(values.len() as u32);
        }
        Csr { keys: keys.into(), offsets: offsets.into(), values: values.into() }
    }

    /// Values of a key (empty if absent).
    pub fn get(&self, key: u64) -> &[T] {
        let Ok(i) = self.keys.binary_search(&key) else { return &[] };
        let a = self.offsets.get(i).copied().unwrap_or(0) as usize;
        let b = self.offsets.get(i + 1).copied().unwrap_or(0) as usize;
        self.values.get(a..b).unwrap_or(&[])
    }
}

/// Padded trigrams of a term, packed into integers, sorted and deduplicated.
pub fn trigrams(term: &str) -> Vec<u64> {
    let mut cs: Vec<u64> = Vec::with_capacity(term.len() + 2);
    cs.push('^' as u64);
    cs.extend(term.chars().map(|c| c as u64));
    cs.push('$' as u64);
    let mut out: Vec<u64> = cs.windows(3).map(|w| (w[0] << 42) | (w[1] << 21) | w[2]).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether a term takes part in fuzzy (trigram) matching.
pub fn fuzzy_term(t: &str) -> bool {
    super::text::char_len(t) >= 4 && t.chars().all(|c| c.is_alphabetic())
}

/// Content words of a text with their stems: stopwords dropped; compound
/// (joined identifier) words flagged.
pub fn content_words(text: &str) -> Vec<(String, String, bool)> {
    words(text)
        .into_iter()
        .filter(|w| w.compound || !is_stopword(&w.text))
        .map(|w| {
            let s = stem(&w.text);
            (w.text, s, w.compound)
        })
        .collect()
}

impl Index {
    /// Whether a cached index is one built for exactly these unit names: its per-unit
    /// tables have one row per unit and its offset tables the right lengths. Cheap (no
    /// pass over postings, words or terms), and enough for ranking, which reads every
    /// table through bounds-checked lookups (a bad offset or id reads as empty, never
    /// panics). Cached indexes are written only by the engine, under a key that
    /// fingerprints what they were built from, so no call walks every posting, term and
    /// word to check them again (that walk was a fifth of a 300-unit pack's recall in
    /// the component).
    pub fn fits(&self, names: &[&str]) -> bool {
        let n = self.n_docs as usize;
        n == names.len() && self.fits_shape() && self.has_names() && (0..n).map(|d| self.name(d)).eq(names.iter().copied())
    }

    /// [`Index::fits`] for an index cached without its names ([`Index::without_names`])
    /// beside the `n` names it was built for.
    pub fn fits_unnamed(&self, n: usize) -> bool {
        n == self.n_docs as usize && self.fits_shape() && !self.has_names()
    }

    /// The index without its units' names, to be cached beside a table that holds them
    /// (a prepared corpus's entry table): its rankings then name no unit (the caller
    /// names them), and a recall neither decodes nor compares the names twice (that
    /// comparison was a fifteenth of a 1,000-unit recall in the component).
    pub fn without_names(mut self) -> Index {
        self.name_blob = Column::default();
        self.name_start = Column::default();
        self
    }

    /// Whether the index holds its units' names (not [`Index::without_names`]).
    pub fn has_names(&self) -> bool {
        !self.name_start.is_empty()
    }

    /// [`Index::fits`] without the names: for an index whose names are the entries'
    /// (a pack opened from its index names its units by the index).
    pub fn fits_shape(&self) -> bool {
        let n = self.n_docs as usize;
        (self.name_start.len() == n + 1 || (self.name_start.is_empty() && self.name_blob.is_empty()))
            && self.name_rank.len() == n
            && ((self.posting_start.len() == self.term_count() + 1 && self.pos_start.len() == self.posting_list.len() + 1) || self.installed.is_some())
            && self.term_grams.len() == self.term_count()
            && self.field_len.len() == n
            && self.avg_len.iter().all(|a| a.is_finite() && *a > 0.0)
            && self.link_start.len() == n + 1
            && !self.triggers.start.is_empty()
            && self.triggers.start.len() == self.triggers.doc_start.len()
    }

    /// The name of doc `d` ("" for an unknown doc).
    pub fn name(&self, d: usize) -> &str {
        nth_str(&self.name_blob, &self.name_start, d)
    }

    /// Doc `d`'s place in name order (past every doc's for an unknown doc).
    pub fn name_place(&self, d: usize) -> u32 {
        self.name_rank.get(d).copied().unwrap_or(u32::MAX)
    }

    /// The units linked to doc `d` (`Posting { doc, w: strength }`; empty for an unknown doc).
    pub fn links(&self, d: usize) -> &[Posting] {
        nth(&self.link_list, &self.link_start, d)
    }

    /// The term id of a stem, if any unit contains it.
    pub fn term_id(&self, stem: &str) -> Option<u32> {
        find_sorted(self.term_count(), |t| nth(&self.term_blob, &self.term_start, t), stem.as_bytes()).map(|t| t as u32)
    }

    /// Number of distinct terms.
    pub fn term_count(&self) -> usize {
        self.term_start.len().saturating_sub(1)
    }

    /// The stem of a term id ("" for an unknown id).
    pub fn term(&self, id: u32) -> &str {
        nth_str(&self.term_blob, &self.term_start, id as usize)
    }

    /// The stem of a term id as bytes, not checked as UTF-8 (empty for an unknown id).
    pub fn term_bytes(&self, id: u32) -> &[u8] {
        nth(&self.term_blob, &self.term_start, id as usize)
    }

    pub fn build(units: &[UnitDoc<'_>]) -> Index {
        let n = units.len();
        // 1. tokenise every field once; intern surface words and stems
        let mut surf_ids: FnvMap<String, u32> = FnvMap::default();
        // per surface: (surface, interim stem id, stopword, interim id of its surface term:
        // u32::MAX until it has one, see SURFACE_MIN_UNITS)
        let mut surfs: Vec<(String, u32, bool, u32)> = Vec::new();
        let surfaces = n >= SURFACE_MIN_UNITS;
        let mut stem_ids: FnvMap<String, u32> = FnvMap::default();
        let mut stems: Vec<String> = Vec::new();
        // per doc: (interim stem id, field, surface id, compound, position among the
        // doc's content words; u32::MAX for a compound)
        let mut occ: Vec<Vec<Occurrence>> = Vec::with_capacity(n);
        let mut field_len: Vec<[u32; NF]> = Vec::with_capacity(n);
        // the plain view: interim term id per token, and each doc's length in tokens
        let mut plain_ids: FnvMap<String, u32> = FnvMap::default();
        let mut plain_len: Vec<u32> = Vec::with_capacity(n);
        let mut joinbuf = String::new();
        for u in units {
            let mut lens = [0u32; NF];
            let mut pos = 0u32;
            let mut o: Vec<Occurrence> = Vec::new();
            #[allow(clippy::needless_range_loop)]
            for f in 0..NF {
                let list: &[String] = match f {
                    F_INTENTS => u.intents,
                    F_KEYWORDS => u.keywords,
                    _ => &[],
                };
                let text: &str = match f {
                    F_NAME => u.name,
                    F_DESC => u.description,
                    F_BODY => u.body,
                    _ => {
                        joinbuf.clear();
                        for (k, s) in list.iter().enumerate() {
                            if k > 0 {
                                joinbuf.push_str(" . ");
                            }
                            joinbuf.push_str(s);
                        }
                        &joinbuf
                    }
                };
                each_word(text, |w, compound, _| {
                    let sid = match surf_ids.get(w) {
                        Some(&id) => id,
                        None => {
                            let stid = intern(&mut stem_ids, &mut stems, stem(w));
                            let id = surfs.len() as u32;
                            surfs.push((w.to_string(), stid, is_stopword(w), u32::MAX));
                            surf_ids.insert(w.to_string(), id);
                            id
                        }
                    };
                    let (_, stid, stop, _) = surfs[sid as usize];
                    if stop && !compound {
                        return;
                    }
                    // the word's exact form, as a term of its own (counted like a joined
                    // identifier's whole: no position, no length, no concepts)
                    if surfaces && !compound {
                        let mut sfid = surfs[sid as usize].3;
                        if sfid == u32::MAX {
                            sfid = intern(&mut stem_ids, &mut stems, surface_term(w));
                            surfs[sid as usize].3 = sfid;
                        }
                        o.push((sfid, f as u8, sid, true, u32::MAX));
                    }
                    // consecutive content words (stopwords skipped) are numbered: proximity
                    // for the ranker's phrase signal
                    let at = if compound { u32::MAX } else { pos };
                    if !compound {
                        lens[f] += 1;
                        pos += 1;
                    }
                    o.push((stid, f as u8, sid, compound, at));
                });
            }
            // the plain view: every field's tokens as terms of their own (counted like a
            // joined identifier's whole: no position, no field length, no concepts)
            let mut plen = 0u32;
            let texts = [u.name, u.description].into_iter().chain(u.intents.iter().map(String::as_str)).chain(u.keywords.iter().map(String::as_str)).chain([u.body]);
            for text in texts {
                each_plain_token(text, |tok| {
                    let id = match plain_ids.get(tok) {
                        Some(&x) => x,
                        None => {
                            let x = intern(&mut stem_ids, &mut stems, plain_term(tok));
                            plain_ids.insert(tok.to_string(), x);
                            x
                        }
                    };
                    o.push((id, F_BODY as u8, 0, true, u32::MAX));
                    plen += 1;
                });
            }
            occ.push(o);
            field_len.push(lens);
            plain_len.push(plen);
        }
        let plain_avg = if n == 0 { 1.0 } else { (plain_len.iter().map(|&l| l as u64).sum::<u64>() as f32 / n as f32).max(1.0) };
        let mut avg_len = [0f32; NF];
        for f in 0..NF {
            let tot: u64 = field_len.iter().map(|l| l[f] as u64).sum();
            avg_len[f] = if n == 0 { 1.0 } else { (tot as f32 / n as f32).max(1.0) };
        }

        // 2. term ids in sorted stem order (only stems that occur as content words)
        let mut used = vec![false; stems.len()];
        for o in &occ {
            for &(st, ..) in o {
                used[st as usize] = true;
            }
        }
        let mut order: Vec<u32> = (0..stems.len() as u32).filter(|&i| used[i as usize]).collect();
        order.sort_by(|a, b| stems[*a as usize].cmp(&stems[*b as usize]));
        let mut final_id = vec![u32::MAX; stems.len()];
        for (k, &i) in order.iter().enumerate() {
            final_id[i as usize] = k as u32;
        }
        let term_text: Vec<String> = order.iter().map(|&i| stems[i as usize].clone()).collect();
        let terms: BTreeMap<String, u32> = term_text.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let mut postings: Vec<Vec<BuildPosting>> = vec![Vec::new(); term_text.len()];
        // per term, per posting: the positions of its content-word occurrences
        let mut positions: Vec<Vec<Vec<u32>>> = vec![Vec::new(); term_text.len()];
        // which surface forms each term has among the units' content words
        let mut term_surfs: Vec<(u32, u32)> = Vec::new();
        for (d, o) in occ.iter_mut().enumerate() {
            for e in o.iter_mut() {
                e.0 = final_id[e.0 as usize];
            }
            o.sort_unstable();
            // term frequencies per field, postings
            let mut k = 0;
            while k < o.len() {
                let t = o[k].0;
                let mut counts = [0u16; NF];
                let mut at: Vec<u32> = Vec::new();
                while k < o.len() && o[k].0 == t {
                    let f = o[k].1 as usize;
                    counts[f] = counts[f].saturating_add(1);
                    if !o[k].3 {
                        term_surfs.push((t, o[k].2));
                        at.push(o[k].4);
                    }
                    k += 1;
                }
                at.sort_unstable();
                let w = if term_text.get(t as usize).is_some_and(|x| x.starts_with('~')) {
                    let tf = counts[F_BODY] as f32;
                    let len = plain_len.get(d).copied().unwrap_or(0) as f32;
                    tf * (PLAIN_K1 + 1.0) / (tf + PLAIN_K1 * (1.0 - PLAIN_B + PLAIN_B * len / plain_avg))
                } else {
                    pseudo_tf(&counts, &field_len[d], &avg_len)
                };
                if let (Some(pl), Some(ps)) = (postings.get_mut(t as usize), positions.get_mut(t as usize)) {
                    pl.push(BuildPosting { doc: d as u32, tf: counts, w });
                    ps.push(at);
                }
            }
        }
        // 3. concepts over the vocabulary: per (concept, term), the strongest link of any
        // of the term's surface forms
        term_surfs.sort_unstable();
        term_surfs.dedup();
        let mut concept_terms: Vec<(u64, u32, f32)> = Vec::new();
        for &(t, sid) in &term_surfs {
            for (c, s) in lexicon::concepts(&surfs[sid as usize].0) {
                concept_terms.push((c as u64, t, s));
            }
        }
        concept_terms.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(b.2.total_cmp(&a.2)));
        concept_terms.dedup_by(|next, kept| next.0 == kept.0 && next.1 == kept.1);
        let concept_pairs: Vec<(u64, Posting)> = concept_terms.into_iter().map(|(c, t, s)| (c, Posting { doc: t, w: s })).collect();

        // 4. trigram index over the vocabulary
        let mut gram_pairs: Vec<(u64, u32)> = Vec::new();
        let mut term_grams = vec![0u8; term_text.len()];
        for (id, t) in term_text.iter().enumerate() {
            if fuzzy_term(t) {
                let g = trigrams(t);
                term_grams[id] = g.len().min(255) as u8;
                gram_pairs.extend(g.into_iter().map(|g| (g, id as u32)));
            }
        }

        let mut term_blob = String::with_capacity(term_text.iter().map(String::len).sum());
        let mut term_start = Vec::with_capacity(term_text.len() + 1);
        term_start.push(0u32);
        for t in &term_text {
            term_blob.push_str(t);
            term_start.push(term_blob.len() as u32);
        }

        // 5. link graph: unit u mentions unit d (d's whole name, or most of
        // d's distinctive name and keyword terms) in its body.
        let links = build_links(units, &terms, &postings, n);

        let mut posting_start = Vec::with_capacity(postings.len() + 1);
        posting_start.push(0u32);
        let mut posting_list = Vec::with_capacity(postings.iter().map(Vec::len).sum());
        let mut pos_start = Vec::with_capacity(posting_list.capacity() + 1);
        pos_start.push(0u32);
        let mut pos_list = Vec::new();
        for (pl, ps) in postings.into_iter().zip(positions) {
            posting_list.extend(pl.into_iter().map(|p| Posting { doc: p.doc, w: p.w }));
            posting_start.push(posting_list.len() as u32);
            for at in ps {
                pos_list.extend(at);
                pos_start.push(pos_list.len() as u32);
            }
        }

        let mut name_blob = String::new();
        let mut name_start = Vec::with_capacity(n + 1);
        name_start.push(0u32);
        for u in units {
            name_blob.push_str(u.name);
            name_start.push(name_blob.len() as u32);
        }
        let mut by_name: Vec<usize> = (0..n).collect();
        by_name.sort_by(|&a, &b| units[a].name.cmp(units[b].name).then(a.cmp(&b)));
        let mut name_rank = vec![0u32; n];
        for (r, &d) in by_name.iter().enumerate() {
            name_rank[d] = r as u32;
        }
        let mut link_start = Vec::with_capacity(n + 1);
        link_start.push(0u32);
        let mut link_list = Vec::new();
        for l in links {
            link_list.extend(l.into_iter().map(|(doc, w)| Posting { doc, w }));
            link_start.push(link_list.len() as u32);
        }

        Index {
            n_docs: n as u32,
            name_blob: name_blob.into_bytes().into(),
            name_start: name_start.into(),
            name_rank: name_rank.into(),
            term_blob: term_blob.into_bytes().into(),
            term_start: term_start.into(),
            posting_start: posting_start.into(),
            posting_list: posting_list.into(),
            concepts: Csr::from_pairs(concept_pairs),
            trigrams: Csr::from_pairs(gram_pairs),
            term_grams: term_grams.into(),
            field_len: field_len.into(),
            pos_start: pos_start.into(),
            pos_list: pos_list.into(),
            segments: Column::default(),
            installed: None,
            avg_len,
            link_start: link_start.into(),
            link_list: link_list.into(),
            triggers: Triggers::build(units),
        }
    }

    /// The postings of a term id (empty for an unknown id).
    pub fn postings(&self, id: u32) -> &[Posting] {
        self.term_view(id).0
    }

    /// Term `id`'s postings and where their positions are: posting `i`'s positions are
    /// `nth(pos, pos_start, i)` (all empty for an unknown id, or one whose segment was
    /// not installed).
    fn term_view(&self, id: u32) -> (&[Posting], &[u32], &[u32]) {
        let (postings, starts, pos_start, pos, i) = match &self.installed {
            None => (&self.posting_list[..], &self.posting_start[..], &self.pos_start[..], &self.pos_list[..], id as usize),
            Some(segs) => match self.segment_of(segs, id) {
                Some((seg, i)) => (&seg.postings[..], &seg.starts[..], &seg.pos_start[..], &seg.pos[..], i),
                None => return (&[], &[], &[]),
            },
        };
        span(starts, i).and_then(|r| Some((postings.get(r.clone())?, pos_start.get(r.start..=r.end)?, pos))).unwrap_or((&[], &[], &[]))
    }

    /// The installed segment holding term `id`, and the term's place in it.
    fn segment_of<'a>(&self, segs: &'a [(u32, Segment)], id: u32) -> Option<(&'a Segment, usize)> {
        let s = self.segments.partition_point(|&f| f <= id).checked_sub(1)? as u32;
        let seg = &segs.get(segs.binary_search_by_key(&s, |x| x.0).ok()?)?.1;
        Some((seg, id.checked_sub(seg.first)? as usize))
    }

    /// Document frequency of a term id.
    pub fn df(&self, id: u32) -> usize {
        self.postings(id).len()
    }

    /// Where term `id`'s postings start in `posting_list`.
    fn posting_base(&self, id: u32) -> usize {
        self.posting_start.get(id as usize).copied().unwrap_or(0) as usize
    }

    /// The postings of the unordered pair of distinct terms `a` and `b` as adjacent
    /// content words of one field (the phrase signal), into `out` in doc order: per
    /// unit, the BM25F pseudo frequency of the pair's occurrences, as for a word. Only
    /// units with both terms are read, and of them only the two terms' positions.
    pub fn pair_postings(&self, a: u32, b: u32, out: &mut Vec<Posting>) {
        out.clear();
        if a == b {
            return;
        }
        let ((pa, sa, qa), (pb, sb, qb)) = (self.term_view(a), self.term_view(b));
        let (mut i, mut j) = (0, 0);
        while let (Some(x), Some(y)) = (pa.get(i), pb.get(j)) {
            if x.doc < y.doc {
                i += 1;
                continue;
            }
            if y.doc < x.doc {
                j += 1;
                continue;
            }
            let d = x.doc as usize;
            let (xa, xb) = (nth(qa, sa, i), nth(qb, sb, j));
            i += 1;
            j += 1;
            let Some(&lens) = self.field_len.get(d) else { continue };
            // each field's end, in the doc's word numbering
            let mut ends = [0u32; NF];
            let mut at = 0u32;
            for f in 0..NF {
                at = at.saturating_add(lens[f]);
                ends[f] = at;
            }
            let mut counts = [0u16; NF];
            adjacent(xa, xb, &ends, &mut counts);
            adjacent(xb, xa, &ends, &mut counts);
            if counts.iter().any(|&c| c > 0) {
                out.push(Posting { doc: x.doc, w: pseudo_tf(&counts, &lens, &self.avg_len) });
            }
        }
    }
}

/// One postings segment of a split index ([`Index::split`]): terms
/// `first..first + starts.len() - 1`, their postings and positions, each table's offsets
/// relative to the segment, so an installed segment is read where it is
/// ([`Index::install`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub first: u32,
    /// Term `first + i`'s postings are `postings[starts[i]..starts[i + 1]]`.
    pub starts: Column<u32>,
    pub postings: Column<Posting>,
    /// Posting `k`'s positions are `pos[pos_start[k]..pos_start[k + 1]]`.
    pub pos_start: Column<u32>,
    pub pos: Column<u32>,
}

impl Segment {
    /// Encode for the host's cache (postcard, its tables aligned: [`super::column::encode`]).
    pub fn encode(&self) -> Option<Vec<u8>> {
        super::column::encode(self)
    }

    /// Decode a cached segment, its tables read in place in `blob`
    /// ([`super::column::decode`]); `None` for bytes that are not one. Whether it fits
    /// the head is [`Index::install`]'s to check.
    pub fn decode(blob: Vec<u8>) -> Option<Segment> {
        super::column::decode(blob)
    }

    /// Whether the segment holds `terms` terms and its offsets are consistent: each
    /// table starts at 0, ascends and ends at the end of what it indexes.
    fn consistent(&self, terms: usize) -> bool {
        offsets_fit(&self.starts, terms, self.postings.len()) && offsets_fit(&self.pos_start, self.postings.len(), self.pos.len())
    }
}

impl Index {
    /// Bytes of the postings and positions (what [`Index::split`] moves out of the head).
    pub fn posting_bytes(&self) -> usize {
        self.posting_list.len() * 12 + self.pos_list.len() * 4
    }

    /// Split the postings off into segments of consecutive terms of about `target`
    /// bytes each: the head keeps every other table (vocabulary, trigrams, concepts,
    /// per-unit tables), so a recall reads the head and only the segments of the terms
    /// its intent reaches ([`crate::rank::Ranker::terms_for`], [`Index::install`]).
    pub fn split(mut self, target: usize) -> (Index, Vec<Segment>) {
        let tc = self.term_count();
        let mut bounds = vec![0u32];
        let mut acc = 0usize;
        for t in 0..tc {
            let (a, b) = (self.posting_base(t as u32), self.posting_base(t as u32 + 1));
            let (pa, pb) = (self.pos_start.get(a).copied().unwrap_or(0), self.pos_start.get(b).copied().unwrap_or(0));
            let bytes = 4 + (b - a) * 12 + (pb - pa) as usize * 4;
            if acc > 0 && acc + bytes > target {
                bounds.push(t as u32);
                acc = 0;
            }
            acc += bytes;
        }
        bounds.push(tc as u32);
        let mut segs = Vec::with_capacity(bounds.len() - 1);
        for w in bounds.windows(2) {
            let (t0, t1) = (w[0], w[1]);
            let (a, b) = (self.posting_base(t0), self.posting_base(t1));
            let (pa, pb) = (self.pos_start[a] as usize, self.pos_start[b] as usize);
            segs.push(Segment {
                first: t0,
                starts: (t0..=t1).map(|t| (self.posting_base(t) - a) as u32).collect(),
                postings: self.posting_list[a..b].to_vec().into(),
                pos_start: self.pos_start[a..=b].iter().map(|&p| p - pa as u32).collect(),
                pos: self.pos_list[pa..pb].to_vec().into(),
            });
        }
        self.posting_start = Column::default();
        self.posting_list = Column::default();
        self.pos_start = Column::default();
        self.pos_list = Column::default();
        self.segments = bounds.into();
        (self, segs)
    }

    /// Whether this is the head of a split index, its postings not installed yet.
    pub fn is_split(&self) -> bool {
        !self.segments.is_empty() && self.posting_start.is_empty() && self.installed.is_none()
    }

    /// The segments (by number) holding these term ids, ascending, each once.
    pub fn segments_of(&self, terms: &[u32]) -> Vec<u32> {
        let n = self.segments.len().saturating_sub(1);
        let mut out: Vec<u32> = terms.iter().filter_map(|&t| self.segments.partition_point(|&f| f <= t).checked_sub(1)).filter(|&s| s < n).map(|s| s as u32).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Install fetched segments (each numbered as in [`Index::segments_of`]) into a split
    /// head: terms of segments not fetched get no postings. The segments are kept as
    /// they are and read in place ([`Index::postings`]); nothing is copied into one
    /// table (that copy, and the prefix sums it needed, were a twentieth of a 1,000-unit
    /// recall). `false` (nothing changed) when the head is not a split head waiting for
    /// its segments, or a segment is not the one the head names or is inconsistent in
    /// itself.
    pub fn install(&mut self, segs: Vec<(u32, Segment)>) -> bool {
        let tc = self.term_count();
        if !self.is_split() || self.segments.len() < 2 || self.segments.last() != Some(&(tc as u32)) || !self.segments.is_sorted() {
            return false;
        }
        let mut last: Option<u32> = None;
        for (s, seg) in &segs {
            let (Some(&t0), Some(&t1)) = (self.segments.get(*s as usize), self.segments.get(*s as usize + 1)) else { return false };
            if last.is_some_and(|l| l >= *s) || seg.first != t0 || !seg.consistent((t1 - t0) as usize) {
                return false;
            }
            last = Some(*s);
        }
        self.installed = Some(segs);
        true
    }
}

/// Count, per field, the positions `p` in `x` with `p + 1` in `y` inside the same field
/// (`x`, `y` ascending; `ends` each field's end in the doc's word numbering).
fn adjacent(x: &[u32], y: &[u32], ends: &[u32; NF], counts: &mut [u16; NF]) {
    let mut j = 0;
    for &p in x {
        let Some(want) = p.checked_add(1) else { break };
        while y.get(j).is_some_and(|&q| q < want) {
            j += 1;
        }
        if y.get(j) != Some(&want) {
            continue;
        }
        if let Some(f) = ends.iter().position(|&e| p < e) {
            if want < ends[f] {
                counts[f] = counts[f].saturating_add(1);
            }
        }
    }
}

/// The build's interim id of a term (a stem, a surface or a plain term), added when new.
fn intern(ids: &mut FnvMap<String, u32>, all: &mut Vec<String>, key: String) -> u32 {
    if let Some(&x) = ids.get(&key) {
        return x;
    }
    let x = all.len() as u32;
    ids.insert(key.clone(), x);
    all.push(key);
    x
}

fn pseudo_tf(counts: &[u16; NF], lens: &[u32; NF], avg: &[f32; NF]) -> f32 {
    let mut w = 0.0;
    for f in 0..NF {
        if counts[f] == 0 {
            continue;
        }
        let norm = 1.0 - FIELD_B[f] + FIELD_B[f] * (lens[f] as f32 / avg[f].max(1.0));
        w += FIELD_WEIGHT[f] * counts[f] as f32 / norm.max(0.1);
    }
    w
}

/// Max neighbours kept per unit.
pub const MAX_LINKS: usize = 8;
/// Minimum link strength kept.
const MIN_LINK: f32 = 0.5;

fn build_links(units: &[UnitDoc<'_>], terms: &BTreeMap<String, u32>, postings: &[Vec<BuildPosting>], n: usize) -> Vec<Vec<(u32, f32)>> {
    let mut adj: Vec<BTreeMap<u32, f32>> = vec![BTreeMap::new(); n];
    // A signature term must be distinctive: in at most half the units, and never in more
    // than 32 (which also keeps this step linear in the number of units).
    let distinct_max = (n / 2).clamp(1, 32);
    for (d, u) in units.iter().enumerate() {
        let mut strength: BTreeMap<u32, f32> = BTreeMap::new();
        // the whole name, as a joined identifier, in another unit's body
        let name_words = content_words(u.name);
        if let Some((_, st, _)) = name_words.iter().find(|w| w.2) {
            if let Some(&id) = terms.get(st) {
                for p in &postings[id as usize] {
                    if p.doc as usize != d && p.tf[F_BODY] > 0 {
                        strength.insert(p.doc, 1.0);
                    }
                }
            }
        }
        // distinctive signature terms: name parts and keywords
        let mut sig: BTreeSet<u32> = BTreeSet::new();
        let kw = u.keywords.join(" . ");
        for (_, st, compound) in name_words.iter().cloned().chain(content_words(&kw)) {
            if compound {
                continue;
            }
            if let Some(&id) = terms.get(&st) {
                let df = postings[id as usize].len();
                if df <= distinct_max {
                    sig.insert(id);
                }
            }
        }
        if sig.len() >= 2 {
            let mut count: BTreeMap<u32, u32> = BTreeMap::new();
            for id in &sig {
                for p in &postings[*id as usize] {
                    if p.doc as usize != d && p.tf[F_BODY] > 0 {
                        *count.entry(p.doc).or_insert(0) += 1;
                    }
                }
            }
            for (other, c) in count {
                let a = c as f32 / sig.len() as f32;
                if a >= MIN_LINK {
                    let e = strength.entry(other).or_insert(0.0);
                    if a > *e {
                        *e = a;
                    }
                }
            }
        }
        for (other, a) in strength {
            for (x, y) in [(d as u32, other), (other, d as u32)] {
                let e = adj[x as usize].entry(y).or_insert(0.0);
                if a > *e {
                    *e = a;
                }
            }
        }
    }
    adj.into_iter()
        .map(|m| {
            let mut v: Vec<(u32, f32)> = m.into_iter().collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            v.truncate(MAX_LINKS);
            v
        })
        .collect()
}
