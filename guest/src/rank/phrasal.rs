//! Phrasal verbs and idioms of workplace English, read on the query side of recall
//! ranking (§21.3.3).
//!
//! People ask in phrases whose words say nothing of what they mean: "kick this
//! upstairs" is to escalate, "send back" a reply, "loop in" a notification, "sign off"
//! an approval. Neither the word-level [`super::lexicon`] nor the [`super::thesaurus`]
//! can see them, since each word alone ("kick", "send", "loop") means something else,
//! and instruction documents name the idea with its plain word. Each entry below maps
//! one such phrase to the plain words documents use for it; the ranker adds those words
//! to the intent at [`PHRASE_WEIGHT`] (the phrase's own words stay: counting them less
//! made no difference on our probe sets). The phrases are general usage across offices, support desks,
//! operations and software teams, not any evaluation set's wording.
//!
//! Matching is by Porter stem, in order, with up to [`GAP`] other words between two
//! words of a phrase ("kick *this* upstairs", "wind *the escalation* back"), so the
//! table is written out in stems ([`STEMMED`], checked against [`PHRASES`] by a test) and
//! no instance stems it on its first recall.

#[cfg(test)]
use super::stem::stem;

/// Weight of a phrase's plain words in the query, relative to the intent's own words.
pub const PHRASE_WEIGHT: f64 = 0.8;
/// Most other words allowed between two consecutive words of a phrase.
pub const GAP: usize = 2;

/// Phrases (words separated by spaces; `a|b` for alternative forms of one word, e.g.
/// irregular past tenses the stemmer keeps apart) and the plain words they stand for.
#[cfg_attr(not(test), allow(dead_code))]
const PHRASES: &[(&str, &[&str])] = &[
    // raising a matter to someone more senior
    ("kick|kicked upstairs", &["escalate", "escalation"]),
    ("kick|kicked up", &["escalate", "escalation"]),
    ("send|sent up", &["escalate", "escalation"]),
    ("bump|bumped up", &["escalate", "escalation"]),
    ("pass|passed up", &["escalate", "escalation"]),
    ("push|pushed up", &["escalate", "escalation"]),
    ("up the chain", &["escalate", "escalation"]),
    ("chain of command", &["escalate", "escalation"]),
    ("go|went over head", &["escalate", "escalation"]),
    // undoing an escalation, standing down
    ("wind|wound down", &["deescalate", "deescalation"]),
    ("wind|wound back", &["deescalate", "deescalation"]),
    ("walk back", &["deescalate", "deescalation", "retract"]),
    ("stand|stood down", &["deescalate", "deescalation"]),
    ("call|called off", &["cancel"]),
    // answering someone
    ("send|sent back", &["reply", "response"]),
    ("write|wrote back", &["reply", "response"]),
    ("get|got back to", &["reply", "response"]),
    ("opening message", &["reply", "response", "initial"]),
    ("first message", &["reply", "response", "initial"]),
    // documents and their shape
    ("write|wrote up", &["writeup", "report", "template"]),
    ("one pager", &["brief", "summary", "template"]),
    // owning, assigning and passing on work
    ("pick|picks|picked up", &["assign", "owner"]),
    ("take|takes|took on", &["assign", "owner"]),
    ("take|takes|took over", &["assign", "owner", "handoff"]),
    ("in charge", &["owner", "responsible"]),
    ("on the hook", &["owner", "responsible", "accountable"]),
    ("hand|handed off", &["handoff", "delegate"]),
    ("hand|handed over", &["handoff", "delegate"]),
    ("pass|passed on", &["handoff", "delegate"]),
    ("pass|passed along", &["handoff", "delegate"]),
    // keeping others informed, coming back to things
    ("loop|looped in", &["notify", "inform", "involve"]),
    ("heads up", &["notify", "inform", "warn"]),
    ("keep posted", &["notify", "update", "inform"]),
    ("follow|followed up", &["followup", "remind"]),
    ("check|checked in", &["followup", "status"]),
    ("circle|circled back", &["followup", "revisit"]),
    ("chase|chased up", &["followup", "remind"]),
    ("keep track", &["track", "monitor"]),
    ("keep tabs", &["track", "monitor"]),
    // deciding and approving
    ("sign|signed off", &["approve", "approval"]),
    ("green light", &["approve", "approval"]),
    ("turn|turned down", &["reject", "decline"]),
    // finding out and fixing
    ("look|looked into", &["investigate", "research"]),
    ("dig|dug into", &["investigate", "research"]),
    ("figure|figured out", &["determine", "investigate"]),
    ("find|found out", &["determine", "investigate"]),
    ("track|tracked down", &["find", "investigate"]),
    ("root cause", &["cause", "diagnose"]),
    ("sort|sorted out", &["resolve", "fix"]),
    ("iron|ironed out", &["resolve", "fix"]),
    ("make sure", &["ensure", "verify"]),
    ("double check", &["verify", "check"]),
    // starting, stopping, putting off
    ("kick|kicked off", &["start", "begin"]),
    ("spin|spun up", &["start", "launch", "create"]),
    ("fire|fired up", &["start", "launch"]),
    ("shut|shuts down", &["shutdown", "stop"]),
    ("tear|tore down", &["remove", "teardown"]),
    ("put|puts on hold", &["pause", "defer"]),
    ("on hold", &["pause", "defer", "blocked"]),
    ("hold|held off", &["defer", "postpone", "wait"]),
    ("put|puts off", &["defer", "postpone"]),
    ("back burner", &["defer", "deprioritize"]),
    ("go|goes live", &["release", "launch", "deploy"]),
    ("roll|rolled out", &["rollout", "release", "deploy"]),
    ("roll|rolled back", &["rollback", "revert"]),
    // removing, recording, setting up
    ("get|got rid", &["remove", "delete"]),
    ("clean|cleaned up", &["cleanup", "remove"]),
    ("throw|threw away", &["discard", "delete"]),
    ("rip|ripped out", &["remove", "delete"]),
    ("write|wrote down", &["record", "note"]),
    ("jot|jotted down", &["record", "note"]),
    ("note|noted down", &["record", "note"]),
    ("set|sets up", &["setup", "configure"]),
    ("log|logged in", &["login", "authenticate"]),
    ("sign|signed in", &["login", "authenticate"]),
    ("back|backed up", &["backup"]),
    ("break|broke down", &["breakdown", "split"]),
    // switching, connecting and failing over (technical usage)
    ("turn|turned on", &["enable", "activate"]),
    ("turn|turned off", &["disable", "deactivate"]),
    ("switch|switched on", &["enable", "activate"]),
    ("switch|switched off", &["disable", "deactivate"]),
    ("hang|hung up", &["disconnect"]),
    ("hook|hooked up", &["connect", "integrate"]),
    ("boot|booted up", &["start", "startup"]),
    ("time|timed out", &["timeout"]),
    ("fall|falls|fell back", &["fallback", "default"]),
    ("log|logged out", &["logout"]),
    ("sign|signed up", &["signup", "register"]),
    ("look|looked up", &["lookup", "search", "find"]),
    // being short of something, falling behind
    ("run|ran out", &["exhausted", "limit"]),
    ("used up", &["exhausted", "limit", "spent"]),
    ("burn|burned|burnt through", &["spent", "exhausted"]),
    ("fall|fell behind", &["delay", "overdue", "late"]),
    ("slip|slipped through the cracks", &["missed", "overlooked"]),
    ("out of date", &["stale", "outdated"]),
    ("up to date", &["current", "sync"]),
];

/// [`PHRASES`] with every alternative spelled out, in Porter stems, sorted by first stem:
/// `(stems, index into PHRASES)`. Regenerate with
/// `cargo test -p lid-core --lib regenerate_phrase_table -- --ignored`.
const STEMMED: &[(&[&str], u16)] = &[
    (&["back", "burner"], 61),
    (&["back", "up"], 75),
    (&["boot", "up"], 83),
    (&["break", "down"], 76),
    (&["broke", "down"], 76),
    (&["bump", "up"], 3),
    (&["burn", "through"], 91),
    (&["burnt", "through"], 91),
    (&["call", "off"], 13),
    (&["chain", "of", "command"], 7),
    (&["chase", "up"], 36),
    (&["check", "in"], 34),
    (&["circl", "back"], 35),
    (&["clean", "up"], 66),
    (&["dig", "into"], 43),
    (&["doubl", "check"], 51),
    (&["dug", "into"], 43),
    (&["fall", "back"], 85),
    (&["fall", "behind"], 92),
    (&["fell", "back"], 85),
    (&["fell", "behind"], 92),
    (&["figur", "out"], 44),
    (&["find", "out"], 45),
    (&["fire", "up"], 54),
    (&["first", "messag"], 18),
    (&["follow", "up"], 33),
    (&["found", "out"], 45),
    (&["get", "back", "to"], 16),
    (&["get", "rid"], 65),
    (&["go", "live"], 62),
    (&["go", "over", "head"], 8),
    (&["goe", "live"], 62),
    (&["got", "back", "to"], 16),
    (&["got", "rid"], 65),
    (&["green", "light"], 40),
    (&["hand", "off"], 26),
    (&["hand", "over"], 27),
    (&["hang", "up"], 81),
    (&["head", "up"], 31),
    (&["held", "off"], 59),
    (&["hold", "off"], 59),
    (&["hook", "up"], 82),
    (&["hung", "up"], 81),
    (&["in", "charg"], 24),
    (&["iron", "out"], 49),
    (&["jot", "down"], 70),
    (&["keep", "post"], 32),
    (&["keep", "tab"], 38),
    (&["keep", "track"], 37),
    (&["kick", "off"], 52),
    (&["kick", "up"], 1),
    (&["kick", "upstair"], 0),
    (&["log", "in"], 73),
    (&["log", "out"], 86),
    (&["look", "into"], 42),
    (&["look", "up"], 88),
    (&["loop", "in"], 30),
    (&["make", "sure"], 50),
    (&["note", "down"], 71),
    (&["on", "hold"], 58),
    (&["on", "pager"], 20),
    (&["on", "the", "hook"], 25),
    (&["open", "messag"], 17),
    (&["out", "of", "date"], 94),
    (&["pass", "along"], 29),
    (&["pass", "on"], 28),
    (&["pass", "up"], 4),
    (&["pick", "up"], 21),
    (&["push", "up"], 5),
    (&["put", "off"], 60),
    (&["put", "on", "hold"], 57),
    (&["ran", "out"], 89),
    (&["rip", "out"], 68),
    (&["roll", "back"], 64),
    (&["roll", "out"], 63),
    (&["root", "caus"], 47),
    (&["run", "out"], 89),
    (&["send", "back"], 14),
    (&["send", "up"], 2),
    (&["sent", "back"], 14),
    (&["sent", "up"], 2),
    (&["set", "up"], 72),
    (&["shut", "down"], 55),
    (&["sign", "in"], 74),
    (&["sign", "off"], 39),
    (&["sign", "up"], 87),
    (&["slip", "through", "the", "crack"], 93),
    (&["sort", "out"], 48),
    (&["spin", "up"], 53),
    (&["spun", "up"], 53),
    (&["stand", "down"], 12),
    (&["stood", "down"], 12),
    (&["switch", "off"], 80),
    (&["switch", "on"], 79),
    (&["take", "on"], 22),
    (&["take", "over"], 23),
    (&["tear", "down"], 56),
    (&["threw", "awai"], 67),
    (&["throw", "awai"], 67),
    (&["time", "out"], 84),
    (&["took", "on"], 22),
    (&["took", "over"], 23),
    (&["tore", "down"], 56),
    (&["track", "down"], 46),
    (&["turn", "down"], 41),
    (&["turn", "off"], 78),
    (&["turn", "on"], 77),
    (&["up", "the", "chain"], 6),
    (&["up", "to", "date"], 95),
    (&["us", "up"], 90),
    (&["walk", "back"], 11),
    (&["went", "over", "head"], 8),
    (&["wind", "back"], 10),
    (&["wind", "down"], 9),
    (&["wound", "back"], 10),
    (&["wound", "down"], 9),
    (&["write", "back"], 15),
    (&["write", "down"], 69),
    (&["write", "up"], 19),
    (&["wrote", "back"], 15),
    (&["wrote", "down"], 69),
    (&["wrote", "up"], 19),
];

/// The plain words of every phrase in `stems` (the intent's words, stopwords included,
/// stemmed), each phrase once.
pub fn implied(stems: &[String]) -> Vec<&'static [&'static str]> {
    let mut out: Vec<&'static [&'static str]> = Vec::new();
    for (i, first) in stems.iter().enumerate() {
        let from = STEMMED.partition_point(|(p, _)| p[0] < first.as_str());
        for (pat, at) in STEMMED[from..].iter().take_while(|(p, _)| p[0] == first.as_str()) {
            let mut j = i;
            let found = pat[1..].iter().all(|w| match (j + 1..stems.len().min(j + 2 + GAP)).find(|&k| stems[k] == *w) {
                Some(k) => {
                    j = k;
                    true
                }
                None => false,
            });
            let words = PHRASES[*at as usize].1;
            if found && !out.iter().any(|o| std::ptr::eq(*o, words)) {
                out.push(words);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(phrase: &str) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = vec![vec![]];
        for word in phrase.split(' ') {
            out = out.iter().flat_map(|o| word.split('|').map(move |alt| [o.clone(), vec![stem(alt)]].concat())).collect();
        }
        out
    }

    fn table() -> Vec<(Vec<String>, u16)> {
        let mut t: Vec<(Vec<String>, u16)> = PHRASES.iter().enumerate().flat_map(|(i, (p, _))| expand(p).into_iter().map(move |s| (s, i as u16))).collect();
        t.sort();
        t.dedup();
        t
    }

    #[test]
    fn stemmed_is_the_phrases_stemmed() {
        let got: Vec<(Vec<String>, u16)> = STEMMED.iter().map(|(s, i)| (s.iter().map(|x| x.to_string()).collect(), *i)).collect();
        assert_eq!(got, table());
        for (p, words) in PHRASES {
            assert!(p.split(' ').count() >= 2, "{p}");
            assert!(!words.is_empty() && words.iter().all(|w| w.chars().all(|c| c.is_ascii_lowercase())), "{p}");
        }
    }

    fn stems(intent: &str) -> Vec<String> {
        super::super::text::words(intent).into_iter().filter(|w| !w.compound).map(|w| stem(&w.text)).collect()
    }

    #[test]
    fn phrases_match_in_order_with_short_gaps() {
        assert_eq!(implied(&stems("Do I kick this upstairs or handle it myself?")), vec![&["escalate", "escalation"][..]]);
        // inflected, with a gap of two
        assert_eq!(implied(&stems("she sent the draft back")), vec![&["reply", "response"][..]]);
        // out of order, or too far apart: nothing
        assert!(implied(&stems("back then I sent it")).is_empty());
        assert!(implied(&stems("kick the ball over the fence and upstairs")).is_empty());
        assert!(implied(&stems("")).is_empty());
    }

    /// Rewrites [`STEMMED`] in this file from [`PHRASES`].
    #[test]
    #[ignore]
    fn regenerate_phrase_table() {
        let mut rs = String::from("const STEMMED: &[(&[&str], u16)] = &[\n");
        for (s, i) in table() {
            let quoted: Vec<String> = s.iter().map(|x| format!("{x:?}")).collect();
            rs += &format!("    (&[{}], {i}),\n", quoted.join(", "));
        }
        rs += "];\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/rank/phrasal.rs");
        let mut src = std::fs::read_to_string(path).expect("read phrasal.rs");
        let start = "const STEMMED: &[(&[&str], u16)] = &[\n";
        let from = src.find(start).expect("table start");
        let to = from + src[from..].find("];\n").expect("table end") + 3;
        src.replace_range(from..to, &rs);
        std::fs::write(path, src).expect("write phrasal.rs");
    }
}
