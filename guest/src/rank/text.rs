//! Word tokenisation for recall ranking (§21.3.3).
//!
//! Owns how intents, manifest metadata and unit bodies are cut into words:
//! lowercase alphanumeric runs, split at camelCase / PascalCase boundaries and
//! at `-`, `_`, `.`, `/` joins, each joined identifier also kept whole
//! (`subscribeToRun` gives `subscribe`, `to`, `run` and `subscribetorun`), plus
//! the English stopword list, and the clause of an intent that states its need
//! ([`focus_clause`]). Independent of any model tokenizer.

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
                if !c.is_alphanumeric() {
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
                    if !c.is_alphanumeric() {
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
        let chars: Vec<char> = run.chars().collect();
        for (k, &c) in chars.iter().enumerate() {
            if k > 0 {
                let p = chars[k - 1];
                let next_lower = chars.get(k + 1).map(|n| n.is_lowercase()).unwrap_or(false);
                let case = c.is_uppercase() && (p.is_lowercase() || (p.is_uppercase() && next_lower));
                let digits = c.is_ascii_digit() && p.is_alphabetic();
                if (case || digits) && !cur.is_empty() {
                    emit(cur);
                    cur.clear();
                }
            }
            cur.extend(c.to_lowercase());
        }
    }
    if !cur.is_empty() {
        emit(cur);
        cur.clear();
    }
}

/// Call `f(token)` for every token of the *plain view* of `text` (the ranker's word-for-word
/// vote, `lid-rank-19`): the text lowercased, cut into runs of ASCII letters, digits and
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
    for l in text.chars().flat_map(char::to_lowercase) {
        if l.is_ascii_alphanumeric() || l == '_' {
            cur.push(l);
        } else {
            emit(&mut cur);
        }
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
}
