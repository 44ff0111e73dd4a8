//! The publish-time paraphrase coverage gate (§21.8.3, Approach A).
//!
//! For every `load_triggers.intents` string (the description when a unit has none) a
//! local, deterministic generator makes N=5 paraphrases using lexical and syntactic
//! variation: synonyms from its own table (not the ranker's lexicon or vectors),
//! inflections, word order, question vs imperative, dropped function words and added
//! context. Each paraphrase is ranked; a unit passes when it is in the top k (3) for at
//! least 80% of its paraphrases. Only trigger strings are used as input (S8).

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::rank::Weights;
use crate::recall::Corpus;
use crate::store::Facts;

/// Paraphrases per trigger intent (§21.8.3 step 1).
pub const PARAPHRASES_PER_INTENT: usize = 5;
/// Rank cut-off (§21.8.3 step 2).
pub const DEFAULT_K: usize = 3;
/// Pass threshold (§21.8.3 step 4).
pub const PASS_THRESHOLD: f64 = 0.80;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageOptions {
    #[serde(default = "k3")]
    pub k: usize,
    #[serde(default = "threshold")]
    pub threshold: f64,
    #[serde(default)]
    pub weights: Option<Weights>,
}

fn k3() -> usize {
    DEFAULT_K
}
fn threshold() -> f64 {
    PASS_THRESHOLD
}

impl Default for CoverageOptions {
    fn default() -> Self {
        CoverageOptions { k: DEFAULT_K, threshold: PASS_THRESHOLD, weights: None }
    }
}

/// A paraphrase that missed the top k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedParaphrase {
    pub seed: String,
    pub paraphrase: String,
    /// 1-based rank the unit got (0 when the unit is unavailable).
    pub rank: usize,
    /// The units that took the top k instead.
    pub top: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitCoverage {
    pub unit: String,
    pub coverage_pct: f64,
    pub passed: bool,
    pub paraphrases: usize,
    /// hit@10 over the same paraphrases (§21.5.5; `coverage_critical` below 0.4).
    pub hit_at_10: f64,
    pub failed: Vec<FailedParaphrase>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageReport {
    pub passed: bool,
    pub k: usize,
    pub threshold: f64,
    pub units: Vec<UnitCoverage>,
    /// Units below the threshold, in manifest order.
    pub failing_units: Vec<String>,
}

fn r4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Run the gate over every unit of `m` (§21.8.3 steps 1–4).
pub fn run(m: &Manifest, facts: &dyn Facts, opts: &CoverageOptions) -> Result<CoverageReport, EngineError> {
    let corpus = Corpus::load(m, facts)?;
    let weights = opts.weights.unwrap_or_default();
    let k = opts.k.max(1);
    let mut units = Vec::new();
    for (i, e) in m.entries.iter().enumerate() {
        let seeds: Vec<String> = if e.load_triggers.intents.is_empty() { vec![e.description.clone()] } else { e.load_triggers.intents.clone() };
        let (mut total, mut hits, mut hits10) = (0usize, 0usize, 0usize);
        let mut failed = Vec::new();
        for seed in &seeds {
            for p in paraphrases(seed, PARAPHRASES_PER_INTENT) {
                total += 1;
                // Only units with a score are retrieved (as in `lid eval`): one the
                // paraphrase reaches not at all scores 0 and passes on no tie-break by name.
                let mut ranked = corpus.rank(&p, None, &weights, &[]);
                ranked.retain(|s| s.score > 0.0);
                let pos = ranked.iter().position(|s| s.index == i);
                if pos.map(|p| p < 10).unwrap_or(false) {
                    hits10 += 1;
                }
                match pos {
                    Some(p) if p < k => hits += 1,
                    _ => failed.push(FailedParaphrase {
                        seed: seed.clone(),
                        paraphrase: p,
                        rank: pos.map(|p| p + 1).unwrap_or(0),
                        top: ranked.iter().take(k).map(|s| s.name.clone()).collect(),
                    }),
                }
            }
        }
        let pct = if total == 0 { 0.0 } else { hits as f64 / total as f64 };
        units.push(UnitCoverage {
            unit: e.name.clone(),
            coverage_pct: r4(pct),
            passed: pct >= opts.threshold,
            paraphrases: total,
            hit_at_10: r4(if total == 0 { 0.0 } else { hits10 as f64 / total as f64 }),
            failed,
        });
    }
    let failing_units: Vec<String> = units.iter().filter(|u| !u.passed).map(|u| u.unit.clone()).collect();
    Ok(CoverageReport { passed: failing_units.is_empty(), k, threshold: opts.threshold, units, failing_units })
}

/// The generator's own synonym table: everyday verbs and nouns of work instructions.
/// Deliberately independent of the ranker's lexicon (§21.8.3 step 1).
const SYNONYMS: &[(&str, &str)] = &[
    ("add", "include"), ("allowed", "permitted"), ("answer", "reply to"), ("ask", "request"),
    ("begin", "start"), ("bug", "defect"), ("build", "compile"), ("call", "invoke"),
    ("change", "modify"), ("check", "verify"), ("choose", "pick"), ("close", "shut"),
    ("comment", "note"), ("create", "make"), ("delete", "remove"), ("do", "handle"),
    ("document", "write up"), ("done", "finished"), ("error", "failure"), ("finish", "complete"),
    ("fix", "repair"), ("get", "obtain"), ("give", "hand"), ("handle", "deal with"),
    ("help", "assist"), ("issue", "ticket"), ("job", "task"), ("keep", "retain"),
    ("look", "check"), ("make", "create"), ("mark", "flag"), ("need", "have to"),
    ("new", "fresh"), ("problem", "trouble"), ("read", "review"), ("record", "log"),
    ("report", "summary"), ("review", "inspect"), ("rule", "policy"), ("rules", "policies"),
    ("run", "execute"), ("save", "store"), ("send", "submit"), ("set", "configure"),
    ("show", "display"), ("start", "begin"), ("stop", "halt"), ("task", "job"),
    ("tell", "inform"), ("test", "check"), ("update", "refresh"), ("use", "apply"),
    ("wake", "start up"), ("work", "labor"), ("write", "author"), ("wrong", "incorrect"),
];

const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "to", "of", "do", "does", "i", "my", "me", "is", "are", "be", "it", "that", "this", "how", "what", "should", "can", "for", "on", "in", "with",
];

const CONTEXTS: &[&str] = &["before going further,", "quick question:", "for the current task,", "right now", "as part of this heartbeat,"];

const QUESTION_OPENERS: &[&str] = &["how do i ", "how should i ", "what do i ", "what should i ", "when do i ", "where do i ", "can i ", "should i ", "do i ", "how to ", "what is ", "what are ", "which "];

fn words(s: &str) -> Vec<String> {
    s.split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '?' | '!' | '.' | ',' | ';' | ':')).to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

const PARTICLES: &[&str] = &["out", "up", "off", "in", "on", "over", "back", "down", "through"];

/// Words after which a word is a noun, not a verb: "my change", "a run", "the review".
const NOUN_MARKERS: &[&str] = &[
    "a", "an", "the", "my", "your", "our", "their", "his", "her", "its", "this", "that", "these", "those", "each", "every", "any", "some", "no", "another", "of", "on", "in",
    "for", "per", "first", "last", "next", "new", "big", "small", "whole",
];

/// Subject pronouns: "do" before one is the auxiliary ("what do we have"), not "handle".
const SUBJECTS: &[&str] = &["i", "we", "you", "they", "he", "she", "it", "people", "someone"];

/// Table entries whose replacement is a verb only: swapped where the word is a verb, not
/// in noun position ("store progress on a run" stays; "run the tests" → "execute").
const VERB_ONLY: &[&str] = &[
    "add", "answer", "ask", "begin", "build", "call", "change", "check", "choose", "close", "create", "delete", "do", "document", "finish", "fix", "get", "give", "handle",
    "help", "keep", "look", "make", "mark", "need", "read", "review", "run", "save", "send", "set", "show", "start", "stop", "tell", "update", "use", "wake", "write",
];

fn verb_position(ws: &[String], i: usize) -> bool {
    let lw = ws[i].to_lowercase();
    let prev = i.checked_sub(1).map(|j| ws[j].to_lowercase()).unwrap_or_default();
    let next = ws.get(i + 1).map(|n| n.to_lowercase()).unwrap_or_default();
    if NOUN_MARKERS.contains(&prev.as_str()) || prev.ends_with("'s") {
        return false;
    }
    // the auxiliary "do"/"does" before its subject, and "to do"-less questions
    !(matches!(lw.as_str(), "do" | "does") && SUBJECTS.contains(&next.as_str()))
}

fn synonym_swap(ws: &[String], max: usize, skip: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(ws.len());
    let mut swapped = 0;
    let mut seen = 0;
    for (i, w) in ws.iter().enumerate() {
        let lw = w.to_lowercase();
        let next = ws.get(i + 1).map(|n| n.to_lowercase()).unwrap_or_default();
        if swapped < max {
            if let Some((_, s)) = SYNONYMS.iter().find(|(a, _)| *a == lw) {
                // Leave phrasal verbs ("check out", "wake up") whole: swapping their verb
                // alone makes nonsense ("verify out", "start up up").
                let phrasal = PARTICLES.contains(&next.as_str()) || s.rsplit(' ').next() == Some(next.as_str());
                let misplaced = VERB_ONLY.contains(&lw.as_str()) && !verb_position(ws, i);
                if !phrasal && !misplaced {
                    seen += 1;
                    if seen > skip {
                        out.push(s.to_string());
                        swapped += 1;
                        continue;
                    }
                }
            }
        }
        out.push(w.clone());
    }
    out
}

/// Join words into a paraphrase, fixing the indefinite article after substitutions
/// ("a issue" -> "an issue", "an ticket" -> "a ticket").
fn join(ws: &[String]) -> String {
    let mut out: Vec<String> = ws.to_vec();
    for i in 0..out.len().saturating_sub(1) {
        let next = out[i + 1].to_lowercase();
        // by sound where the letter misleads: "a unit", "a user", "an hour"
        let starts_with_vowel = if ["uni", "use", "usu", "uti", "eu", "one", "once"].iter().any(|p| next.starts_with(p)) {
            false
        } else if ["hour", "honest", "honor", "honour"].iter().any(|p| next.starts_with(p)) {
            true
        } else {
            next.starts_with(['a', 'e', 'i', 'o', 'u'])
        };
        match out[i].as_str() {
            "a" if starts_with_vowel => out[i] = "an".into(),
            "an" if !starts_with_vowel => out[i] = "a".into(),
            _ => {}
        }
    }
    out.join(" ")
}

/// Gerund of a verb by common English spelling rules (check → checking, make → making, run → running).
pub fn gerund(v: &str) -> String {
    let v = v.to_lowercase();
    if v.ends_with("ie") {
        return format!("{}ying", &v[..v.len() - 2]);
    }
    if v.ends_with('e') && !v.ends_with("ee") && v.len() > 2 {
        return format!("{}ing", &v[..v.len() - 1]);
    }
    let b = v.as_bytes();
    let n = b.len();
    let vowel = |c: u8| b"aeiou".contains(&c);
    // a final consonant after a single vowel doubles in one syllable (ship → shipping,
    // wrap → wrapping) and in the verbs stressed on their last syllable (commit, format)
    let groups = b.iter().enumerate().filter(|&(i, &c)| vowel(c) && (i == 0 || !vowel(b[i - 1]))).count();
    const STRESSED_LAST: &[&str] = &["commit", "submit", "admit", "permit", "omit", "emit", "format", "refer", "prefer", "occur", "forget", "begin", "control", "upset", "regret", "rebut", "equip", "unwrap", "abet"];
    let cvc = n >= 3 && !vowel(b[n - 3]) && vowel(b[n - 2]) && !vowel(b[n - 1]) && !b"wxy".contains(&b[n - 1]);
    if cvc && (groups == 1 || STRESSED_LAST.contains(&v.as_str())) {
        return format!("{v}{}ing", b[n - 1] as char);
    }
    format!("{v}ing")
}

const QUESTION_WORDS: &[&str] = &["who", "whom", "whose", "why", "what", "when", "where", "which", "how", "is", "are", "can", "could", "should", "do", "does", "will", "would"];

fn is_question(lower: &str) -> bool {
    lower.ends_with('?')
        || QUESTION_OPENERS.iter().any(|q| lower.starts_with(q))
        || lower.split_whitespace().next().is_some_and(|w| QUESTION_WORDS.contains(&w))
}

fn strip_opener(lower: &str) -> String {
    for q in QUESTION_OPENERS {
        if let Some(rest) = lower.strip_prefix(q) {
            return rest.trim_end_matches('?').to_string();
        }
    }
    lower.trim_end_matches('?').to_string()
}

/// Openers after which a question asks for a thing, not a procedure ("what is my job"):
/// its rest is a noun phrase, which "i need to …" would not take.
const NOMINAL_OPENERS: &[&str] = &["what is ", "what are ", "which "];

fn flip_mood(lower: &str) -> String {
    if is_question(lower) {
        let rest = strip_opener(lower);
        if rest == lower.trim_end_matches('?') {
            // A question without a procedural opener ("who should own this task?").
            format!("tell me {rest}")
        } else if NOMINAL_OPENERS.iter().any(|o| lower.starts_with(o)) {
            format!("i need to know {}", lower.trim_end_matches('?'))
        } else {
            format!("i need to {rest}")
        }
    } else {
        format!("how do i {}?", lower.trim_end_matches(['.', '!']))
    }
}

fn reorder(ws: &[String]) -> Vec<String> {
    // Swap the clauses around a coordinating or temporal connective; else move the head verb to the end.
    for conn in ["and", "when", "before", "after", "because", "while", "for", "with"] {
        if let Some(p) = ws.iter().position(|w| w.eq_ignore_ascii_case(conn)) {
            if p > 0 && p + 1 < ws.len() {
                let mut out: Vec<String> = ws[p + 1..].to_vec();
                out.push(conn.to_string());
                out.extend_from_slice(&ws[..p]);
                return out;
            }
        }
    }
    if ws.len() > 2 {
        let mut out = ws[1..].to_vec();
        out.push(ws[0].clone());
        return out;
    }
    ws.to_vec()
}

fn telegraphic(ws: &[String]) -> Vec<String> {
    let kept: Vec<String> = ws.iter().filter(|w| !FUNCTION_WORDS.contains(&w.to_lowercase().as_str())).cloned().collect();
    if kept.is_empty() {
        ws.to_vec()
    } else {
        kept
    }
}

/// Words that open a clause without being its verb: question words, pronouns,
/// determiners and common adjectives ("who should own", "old open items").
const NOT_VERBS: &[&str] = &[
    "who", "whom", "whose", "why", "what", "when", "where", "which", "how", "whether", "if", "my", "our", "your", "their", "his", "her", "its", "we", "you", "they", "he",
    "she", "someone", "each", "every", "all", "any", "some", "no", "not", "old", "new", "open", "good", "bad", "best", "first", "last", "next", "other", "same", "own",
    "big", "small", "long", "short", "high", "low", "red", "green", "safe", "unsafe", "public", "private", "internal", "external",
];

fn ing_form(ws: &[String], acronyms: &[String]) -> Vec<String> {
    // "check out an issue and start work" -> "checking out an issue and starting work";
    // a clause that does not open with a verb ("who should own", "deprecated code",
    // "NDA red flags") keeps its words
    let mut out = Vec::with_capacity(ws.len());
    let mut next_is_verb = true;
    for w in ws {
        let lw = w.to_lowercase();
        let plural = lw.ends_with('s') && !lw.ends_with("ss") && !lw.ends_with("us");
        let verb_like = !NOT_VERBS.contains(&lw.as_str()) && !lw.ends_with("ed") && !plural && lw.len() > 1 && !acronyms.contains(&lw);
        if next_is_verb && !verb_like {
            next_is_verb = FUNCTION_WORDS.contains(&lw.as_str()) && !NOT_VERBS.contains(&lw.as_str());
            out.push(w.clone());
            continue;
        }
        if next_is_verb && !FUNCTION_WORDS.contains(&lw.as_str()) && lw.chars().all(|c| c.is_ascii_alphabetic()) && !lw.ends_with("ing") {
            out.push(gerund(&lw));
            next_is_verb = false;
        } else {
            out.push(w.clone());
        }
        if lw == "and" || lw == "then" {
            next_is_verb = true;
        }
    }
    out
}

/// `n` distinct deterministic paraphrases of `seed` (never the seed itself).
pub fn paraphrases(seed: &str, n: usize) -> Vec<String> {
    let lower = seed.trim().to_lowercase();
    let base = words(&strip_opener(&lower));
    // words the seed writes in capitals ("NDA"): names, never verbs to inflect
    let acronyms: Vec<String> = words(seed).into_iter().filter(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()) && w.chars().any(|c| c.is_ascii_uppercase())).map(|w| w.to_lowercase()).collect();
    let j = |v: Vec<String>| join(&v);
    // after "what is …" comes a thing, not something to do: no verb to inflect
    let nominal = NOMINAL_OPENERS.iter().any(|o| lower.starts_with(o));
    let inflect = |ws: Vec<String>| if nominal { ws } else { ing_form(&ws, &acronyms) };
    let asked = is_question(&lower);
    let mut cands: Vec<String> = vec![
        // 1. question <-> imperative, with added context
        format!("{} {}", CONTEXTS[0], flip_mood(&lower)),
        // 2. synonyms
        j(synonym_swap(&base, 2, 0)),
        // 3. function words dropped + inflection
        j(inflect(telegraphic(&base))),
        // 4. word order
        j(reorder(&base)),
        // 5. synonyms (later ones) + question + context
        format!("{} {}", CONTEXTS[1], flip_mood(&j(synonym_swap(&if asked { words(&lower) } else { base.clone() }, 1, 1)))),
        // spares, used when an earlier form collapses into a duplicate
        format!("{} {}", j(inflect(base.clone())), CONTEXTS[3]),
        format!("{} {}", CONTEXTS[2], j(telegraphic(&synonym_swap(&base, 3, 0)))),
        format!("{} {}", CONTEXTS[4], j(reorder(&synonym_swap(&base, 1, 0)))),
        format!("what is the procedure to {}", j(base.clone())),
    ];
    let mut out: Vec<String> = Vec::with_capacity(n);
    for c in cands.drain(..) {
        let c = c.split_whitespace().collect::<Vec<_>>().join(" ");
        if out.len() == n {
            break;
        }
        if !c.is_empty() && c != lower && !out.contains(&c) {
            out.push(c);
        }
    }
    let mut i = 0;
    while out.len() < n {
        let c = format!("{} {lower} ({})", CONTEXTS[i % CONTEXTS.len()], i + 1);
        if !out.contains(&c) {
            out.push(c);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §21.8.3: a unit passes when recall puts it in the top k, so one its own paraphrases
    /// reach not at all (every unit scores 0) fails, whatever its name: the tie-break by
    /// name used to pass `aardvark` and fail `zz-aardvark`.
    #[test]
    fn a_unit_nothing_reaches_fails_whatever_its_name() {
        use crate::store::{Fact, MemoryFacts};
        for name in ["aardvark", "zz-aardvark"] {
            let e = |n: &str, intent: &str, kw: &str| {
                serde_json::json!({"name": n, "description": format!("The {n} unit."), "required_by_task_types": [], "guarantee_load": false,
                    "load_triggers": {"intents": [intent], "keywords": [kw], "task_types": []},
                    "fact_uri": format!("instruction:acme/eng/{n}/v1"), "path": null, "token_estimate": 20})
            };
            let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1",
                "entries": [e(name, "what should I do about it", "zq"), e("deploys", "roll back a failed deploy", "rollback")]});
            let mut facts = MemoryFacts::new();
            for (n, text) in [(name, "Qzx vwk."), ("deploys", "Roll back a failed deploy with the release tool.")] {
                facts.insert(Fact { uri: format!("instruction:acme/eng/{n}/v1"), content: text.into(), version: "v1".into(), ..Fact::default() });
            }
            let m = crate::manifest::parse(&m.to_string()).unwrap();
            let r = run(&m, &facts, &CoverageOptions::default()).unwrap();
            let u = r.units.iter().find(|u| u.unit == name).unwrap();
            assert_eq!((u.coverage_pct, u.passed), (0.0, false), "{name}: {u:?}");
            assert!(u.failed.iter().all(|f| f.rank == 0), "{name}: never retrieved: {u:?}");
            assert!(r.units.iter().find(|u| u.unit == "deploys").unwrap().passed);
        }
    }

    #[test]
    fn five_distinct_deterministic_paraphrases() {
        for seed in ["check out an issue and start work", "what do I do when I wake up", "format a comment", "x", "How do I finish a task properly?"] {
            let a = paraphrases(seed, 5);
            assert_eq!(a.len(), 5, "{seed}: {a:?}");
            let set: std::collections::BTreeSet<_> = a.iter().collect();
            assert_eq!(set.len(), 5, "{seed}: {a:?}");
            assert!(!a.iter().any(|p| p == &seed.to_lowercase()));
            assert_eq!(a, paraphrases(seed, 5), "deterministic");
        }
    }

    #[test]
    fn paraphrases_vary_lexically_and_syntactically() {
        let p = paraphrases("check out an issue and start work", 5);
        assert!(p[0].contains("how do i"), "question form: {p:?}");
        assert!(p[1].contains("verify") || p[1].contains("ticket") || p[1].contains("begin"), "synonyms: {p:?}");
        assert!(p[2].contains("checking") && !p[2].contains(" an "), "telegraphic + inflection: {p:?}");
        assert!(p[3].starts_with("start work"), "word order: {p:?}");
        let q = paraphrases("what do I do when I wake up", 5);
        assert!(q[0].contains("i need to"), "question becomes imperative: {q:?}");
    }

    #[test]
    fn paraphrases_stay_grammatical() {
        let all = [paraphrases("who should own this task?", 5), paraphrases("check out an issue and start work", 5), paraphrases("what do I do when I wake up", 5), paraphrases("escalate an issue", 5)].concat();
        for p in &all {
            assert!(!p.contains("how do i who"), "question wrapped in a question: {p}");
            assert!(!p.contains("verify out"), "phrasal verb split: {p}");
            assert!(!p.contains("up up"), "doubled particle: {p}");
            assert!(!p.contains("an ticket") && !p.contains(" a issue"), "article agreement: {p}");
        }
    }

    #[test]
    fn gerunds() {
        for (verb, ing) in [("make", "making"), ("run", "running"), ("check", "checking"), ("tie", "tying"), ("see", "seeing"), ("ship", "shipping"), ("wrap", "wrapping"),
            ("stop", "stopping"), ("format", "formatting"), ("commit", "committing"), ("open", "opening"), ("edit", "editing"), ("fix", "fixing"), ("review", "reviewing"), ("plan", "planning")] {
            assert_eq!(gerund(verb), ing);
        }
    }

    /// The audit's garbled paraphrases: question words, nouns and adjectives made
    /// gerunds, verb synonyms swapped into noun or auxiliary position, "an unit".
    #[test]
    fn paraphrases_inflect_and_swap_only_verbs() {
        let seeds = ["who should own this task", "what is my job", "old open items", "NDA red flags", "deprecated code", "store progress on a run", "what agreements do we have",
            "hand off a review", "how big should my change be", "write a unit check", "ship a release", "wrap up the task"];
        let all: Vec<String> = seeds.iter().flat_map(|s| paraphrases(s, 5)).collect();
        for bad in ["whoing", "jobbing", "olding", "ndaing", "deprecateding", "shiping", "wraping", "on a execute", "on an execute", "handle we", "an inspect", "my modify", "an unit", "i need to my job"] {
            assert!(!all.iter().any(|p| p.contains(bad)), "{bad:?} in {all:#?}");
        }
        let ship = paraphrases("ship a release", 5);
        assert!(ship.iter().any(|p| p.contains("shipping")), "{ship:?}");
        let run = paraphrases("run the tests before you merge", 5);
        assert!(run.iter().any(|p| p.contains("execute")), "a verb in verb position is still swapped: {run:?}");
    }

    /// A manifest of `units` (name, intents, description, content) and its facts, gated.
    fn gate(units: &[(&str, &[&str], &str, &str)], opts: &CoverageOptions) -> CoverageReport {
        use crate::store::{Fact, MemoryFacts};
        let entries: Vec<serde_json::Value> = units
            .iter()
            .map(|(n, intents, d, _)| {
                serde_json::json!({"name": n, "description": d, "required_by_task_types": [], "guarantee_load": false,
                    "load_triggers": {"intents": intents, "keywords": [], "task_types": []},
                    "fact_uri": format!("instruction:acme/eng/{n}/v1"), "path": null, "token_estimate": 20})
            })
            .collect();
        let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1", "entries": entries});
        let mut facts = MemoryFacts::new();
        for (n, _, _, text) in units {
            facts.insert(Fact { uri: format!("instruction:acme/eng/{n}/v1"), content: text.to_string(), version: "v1".into(), ..Fact::default() });
        }
        run(&crate::manifest::parse(&m.to_string()).unwrap(), &facts, opts).unwrap()
    }

    const KEYS: &str = "rotate the signing keys";

    /// Eleven identical units (`copy-a` … `copy-k`): every paraphrase of their intent scores
    /// them alike, so they rank in name order, `copy-a` first and `copy-k` eleventh.
    fn copies() -> Vec<(String, &'static [&'static str], &'static str, &'static str)> {
        ('a'..='k').map(|c| (format!("copy-{c}"), &[KEYS][..], "Key rotation.", "Rotate the signing keys every quarter.")).collect()
    }

    fn gate_copies(extra: &[(&str, &[&str], &str, &str)], opts: &CoverageOptions) -> CoverageReport {
        let copies = copies();
        let mut units: Vec<(&str, &[&str], &str, &str)> = copies.iter().map(|(n, i, d, c)| (n.as_str(), *i, *d, *c)).collect();
        units.extend_from_slice(extra);
        gate(&units, opts)
    }

    /// §21.8.3: a host that sends no `k` or threshold gets the spec's: top 3, 80%.
    #[test]
    fn options_left_out_are_the_specs_top_3_and_80_percent() {
        let o: CoverageOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(o, CoverageOptions::default());
        assert_eq!((o.k, o.threshold), (3, 0.80));
        let o: CoverageOptions = serde_json::from_str(r#"{"k": 5}"#).unwrap();
        assert_eq!((o.k, o.threshold), (5, 0.80));
        let o: CoverageOptions = serde_json::from_str(r#"{"threshold": 0.9}"#).unwrap();
        assert_eq!((o.k, o.threshold), (3, 0.9));
    }

    /// §21.8.3 steps 2–4 at the cut-off: a unit ranked third is in the top 3 for every
    /// paraphrase and passes; one ranked fourth is in it for none and fails, each miss
    /// naming its paraphrase, its rank and the three units above it.
    #[test]
    fn a_unit_ranked_third_passes_and_one_ranked_fourth_fails_naming_the_top_three() {
        let r = gate_copies(&[], &CoverageOptions::default());
        let unit = |n: &str| r.units.iter().find(|u| u.unit == n).unwrap();
        let third = unit("copy-c");
        assert_eq!((third.coverage_pct, third.passed, third.paraphrases, third.failed.len()), (1.0, true, 5, 0), "{third:?}");
        let fourth = unit("copy-d");
        assert_eq!((fourth.coverage_pct, fourth.passed, fourth.paraphrases), (0.0, false, 5), "{fourth:?}");
        assert_eq!(fourth.failed.iter().map(|f| f.paraphrase.clone()).collect::<Vec<_>>(), paraphrases(KEYS, PARAPHRASES_PER_INTENT));
        for f in &fourth.failed {
            assert_eq!((f.seed.as_str(), f.rank, f.top.clone()), (KEYS, 4, vec!["copy-a".to_string(), "copy-b".into(), "copy-c".into()]), "{f:?}");
        }
        assert_eq!((r.k, r.threshold, r.passed), (3, 0.80, false));
        assert_eq!(r.failing_units, ["copy-d", "copy-e", "copy-f", "copy-g", "copy-h", "copy-i", "copy-j", "copy-k"], "in manifest order");
    }

    /// hit@10 (§21.5.5) counts the paraphrases that put the unit in the first ten.
    #[test]
    fn hit_at_10_counts_a_unit_ranked_tenth_and_not_one_ranked_eleventh() {
        let r = gate_copies(&[], &CoverageOptions::default());
        let unit = |n: &str| r.units.iter().find(|u| u.unit == n).unwrap();
        assert_eq!((unit("copy-j").hit_at_10, unit("copy-j").failed[0].rank), (1.0, 10));
        assert_eq!((unit("copy-k").hit_at_10, unit("copy-k").failed[0].rank), (0.0, 11));
        assert_eq!(unit("copy-a").hit_at_10, 1.0);
    }

    /// A `k` of 0 would fail every unit: it is taken as 1.
    #[test]
    fn a_k_of_0_is_taken_as_1() {
        let r = gate_copies(&[], &CoverageOptions { k: 0, ..CoverageOptions::default() });
        assert_eq!(r.k, 1);
        assert!(r.units[0].passed, "{:?}", r.units[0]);
        let second = &r.units[1];
        assert!(!second.passed);
        assert!(second.failed.iter().all(|f| f.rank == 2 && f.top == ["copy-a"]), "{second:?}");
    }

    /// §21.8.3 step 3: `coverage_pct` is the share of the unit's paraphrases (five per
    /// intent) that put it in the top k, reported to four places; a unit exactly at the
    /// threshold passes (step 4 rejects below it).
    #[test]
    fn coverage_is_the_share_of_paraphrases_in_the_top_k_and_the_threshold_itself_passes() {
        let units: &[(&str, &[&str], &str, &str)] = &[
            ("mixed", &[KEYS, "water the office plants"], "Mixed.", "Rotate the signing keys every quarter. Water the office plants on Mondays."),
            ("mixed3", &[KEYS, "order printer toner", "book the meeting room"], "Mixed.", "Rotate the signing keys every quarter. Order printer toner from the supplier. Book the meeting room a day ahead."),
        ];
        let half = CoverageOptions { threshold: 0.5, ..CoverageOptions::default() };
        let r = gate_copies(units, &half);
        let got: Vec<(&str, usize, f64, f64, bool, usize)> =
            r.units[11..].iter().map(|u| (u.unit.as_str(), u.paraphrases, u.coverage_pct, u.hit_at_10, u.passed, u.failed.len())).collect();
        assert_eq!(got, [("mixed", 10, 0.5, 0.5, true, 5), ("mixed3", 15, 0.6667, 0.6667, true, 5)]);
        let r = gate_copies(units, &CoverageOptions::default());
        assert!(r.failing_units.ends_with(&["mixed".to_string(), "mixed3".into()]), "{:?}", r.failing_units);
    }

    /// A unit without intents is gated on its description (five paraphrases of it); a
    /// manifest whose every unit passes passes.
    #[test]
    fn a_unit_without_intents_is_gated_on_its_description_and_a_manifest_of_passing_units_passes() {
        let r = gate(
            &[
                ("leave", &[], "How to request vacation leave from your manager", "Ask your manager for vacation leave two weeks ahead."),
                ("deploys", &["roll back a failed deploy"], "Roll back deploys.", "Roll back a failed deploy with the release tool."),
            ],
            &CoverageOptions::default(),
        );
        assert_eq!(r.units.iter().map(|u| (u.unit.as_str(), u.paraphrases, u.passed)).collect::<Vec<_>>(), [("leave", 5, true), ("deploys", 5, true)]);
        assert!(r.passed && r.failing_units.is_empty(), "{r:?}");
    }


    /// The synonym paraphrase (the second) swaps the first two swappable words; the fifth
    /// swaps one, skipping the first: "fix the bug and update the test" has three.
    #[test]
    fn the_synonym_paraphrases_swap_two_words_and_then_one_after_the_first() {
        let p = paraphrases("fix the bug and update the test", 5);
        assert_eq!(p[1], "repair the defect and update the test", "{p:?}");
        assert_eq!(p[4], "quick question: how do i fix the defect and update the test?", "{p:?}");
    }

    /// "do" is the auxiliary only before its subject ("what do we have"): as the verb it
    /// is swapped ("handle"), and another verb before a pronoun is swapped too.
    #[test]
    fn do_as_a_verb_and_a_verb_before_a_pronoun_are_swapped() {
        assert_eq!(paraphrases("do the backups", 5)[1], "handle the backups");
        assert_eq!(paraphrases("fix it now", 5)[1], "repair it now");
    }

    /// A swap that puts a vowel after "a" makes it "an" ("a wrong answer" -> "an incorrect answer").
    #[test]
    fn a_becomes_an_before_a_swapped_in_vowel() {
        assert_eq!(paraphrases("fix a wrong answer", 5)[1], "repair an incorrect answer");
        assert_eq!(join(&["a".into(), "incorrect".into(), "an".into(), "ticket".into()]), "an incorrect a ticket");
    }

    /// A two-letter verb keeps its "e" ("be" -> "being", not "bing").
    #[test]
    fn a_two_letter_verb_keeps_its_e() {
        assert_eq!(gerund("be"), "being");
    }

    /// A sentence ending in "?" is a question even without a question word: it is turned
    /// into an imperative, not wrapped in "how do i …?".
    #[test]
    fn a_question_mark_alone_makes_a_question() {
        assert_eq!(paraphrases("deploys on friday?", 5)[0], "before going further, tell me deploys on friday");
    }


    /// The inflected form makes a gerund of each clause's verb only: the first word and
    /// the one after "and"/"then" (or after a function word such as "does"), never a
    /// noun, a plural, a one-letter word or a word after a non-verb opener.
    #[test]
    fn only_the_verb_of_each_clause_is_made_a_gerund() {
        for (seed, want) in [
            ("fix the bug and update the docs", "fixing the bug and updating the docs"),
            ("build then deploy", "building then deploying"),
            ("does check out", "does checking out"),
            ("access the dashboard", "accessing the dashboard"),
            ("focus the review", "focusing the review"),
            ("releases need a changelog", "releases need a changelog"),
            ("x marks the spot", "x marks the spot"),
        ] {
            assert_eq!(ing_form(&words(seed), &[]).join(" "), want, "{seed}");
        }
        // a capitalised word is no acronym: "Deploy" is still a verb
        let p = paraphrases("Deploy the release", 5);
        assert!(p.contains(&"deploying release".to_string()), "{p:?}");
    }

    /// The word-order paraphrase swaps the clauses around a connective in the middle;
    /// one at the start or the end is no clause boundary, and then (from three words on)
    /// the head verb moves to the end.
    #[test]
    fn word_order_swaps_clauses_only_around_a_connective_inside_the_seed() {
        let r = |s: &str| reorder(&words(s)).join(" ");
        assert_eq!(r("roll back when deploys fail"), "deploys fail when roll back");
        assert_eq!(r("when deploys fail roll back"), "deploys fail roll back when");
        assert_eq!(r("when tests fail check the logs before merging"), "merging before when tests fail check the logs");
        assert_eq!(r("clean up after"), "up after clean");
        assert_eq!(r("fix all bugs"), "all bugs fix");
        assert_eq!(r("fix bugs"), "fix bugs");
    }


    /// More paraphrases than the generator has forms still come out distinct, and never
    /// the seed: the rest are the seed in numbered contexts.
    #[test]
    fn more_paraphrases_than_forms_are_still_distinct() {
        let p = paraphrases("fix the bug", 12);
        assert_eq!(p.len(), 12, "{p:?}");
        assert_eq!(p.iter().collect::<std::collections::BTreeSet<_>>().len(), 12, "{p:?}");
        assert!(!p.contains(&"fix the bug".to_string()));
        assert_eq!(p[9..], ["before going further, fix the bug (1)", "quick question: fix the bug (2)", "for the current task, fix the bug (3)"], "{p:?}");
    }
}
