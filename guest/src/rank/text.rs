//! Word tokenisation for recall ranking (§21.3.3).
//!
//! Owns how intents, manifest metadata and unit bodies are cut into words:
//! lowercase alphanumeric runs, split at camelCase / PascalCase boundaries and
//! at `-`, `_`, `.`, `/` joins, each joined identifier also kept whole
//! (`subscribeToRun` gives `subscribe`, `to`, `run` and `subscribetorun`), plus
//! the English stopword list, and the clause of an intent that states its need
//! ([`focus_clause`]). Independent of any model tokenizer.
//!
//! Every text is read in Unicode Normalization Form C ([`nfc`], `lid-rank-20`), so the
//! two encodings of "réplication" (precomposed `é`, or `e` and U+0301) are one word, a
//! combining mark (general category `M`) continues the word it follows, and words are
//! compared by default case folding ([`each_folded`]: `ς` is `σ`, `ß` and `ẞ` are `ss`),
//! so an intent's encoding and case do not change its ranking (§21.3.4). ASCII text and
//! text without marks, `ß`, `ς` or the other letters of [`FOLD`] read as before.

use std::borrow::Cow;

use unicode_normalization::char::{canonical_combining_class, compose, decompose_canonical, is_combining_mark};
use unicode_normalization::{is_nfc_quick, IsNormalized};

/// One word of a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    /// Lowercased surface form.
    pub text: String,
    /// `true` for the whole form of a joined identifier (`sign-in` -> `signin`).
    pub compound: bool,
    /// Position of the word's group in the text (parts of one identifier share it).
    pub pos: u32,
}

/// Cut `text` into words (stopwords included; see [`is_stopword`]).
pub fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    each_word(text, |w, compound, pos| out.push(Word { text: w.to_string(), compound, pos }));
    out
}

/// Call `f(word, compound, pos)` for every word of `text`, in order, without
/// allocating per word. Parts of a joined identifier come first, then (for two
/// or more parts) the whole identifier with `compound = true`.
pub fn each_word(text: &str, mut f: impl FnMut(&str, bool, u32)) {
    let normal = nfc(text);
    let text: &str = &normal;
    let b = text.as_bytes();
    let mut i = 0;
    let mut pos: u32 = 0;
    let mut joined = String::new();
    let mut part = String::new();
    let mut parts: Vec<String> = Vec::new();
    while i < b.len() {
        let (c, len) = char_at(text, i);
        if !c.is_alphanumeric() {
            if is_sum_of_money(text, i, c, len) {
                f(AMOUNT, false, pos);
                pos = pos.saturating_add(1);
            } else if is_at_verb(text, i, c) {
                f(MENTIONED, false, pos);
                pos = pos.saturating_add(1);
            }
            i += len;
            continue;
        }
        joined.clear();
        let mut nparts = 0usize;
        loop {
            let start = i;
            while i < b.len() {
                let (c, len) = char_at(text, i);
                if !in_word(c) {
                    break;
                }
                i += len;
            }
            split_case(&text[start..i], &mut part, &mut |p: &str| {
                parts.push(p.to_string());
                nparts += 1;
            });
            let joins = i + 1 < b.len() && matches!(b[i], b'-' | b'_' | b'.' | b'/' | b'\'') && char_at(text, i + 1).0.is_alphanumeric();
            if !joins {
                break;
            }
            if b[i] == b'\'' {
                // don't -> don: drop the clitic
                i += 1;
                while i < b.len() {
                    let (c, len) = char_at(text, i);
                    if !in_word(c) {
                        break;
                    }
                    i += len;
                }
                break;
            }
            i += 1;
        }
        // single letters count only as parts of an identifier (P-level, P1)
        let multi = parts.len() > 1;
        for p in parts.drain(..) {
            if keep_part(&p, multi) {
                f(&p, false, pos);
            }
            if joined.len() <= 64 {
                joined.push_str(&p);
            }
        }
        if nparts > 1 && joined.len() <= 40 && joined.chars().any(|c| c.is_alphabetic()) {
            f(&joined, true, pos);
        }
        pos = pos.saturating_add(1);
    }
}

/// The word a sum of money stands for ([`is_sum_of_money`]): "$62k" reads as "amount", so
/// an intent that names a sum meets the units that set amounts ("> $10,000", "Amount").
pub const AMOUNT: &str = "amount";

/// A currency sign (`$`, `£`, `€`, `¥`) at byte `i` starting a sum: a number of two or more
/// digits or one with a thousands or millions suffix ("$14", "$1,200", "£80k", "€1.2M"), not a
/// placeholder such as a regex group's `$1` or a shell's `${VAR}`.
fn is_sum_of_money(text: &str, i: usize, c: char, len: usize) -> bool {
    if !matches!(c, '$' | '£' | '€' | '¥') {
        return false;
    }
    let rest = text.as_bytes().get(i + len..).unwrap_or_default();
    let (number, after) = rest.split_at(rest.iter().take_while(|b| b.is_ascii_digit() || matches!(b, b',' | b'.')).count());
    let digits = number.iter().filter(|b| b.is_ascii_digit()).count();
    let suffix = after.first().is_some_and(|b| matches!(b, b'k' | b'K' | b'm' | b'M'));
    number.first().is_some_and(u8::is_ascii_digit) && (digits >= 2 || suffix)
}

/// The word chat's "@'d" stands for ([`is_at_verb`]).
pub const MENTIONED: &str = "mentioned";

/// "@'d" (or "@’d") at byte `i`, the chat verb for mentioning someone by handle ("someone
/// @'d me on a ticket"), which otherwise leaves no word at all: the clitic is dropped.
fn is_at_verb(text: &str, i: usize, c: char) -> bool {
    if c != '@' {
        return false;
    }
    let rest = text.get(i + 1..).unwrap_or_default();
    let after = rest.strip_prefix("'d").or_else(|| rest.strip_prefix("\u{2019}d"));
    after.is_some_and(|a| !a.chars().next().is_some_and(char::is_alphanumeric))
}

/// `text` in Unicode Normalization Form C (`lid-rank-20`): borrowed, without a pass that
/// allocates, when it is ASCII or the quick check says it is NFC already (nearly every
/// text: NFC is what keyboards, editors and JSON encoders produce); composed otherwise
/// (decomposed input from macOS file names, PDF copy-paste, some clients). Canonically
/// equivalent texts give the same words (§21.3.4).
pub fn nfc(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(compose_nfc(text))
    }
}

/// NFC by its definition (UAX #15): canonical decomposition, canonical ordering (each run of
/// non-starters sorted stably by combining class), then canonical composition of each
/// character with the last starter when nothing between blocks it. Built on the crate's
/// per-character tables: its `nfc()` iterator also links the compatibility decomposition
/// tables (some 60 KB), which nothing here uses.
fn compose_nfc(text: &str) -> String {
    let mut d: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        decompose_canonical(c, |x| d.push(x));
    }
    let mut i = 0;
    while i < d.len() {
        let start = i;
        while i < d.len() && canonical_combining_class(d[i]) != 0 {
            i += 1;
        }
        d[start..i].sort_by_key(|&c| canonical_combining_class(c));
        i += 1;
    }
    let mut out: Vec<char> = Vec::with_capacity(d.len());
    // the last starter kept, and the class of the last character kept after it (0: none)
    let mut starter: Option<usize> = None;
    let mut last = 0u8;
    for c in d {
        let class = canonical_combining_class(c);
        if let Some(s) = starter {
            // not blocked: next to the starter, or every character between is of a lower class
            if out.len() == s + 1 || (last != 0 && last < class) {
                if let Some(x) = compose(out[s], c) {
                    out[s] = x;
                    continue;
                }
            }
        }
        if class == 0 {
            starter = Some(out.len());
        }
        last = class;
        out.push(c);
    }
    out.into_iter().collect()
}

/// Whether `c` continues a word begun by a letter or digit: another letter or digit, or a
/// combining mark (general category `Mn`, `Mc`, `Me`; UAX #29 rule WB4), which belongs to
/// the character before it ("q̇", a Devanagari virama) rather than cutting the word in two.
#[inline]
fn in_word(c: char) -> bool {
    c.is_alphanumeric() || (c >= '\u{300}' && is_combining_mark(c))
}

/// Call `f` with the default case folding of `c` (Unicode's `CaseFolding.txt`, statuses C
/// and F): ASCII lowercased as before; the letters of [`FOLD`], whose folding is not their
/// lowercase, by the table; every other character by its lowercase, which is its folding.
#[inline]
pub fn each_folded(c: char, mut f: impl FnMut(char)) {
    if c.is_ascii() {
        f(c.to_ascii_lowercase());
    } else if let Ok(k) = FOLD.binary_search_by_key(&c, |&(x, _)| x) {
        FOLD[k].1.chars().for_each(f);
    } else {
        c.to_lowercase().for_each(f);
    }
}

/// The characters whose default case folding (full, `CaseFolding.txt` C + F) is not their
/// lowercase, with that folding: final sigma and the Greek symbol variants, `ß` and `ẞ`
/// (`ss`), long s, the micro sign, ligatures, Greek letters with iota subscript. Left out:
/// Cherokee, whose lowercase already pairs each letter with its other case, and the
/// foldings that are not NFC (`ǰ`, `ΐ`: a word is composed again after folding, which
/// gives them their lowercase back). Sorted (checked by a test); generated from Python's
/// `str.casefold` (Unicode 14).
pub const FOLD: &[(char, &str)] = &[
    ('\u{b5}', "\u{3bc}"), ('\u{df}', "ss"), ('\u{149}', "\u{2bc}n"), ('\u{17f}', "s"), ('\u{345}', "\u{3b9}"),
    ('\u{3c2}', "\u{3c3}"), ('\u{3d0}', "\u{3b2}"), ('\u{3d1}', "\u{3b8}"), ('\u{3d5}', "\u{3c6}"),
    ('\u{3d6}', "\u{3c0}"), ('\u{3f0}', "\u{3ba}"), ('\u{3f1}', "\u{3c1}"), ('\u{3f5}', "\u{3b5}"),
    ('\u{587}', "\u{565}\u{582}"), ('\u{1c80}', "\u{432}"), ('\u{1c81}', "\u{434}"), ('\u{1c82}', "\u{43e}"),
    ('\u{1c83}', "\u{441}"), ('\u{1c84}', "\u{442}"), ('\u{1c85}', "\u{442}"), ('\u{1c86}', "\u{44a}"),
    ('\u{1c87}', "\u{463}"), ('\u{1c88}', "\u{a64b}"), ('\u{1e9a}', "a\u{2be}"), ('\u{1e9b}', "\u{1e61}"),
    ('\u{1e9e}', "ss"), ('\u{1f80}', "\u{1f00}\u{3b9}"), ('\u{1f81}', "\u{1f01}\u{3b9}"),
    ('\u{1f82}', "\u{1f02}\u{3b9}"), ('\u{1f83}', "\u{1f03}\u{3b9}"), ('\u{1f84}', "\u{1f04}\u{3b9}"),
    ('\u{1f85}', "\u{1f05}\u{3b9}"), ('\u{1f86}', "\u{1f06}\u{3b9}"), ('\u{1f87}', "\u{1f07}\u{3b9}"),
    ('\u{1f88}', "\u{1f00}\u{3b9}"), ('\u{1f89}', "\u{1f01}\u{3b9}"), ('\u{1f8a}', "\u{1f02}\u{3b9}"),
    ('\u{1f8b}', "\u{1f03}\u{3b9}"), ('\u{1f8c}', "\u{1f04}\u{3b9}"), ('\u{1f8d}', "\u{1f05}\u{3b9}"),
    ('\u{1f8e}', "\u{1f06}\u{3b9}"), ('\u{1f8f}', "\u{1f07}\u{3b9}"), ('\u{1f90}', "\u{1f20}\u{3b9}"),
    ('\u{1f91}', "\u{1f21}\u{3b9}"), ('\u{1f92}', "\u{1f22}\u{3b9}"), ('\u{1f93}', "\u{1f23}\u{3b9}"),
    ('\u{1f94}', "\u{1f24}\u{3b9}"), ('\u{1f95}', "\u{1f25}\u{3b9}"), ('\u{1f96}', "\u{1f26}\u{3b9}"),
    ('\u{1f97}', "\u{1f27}\u{3b9}"), ('\u{1f98}', "\u{1f20}\u{3b9}"), ('\u{1f99}', "\u{1f21}\u{3b9}"),
    ('\u{1f9a}', "\u{1f22}\u{3b9}"), ('\u{1f9b}', "\u{1f23}\u{3b9}"), ('\u{1f9c}', "\u{1f24}\u{3b9}"),
    ('\u{1f9d}', "\u{1f25}\u{3b9}"), ('\u{1f9e}', "\u{1f26}\u{3b9}"), ('\u{1f9f}', "\u{1f27}\u{3b9}"),
    ('\u{1fa0}', "\u{1f60}\u{3b9}"), ('\u{1fa1}', "\u{1f61}\u{3b9}"), ('\u{1fa2}', "\u{1f62}\u{3b9}"),
    ('\u{1fa3}', "\u{1f63}\u{3b9}"), ('\u{1fa4}', "\u{1f64}\u{3b9}"), ('\u{1fa5}', "\u{1f65}\u{3b9}"),
    ('\u{1fa6}', "\u{1f66}\u{3b9}"), ('\u{1fa7}', "\u{1f67}\u{3b9}"), ('\u{1fa8}', "\u{1f60}\u{3b9}"),
    ('\u{1fa9}', "\u{1f61}\u{3b9}"), ('\u{1faa}', "\u{1f62}\u{3b9}"), ('\u{1fab}', "\u{1f63}\u{3b9}"),
    ('\u{1fac}', "\u{1f64}\u{3b9}"), ('\u{1fad}', "\u{1f65}\u{3b9}"), ('\u{1fae}', "\u{1f66}\u{3b9}"),
    ('\u{1faf}', "\u{1f67}\u{3b9}"), ('\u{1fb2}', "\u{1f70}\u{3b9}"), ('\u{1fb3}', "\u{3b1}\u{3b9}"),
    ('\u{1fb4}', "\u{3ac}\u{3b9}"), ('\u{1fbc}', "\u{3b1}\u{3b9}"), ('\u{1fbe}', "\u{3b9}"),
    ('\u{1fc2}', "\u{1f74}\u{3b9}"), ('\u{1fc3}', "\u{3b7}\u{3b9}"), ('\u{1fc4}', "\u{3ae}\u{3b9}"),
    ('\u{1fcc}', "\u{3b7}\u{3b9}"), ('\u{1ff2}', "\u{1f7c}\u{3b9}"), ('\u{1ff3}', "\u{3c9}\u{3b9}"),
    ('\u{1ff4}', "\u{3ce}\u{3b9}"), ('\u{1ffc}', "\u{3c9}\u{3b9}"), ('\u{fb00}', "ff"), ('\u{fb01}', "fi"),
    ('\u{fb02}', "fl"), ('\u{fb03}', "ffi"), ('\u{fb04}', "ffl"), ('\u{fb05}', "st"), ('\u{fb06}', "st"),
    ('\u{fb13}', "\u{574}\u{576}"), ('\u{fb14}', "\u{574}\u{565}"), ('\u{fb15}', "\u{574}\u{56b}"),
    ('\u{fb16}', "\u{57e}\u{576}"), ('\u{fb17}', "\u{574}\u{56d}"),
];

fn char_at(text: &str, i: usize) -> (char, usize) {
    match text.as_bytes().get(i) {
        Some(&b) if b < 0x80 => (b as char, 1),
        _ => match text.get(i..).and_then(|s| s.chars().next()) {
            Some(c) => (c, c.len_utf8()),
            None => ('\0', 1),
        },
    }
}

/// The number of chars in `s`, without decoding when it is ASCII (as most terms are):
/// `chars().count()` is a call per string in wasm.
#[inline]
pub fn char_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// The characters of UTF-8 bytes: the bytes that do not continue a character ([`char_len`]
/// of the text they encode; any count for bytes that are not UTF-8).
pub fn char_count(b: &[u8]) -> usize {
    b.iter().filter(|&&x| (x as i8) >= -0x40).count()
}

fn keep_part(p: &str, in_identifier: bool) -> bool {
    let n = char_len(p);
    if n == 0 || n > 40 {
        return false;
    }
    if n == 1 {
        return in_identifier || p.chars().all(|c| c.is_ascii_digit());
    }
    true
}

/// Split one alphanumeric run at case boundaries; emit lowercased parts.
fn split_case(run: &str, cur: &mut String, emit: &mut dyn FnMut(&str)) {
    cur.clear();
    if run.is_ascii() {
        let r = run.as_bytes();
        for k in 0..r.len() {
            let c = r[k];
            if k > 0 {
                let p = r[k - 1];
                // an acronym's plural stays whole: URIs, APIs, IDs (not UR + Is)
                let plural = r.get(k + 1) == Some(&b's') && k + 2 == r.len();
                let case = c.is_ascii_uppercase() && {
                    let next_lower = r.get(k + 1).map(|n| n.is_ascii_lowercase()).unwrap_or(false);
                    p.is_ascii_lowercase() || (p.is_ascii_uppercase() && next_lower && !plural)
                };
                // letters then digits: P1 -> p, 1 (digits then letters stay: 3d, 100k)
                let digits = c.is_ascii_digit() && p.is_ascii_alphabetic();
                if (case || digits) && !cur.is_empty() {
                    emit(cur);
                    cur.clear();
                }
            }
            cur.push(c.to_ascii_lowercase() as char);
        }
    } else {
        // a combining mark belongs to the letter before it: the case boundaries are between
        // base characters, and a mark is never one
        let chars: Vec<char> = run.chars().collect();
        let base = |k: usize| !(chars[k] >= '\u{300}' && is_combining_mark(chars[k]));
        let mut prev: Option<char> = None;
        for (k, &c) in chars.iter().enumerate() {
            if base(k) {
                if let Some(p) = prev {
                    let next_lower = (k + 1..chars.len()).find(|&n| base(n)).map(|n| chars[n].is_lowercase()).unwrap_or(false);
                    let case = c.is_uppercase() && (p.is_lowercase() || (p.is_uppercase() && next_lower));
                    let digits = c.is_ascii_digit() && p.is_alphabetic();
                    if (case || digits) && !cur.is_empty() {
                        emit_folded(cur, emit);
                    }
                }
                prev = Some(c);
            }
            each_folded(c, |l| cur.push(l));
        }
        if !cur.is_empty() {
            emit_folded(cur, emit);
        }
    }
    if !cur.is_empty() {
        emit(cur);
        cur.clear();
    }
}

/// Emit a folded non-ASCII part, composed again if folding left it decomposable ("J̌" folds
/// to `j` + U+030C, which is `ǰ`), so canonically equivalent parts stay one word.
fn emit_folded(cur: &mut String, emit: &mut dyn FnMut(&str)) {
    if !cur.is_ascii() && is_nfc_quick(cur.chars()) != IsNormalized::Yes {
        emit(&compose_nfc(cur));
    } else {
        emit(cur);
    }
    cur.clear();
}

/// Call `f(token)` for every token of the *plain view* of `text` (the ranker's word-for-word
/// vote, `lid-rank-19`): the text in NFC and case-folded (`lid-rank-20`: "STRASSE" and
/// "straße" are both `strasse`), cut into runs of ASCII letters, digits and
/// `_` (so `scrape_interval` stays whole, `one-way` is `one` and `way`, and a non-ASCII
/// letter ends a token), tokens of two characters or more, minus the short function-word
/// list [`PLAIN_STOPWORDS`]. No stemming, no joins, no splitting of identifiers: the
/// view the ranker's own words do not take, and so a second opinion.
pub fn each_plain_token(text: &str, mut f: impl FnMut(&str)) {
    let mut cur = String::new();
    let mut emit = |cur: &mut String| {
        if cur.len() >= 2 && PLAIN_STOPWORDS.binary_search(&cur.as_str()).is_err() {
            f(cur);
        }
        cur.clear();
    };
    for c in nfc(text).chars() {
        each_folded(c, |l| {
            if l.is_ascii_alphanumeric() || l == '_' {
                cur.push(l);
            } else {
                emit(&mut cur);
            }
        });
    }
    emit(&mut cur);
}

/// The plain view's function words: articles, pronouns, auxiliaries and the commonest
/// prepositions and question words. Far shorter than [`STOPWORDS`]: words such as
/// "before", "after", "same", "without" or "up" stay, as they tell instructions apart.
// Sorted (checked by a test).
pub const PLAIN_STOPWORDS: &[&str] = &[
    "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by", "can", "could",
    "do", "does", "each", "for", "from", "get", "got", "has", "have", "how", "if", "in", "into", "is", "it", "its",
    "just", "my", "no", "not", "of", "on", "only", "or", "our", "per", "should", "so", "than", "that", "the",
    "their", "them", "then", "there", "they", "this", "to", "use", "using", "via", "vs", "was", "we", "were", "what",
    "when", "where", "which", "why", "will", "with", "would",
];

/// English function words and intent framing words that carry no topic.
pub fn is_stopword(w: &str) -> bool {
    STOPWORDS.binary_search(&w).is_ok()
}

/// The clause of a multi-clause intent that states what is asked: its last question, else
/// its last clause; `None` for an intent of one clause. Clauses end at `.` `?` `!` `;` `:`
/// `—` `–` followed by a space, and at a dash between spaces (` - `, ` — `). An intent
/// that sets a scene and then asks ("ACME-412 wants a new landing page banner — which of
/// my reports picks that up?") names the instruction it needs in the question, and the
/// scene's names and numbers in the rest; the ranker counts the question's words twice
/// (§21.3.3, `Ranker::query`).
pub fn focus_clause(text: &str) -> Option<&str> {
    let mut clauses: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut prev: Option<char> = None;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let space_after = it.peek().is_some_and(|&(_, n)| n.is_whitespace());
        if space_after && prev.is_some_and(char::is_whitespace) && matches!(c, '-' | '—' | '–') {
            clauses.push(&text[start..i]);
            start = i + c.len_utf8();
        } else if space_after && matches!(c, '.' | '?' | '!' | ';' | ':' | '—' | '–') {
            clauses.push(&text[start..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
        prev = Some(c);
    }
    clauses.push(&text[start..]);
    clauses.retain(|c| !c.trim().is_empty());
    if clauses.len() < 2 {
        return None;
    }
    clauses.iter().rev().find(|c| c.trim_end().ends_with('?')).or(clauses.last()).map(|c| c.trim())
}

/// Conversational framing an intent is often wrapped in ("quick question: tell me…",
/// "before going further, …"): ignored on the query side only, because in a corpus of
/// ten units such a word is rare enough to look specific and would outweigh the topic.
pub fn is_framing(w: &str) -> bool {
    FRAMING.binary_search(&w).is_ok()
}

// Sorted (checked by a test).
const FRAMING: &[&str] = &[
    "actually", "basically", "currently", "going", "hey", "hi", "kindly", "quick", "quickly", "tell", "thanks", "wondering",
];

// Sorted (checked by a test).
const STOPWORDS: &[&str] = &[
    "able", "about", "above", "after", "again", "against", "all", "already", "also", "although", "am", "an", "and",
    "another", "any", "anybody", "anyone", "anything", "anyway", "are", "aren", "around", "as", "at", "be",
    "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "cannot", "could",
    "couldn", "did", "didn", "do", "does", "doesn", "doing", "don", "down", "during", "each", "eg", "either",
    "else", "etc", "ever", "every", "everyone", "everything", "few", "for", "from", "further", "get", "gets",
    "getting", "got", "had", "hadn", "has", "hasn", "have", "haven", "having", "he", "her", "here", "hers",
    "herself", "him", "himself", "his", "how", "however", "ie", "if", "in", "into", "is", "isn", "it", "its",
    "itself", "just", "let", "lets", "like", "ll", "may", "me", "might", "more", "most", "much", "must", "my",
    "myself", "need", "needs", "no", "nor", "not", "now", "of", "off", "ok", "okay", "on", "once", "one", "only",
    "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "please", "quite", "rather", "re",
    "really", "same", "shall", "she", "should", "shouldn", "since", "so", "some", "somebody", "somehow", "someone",
    "something", "still", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
    "these", "they", "thing", "things", "this", "those", "though", "through", "thus", "to", "too", "under", "until",
    "up", "upon", "us", "use", "using", "ve", "versus", "very", "via", "vs", "want", "wants", "was", "wasn", "way", "we", "were",
    "weren", "what", "whatever", "when", "whenever", "where", "wherever", "whether", "which", "while", "who",
    "whom", "whose", "why", "will", "with", "within", "without", "won", "would", "wouldn", "yet", "you", "your",
    "yours", "yourself", "yourselves",
];

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_normalization::UnicodeNormalization;

    #[test]
    fn a_sum_of_money_reads_as_the_word_amount_and_a_placeholder_does_not() {
        let texts = |t: &str| words(t).into_iter().map(|w| w.text).collect::<Vec<_>>();
        for t in ["a $62k gap", "over $10,000", "£80k owed", "€1.2M", "only $14 left", "¥5000"] {
            assert!(texts(t).contains(&AMOUNT.to_string()), "{t:?}: {:?}", texts(t));
        }
        // a regex group, a shell variable, a lone sign and a one-digit sum are not sums
        for t in ["replacement: $1", "${HOME}/x", "costs $ and time", "$5 fee", "$x"] {
            assert!(!texts(t).contains(&AMOUNT.to_string()), "{t:?}: {:?}", texts(t));
        }
        // the implied word takes a position of its own, before the number
        let w = words("a $62k gap");
        let (amount, number) = (w.iter().find(|w| w.text == AMOUNT).unwrap(), w.iter().find(|w| w.text == "62k").unwrap());
        assert!(amount.pos < number.pos, "{w:?}");
    }

    #[test]
    fn chats_at_d_reads_as_mentioned_and_an_address_or_handle_does_not() {
        let texts = |t: &str| words(t).into_iter().map(|w| w.text).collect::<Vec<_>>();
        assert!(texts("someone @'d me on PAP-9").contains(&MENTIONED.to_string()));
        assert!(texts("someone @\u{2019}d me").contains(&MENTIONED.to_string()));
        for t in ["mail ops@example.com", "ask @dana", "@'dana"] {
            assert!(!texts(t).contains(&MENTIONED.to_string()), "{t:?}: {:?}", texts(t));
        }
    }

    #[test]
    fn characters_count_alike_from_text_and_from_its_bytes() {
        for s in ["", "deploy", "café", "naïveté", "日本語のテキスト", "emoji 🚀 rocket", "ß"] {
            assert_eq!(char_count(s.as_bytes()), char_len(s), "{s:?}");
            assert_eq!(char_len(s), s.chars().count(), "{s:?}");
        }
    }

    #[test]
    fn the_plain_view_keeps_identifiers_whole_and_most_small_words() {
        let mut got = Vec::new();
        each_plain_token("Don't raise scrape_interval BEFORE the one-way sync of Café v2 x", |t| got.push(t.to_string()));
        // "don" stays (the list is short), "t" and "x" are too short, "the" and "of" are
        // function words, a non-ASCII letter ends a token
        assert_eq!(got, ["don", "raise", "scrape_interval", "before", "one", "way", "sync", "caf", "v2"]);
    }

    #[test]
    fn the_focus_clause_is_the_last_question_or_the_last_clause() {
        assert_eq!(focus_clause("ACME-412 wants a new banner — which of my reports picks that up?"), Some("which of my reports picks that up?"));
        assert_eq!(focus_clause("Is it safe? The deploy is at 5pm. Nobody reviewed it."), Some("Is it safe?"));
        assert_eq!(focus_clause("Pushed the fix; can I call it a day? Or wait for CI"), Some("can I call it a day?"));
        assert_eq!(focus_clause("The job failed twice. Retry it with a backoff"), Some("Retry it with a backoff"));
        assert_eq!(focus_clause("Budget is 84% spent - what can I still pick up"), Some("what can I still pick up"));
        // one clause, or punctuation inside words and identifiers: nothing to single out
        assert_eq!(focus_clause("how do I roll back a release?"), None);
        assert_eq!(focus_clause("is Style::default().fg(Color::Red) right for v1.2 e-mail"), None);
        assert_eq!(focus_clause("trailing dash -"), None);
        assert_eq!(focus_clause(""), None);
    }

    fn texts(s: &str) -> Vec<String> {
        words(s).into_iter().map(|w| w.text).collect()
    }

    fn plain_tokens(s: &str) -> Vec<String> {
        let mut got = Vec::new();
        each_plain_token(s, |t| got.push(t.to_string()));
        got
    }

    /// §21.3.4 (the same intent, the same result): the audit's words, precomposed (NFC) and
    /// decomposed (NFD, `e` + U+0301), are the same words, read either way round.
    #[test]
    fn canonically_equivalent_texts_give_the_same_words() {
        let unit = "## Réplication\n\nVérifier la réplication après le déploiement. Die Größe der Übergabe prüfen. naïve coöperation.";
        for w in ["réplication", "déploiement", "größe", "übergabe", "naïve", unit] {
            let (c, d): (String, String) = (w.nfc().collect(), w.nfd().collect());
            assert_ne!(c, d);
            assert_eq!(texts(&d), texts(&c), "{w:?}");
            assert_eq!(plain_tokens(&d), plain_tokens(&c), "{w:?}");
        }
        assert_eq!(texts("re\u{301}plication"), ["réplication"]);
        assert_eq!(texts("re\u{301}plication"), texts("réplication"));
        // ASCII and NFC text are read in place; decomposed text is composed
        assert!(matches!(nfc("deploy"), Cow::Borrowed(_)));
        assert!(matches!(nfc("réplication Größe 日本語"), Cow::Borrowed(_)));
        assert_eq!(nfc("Gro\u{308}\u{df}e"), "Größe");
        // a singleton decomposition is NFC's too: the Kelvin sign is K
        assert_eq!(texts("5 \u{212a}elvin"), texts("5 kelvin"));
    }

    /// [`compose_nfc`] is NFC: the crate's own `nfc()` on every character that decomposes or
    /// composes, in both forms, with marks in every order, Hangul, and a pseudo-random mix.
    #[test]
    fn composing_is_the_crates_nfc() {
        let check = |s: &str| assert_eq!(compose_nfc(s), s.nfc().collect::<String>(), "{:?}", s.chars().map(|c| c as u32).collect::<Vec<_>>());
        for cp in 0..0x30000u32 {
            let Some(c) = char::from_u32(cp) else { continue };
            let mut d = String::new();
            decompose_canonical(c, |x| d.push(x));
            if d != c.to_string() || canonical_combining_class(c) != 0 {
                let s = format!("a{c}b{c}\u{301}\u{323}{c}");
                check(&s);
                check(&s.nfd().collect::<String>());
            }
        }
        for s in ["\u{1100}\u{1161}\u{11a8}", "\u{ac00}\u{11a8}", "q\u{307}\u{323}", "a\u{323}\u{302}\u{301}", "\u{301}e", "e\u{301}\u{301}", "\u{3b1}\u{313}\u{301}\u{345}", "\u{1f0}\u{30c}"] {
            check(s);
        }
        let pool = ['a', 'e', 'o', 'u', 'A', 'I', '\u{301}', '\u{308}', '\u{323}', '\u{31b}', '\u{345}', '\u{3b1}', '\u{3c9}', '\u{1100}', '\u{1161}', '\u{11a8}', '\u{ac00}', '\u{e9}', '\u{1ec7}', '\u{313}', ' '];
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..20_000 {
            let s: String = (0..8).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                pool[(x % pool.len() as u64) as usize]
            }).collect();
            check(&s);
        }
    }

    /// A combining mark (Mn, Mc, Me) continues its word (UAX #29 WB4), where it used to cut
    /// it in two ("re" + "plication"); a mark with no letter before it starts no word.
    #[test]
    fn a_combining_mark_does_not_cut_a_word() {
        // marks that compose with nothing: dot above on q, enclosing circle, Devanagari virama
        assert_eq!(texts("q\u{307}uery"), ["q\u{307}uery"]);
        assert_eq!(texts("x\u{20dd}y"), ["x\u{20dd}y"]);
        assert_eq!(texts("हिन्दी text").len(), 2, "{:?}", texts("हिन्दी text"));
        assert!(texts(" \u{301}\u{308} -\u{301} ").is_empty());
        // a mark does not make a case boundary: "Q̇uery" is one word, "fooQ̇uery" two and whole
        assert_eq!(texts("Q\u{307}uery"), ["q\u{307}uery"]);
        assert_eq!(texts("fooQ\u{307}uery"), ["foo", "q\u{307}uery", "fooq\u{307}uery"]);
        // without marks, identifiers split as before
        assert_eq!(texts("ÉcoleNormale"), ["école", "normale", "écolenormale"]);
    }

    /// Case-insensitive matching is default case folding, not lowercasing char by char: final
    /// sigma is sigma and `ß`/`ẞ` are `ss`, so an intent's case does not change its words (the
    /// audit's pairs); ASCII folds as before, and letters that are not one letter stay apart.
    #[test]
    fn words_meet_across_case_by_case_folding() {
        for (a, b) in [("λογαριασμούς", "ΛΟΓΑΡΙΑΣΜΟΎΣ"), ("κανονας", "ΚΑΝΟΝΑΣ"), ("straße", "STRASSE"), ("STRAẞE", "strasse"), ("ﬁle", "FILE"), ("µs", "ΜS")] {
            assert_eq!(texts(a), texts(b), "{a:?} {b:?}");
            assert_eq!(plain_tokens(a), plain_tokens(b), "{a:?} {b:?}");
        }
        assert_eq!(texts("Die Straße"), ["die", "strasse"]);
        assert_eq!(plain_tokens("Die Straße zum STRASSENFEST"), ["die", "strasse", "zum", "strassenfest"]);
        assert_eq!(texts("ΛΟΓΑΡΙΑΣΜΟΎΣ"), ["λογαριασμούσ"]);
        // a lowercase that composes: J + caron (no precomposed capital) meets ǰ
        assert_eq!(texts("J\u{30c}ob"), texts("\u{1f0}ob"));
        // folding keeps different letters apart: dotless ı is not i, s is not ss, σ is not ο
        assert_ne!(texts("ıd"), texts("id"));
        assert_ne!(texts("stras"), texts("strasse"));
        assert_ne!(texts("λογαριασμούς"), texts("λογαριασμούο"));
        // ASCII: exactly as before
        assert_eq!(texts("HTTPServer STRASSE"), ["http", "server", "httpserver", "strasse"]);
        let mut folded = String::new();
        for c in (0u8..0x80).map(char::from) {
            each_folded(c, |l| folded.push(l));
        }
        assert_eq!(folded, (0u8..0x80).map(|b| b.to_ascii_lowercase() as char).collect::<String>());
    }

    #[test]
    fn the_folding_table_is_sorted_and_differs_from_lowercase() {
        assert!(FOLD.windows(2).all(|w| w[0].0 < w[1].0));
        for &(c, f) in FOLD {
            assert_ne!(c.to_lowercase().collect::<String>(), f, "{c:?}");
            assert!(unicode_normalization::is_nfc(f), "{c:?}");
        }
    }

    #[test]
    fn framing_sorted() {
        assert!(FRAMING.windows(2).all(|w| w[0] < w[1]));
        assert!(PLAIN_STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn stopwords_sorted() {
        let mut v = STOPWORDS.to_vec();
        v.sort();
        v.dedup();
        assert_eq!(v, STOPWORDS);
    }

    #[test]
    fn splits_identifiers() {
        assert_eq!(texts("subscribeToRun"), ["subscribe", "to", "run", "subscribetorun"]);
        assert_eq!(texts("X-Paperclip-Run-Id"), ["x", "paperclip", "run", "id", "xpapercliprunid"]);
        assert_eq!(texts("P1 P-level"), ["p", "1", "p1", "p", "level", "plevel"]);
        assert_eq!(texts("sign-in page"), ["sign", "in", "signin", "page"]);
        assert_eq!(texts("HTTPServer v1.x"), ["http", "server", "httpserver", "v", "1", "x", "v1x"]);
        assert_eq!(texts("don't stop"), ["don", "stop"]);
        // acronym plurals stay whole; a capitalised word after an acronym still splits
        assert_eq!(texts("root URIs, APIs and IDs"), ["root", "uris", "apis", "and", "ids"]);
        assert_eq!(texts("URIsList"), ["ur", "is", "list", "urislist"]);
        assert_eq!(texts("got a 409, T+2"), ["got", "409", "2"]);
        assert!(texts("").is_empty());
        assert!(texts("  --- ** ").is_empty());
    }

    /// A clitic after an apostrophe is dropped whatever its length ("'t", "'s", and the two-letter
    /// "'re", "'ll", "'ve"), so contractions leave only the word they shorten.
    #[test]
    fn an_apostrophes_clitic_is_dropped_whatever_its_length() {
        assert_eq!(texts("you're sure we'll see they've left"), ["you", "sure", "we", "see", "they", "left"]);
        assert_eq!(texts("it's the user's"), ["it", "the", "user"]);
    }

    /// A joined identifier is cut and kept whole the same way when its parts hold non-ASCII
    /// letters: the join is decided by the character after the `-`, `_`, `.` or `/`.
    #[test]
    fn a_joined_identifier_may_hold_non_ascii_letters() {
        assert_eq!(texts("café-bar"), ["café", "bar", "cafébar"]);
        assert_eq!(texts("naïve_bayes run"), ["naïve", "bayes", "naïvebayes", "run"]);
        // a join character with no word after it joins nothing
        assert_eq!(texts("sign- in"), ["sign", "in"]);
    }

    /// Punctuation and symbols outside ASCII (a dash, a currency sign, an emoji) end a word as
    /// ASCII punctuation does: only letters, digits and combining marks continue one.
    #[test]
    fn a_symbol_beyond_ascii_ends_a_word() {
        assert_eq!(texts("deploy\u{2014}rollback"), ["deploy", "rollback"]);
        assert_eq!(texts("launch\u{1f680}now \u{a7}3"), ["launch", "now", "3"]);
        assert_eq!(texts("caf\u{e9}\u{2026}bar"), ["caf\u{e9}", "bar"]);
    }

    /// A word of more than 40 characters (a hash, a base64 run) is no word; 40 is still one,
    /// counted in characters, not bytes.
    #[test]
    fn a_word_of_more_than_40_characters_is_dropped() {
        let (forty, forty_one) = ("a".repeat(40), "a".repeat(41));
        assert_eq!(texts(&format!("{forty} {forty_one} ok")), [forty.as_str(), "ok"]);
        let accented = "\u{e9}".repeat(40);
        assert_eq!(texts(&accented), [accented.as_str()]);
        assert!(texts(&"\u{e9}".repeat(41)).is_empty());
    }

    /// Identifiers in other scripts, or with marks, split at case boundaries as ASCII ones do:
    /// lower to upper, and an acronym's last capital starting the next word; a mark belongs
    /// to the letter before it and makes no boundary of its own.
    #[test]
    fn identifiers_beyond_ascii_split_at_case_boundaries_as_ascii_ones_do() {
        assert_eq!(texts("UBERCool"), ["uber", "cool", "ubercool"]);
        assert_eq!(texts("\u{dc}BERCool"), ["\u{fc}ber", "cool", "\u{fc}bercool"]);
        assert_eq!(texts("\u{418}\u{43c}\u{44f}\u{424}\u{430}\u{439}\u{43b}\u{430}"), ["\u{438}\u{43c}\u{44f}", "\u{444}\u{430}\u{439}\u{43b}\u{430}", "\u{438}\u{43c}\u{44f}\u{444}\u{430}\u{439}\u{43b}\u{430}"]);
        assert_eq!(texts("fooq\u{307}Bar"), ["fooq\u{307}", "bar", "fooq\u{307}bar"]);
        assert_eq!(texts("ABQ\u{307}uery"), ["ab", "q\u{307}uery", "abq\u{307}uery"]);
    }

    /// The framing words are recognised, and only they: a topic word is never framing.
    #[test]
    fn framing_words_are_recognised_and_topic_words_are_not() {
        for w in FRAMING {
            assert!(is_framing(w), "{w}");
        }
        for w in ["deploy", "question", "quicker", "tell-me", ""] {
            assert!(!is_framing(w), "{w}");
        }
    }
}
