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
//! The table also spells out common technical and business abbreviations: "write-ahead
//! log" is the `wal` a storage manual names, "server-side request forgery" the `ssrf` of a
//! security page. Only that way round: an abbreviation in an intent is not spelled out,
//! since "PR" or "NDA" in both intent and unit already match, and their spelled-out words
//! ("pull", "request") are common enough to pull in the wrong units (tried: 62 probes of
//! our sets moved down against 19 up).
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

/// Phrases (words separated by spaces; a very few single words, such as "twice", that on
/// their own stand for another idea; `a|b` for alternative forms of one word, e.g.
/// irregular past tenses the stemmer keeps apart; `+word` for a word that must follow the
/// one before with nothing between) and the plain words they stand for.
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
    ("pull|pulled back", &["deescalate", "deescalation", "retract"]),
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
    ("look|looked over", &["review", "inspect"]),
    ("go|went over", &["review", "inspect"]),
    ("read|reads through", &["review", "inspect"]),
    ("size|sized up", &["assess", "impact", "estimate"]),
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
    ("in|mid flight", &["progress", "pending"]),
    ("half finished|done", &["progress", "incomplete"]),
    ("money back", &["refund"]),
    // the same thing coming in again: a duplicate of what exists
    ("in again", &["duplicate", "existing"]),
    ("already reported|filed|logged|raised|open", &["duplicate", "existing"]),
    ("second ticket|report|request|case|complaint", &["duplicate", "existing"]),
    ("separate ticket|tickets", &["duplicate", "existing"]),
    // the same thing done twice, or only once: duplicates and idempotency
    ("twice", &["duplicate", "idempotency"]),
    ("more than once", &["duplicate", "idempotency"]),
    ("exactly once", &["duplicate", "idempotency"]),
    ("double +click|clicks|clicked|charge|charged|submit|submitted|booking|booked|billing|billed", &["duplicate", "idempotency"]),
    // things that come round on a calendar
    ("every|each day|weekday|weekdays|morning|night|evening|hour|week|month|quarter|monday|tuesday|wednesday|thursday|friday|saturday|sunday", &["schedule", "recurring"]),
    // how soon something must happen
    ("how fast|quickly|soon", &["timeline", "urgency", "immediately"]),
    // personal data by its examples
    ("birth +date|dates|day|days", &["pii", "personal"]),
    ("date|dates of birth", &["pii", "personal"]),
    ("home|street|mailing|postal address|addresses", &["pii", "personal"]),
    ("phone +number|numbers", &["pii", "personal"]),
    ("social +security +number|numbers", &["pii", "personal"]),
    // keeping things for good
    ("keep|keeps|kept|store|stores|stored|retain|retained|hold|held forever|indefinitely", &["retention"]),
    // taking the other side's people
    ("no +hire|hiring|poach|poaching", &["solicitation", "nonsolicitation"]),
    ("hire|hiring|recruit|recruiting|poach|poaching staff|employees|people|personnel|workers", &["solicitation", "nonsolicitation"]),
    // where a thing is kept
    ("live|lives|living in", &["directory", "location", "path"]),
    // how many run together
    // "at a time" (a single letter is no word), but not "at the time"
    ("at +time", &["concurrency", "concurrent", "limit"]),
    ("at the same time", &["concurrency", "concurrent", "parallel"]),
    // work wrapped around every run: hooks
    ("before|ahead every|each", &["hook", "setup", "init"]),
    ("after every|each", &["hook", "cleanup", "teardown"]),
    // technical and business abbreviations, spelled out (the words adjacent: no gaps)
    ("write +ahead +log", &["wal"]),
    ("time +series +database|databases", &["tsdb"]),
    ("server +side +request +forgery", &["ssrf"]),
    ("cross +site +request +forgery", &["csrf"]),
    ("cross +site +scripting", &["xss"]),
    ("cross +origin +resource +sharing", &["cors"]),
    ("proof +key +for +code +exchange", &["pkce"]),
    ("json +web +token|tokens", &["jwt"]),
    ("single +sign +on", &["sso"]),
    ("multi +factor +authentication", &["mfa"]),
    ("role +based +access +control", &["rbac"]),
    ("access +control +list|lists", &["acl"]),
    ("transport +layer +security", &["tls"]),
    ("domain +name +system", &["dns"]),
    ("time +to +live", &["ttl"]),
    ("server +sent +events", &["sse"]),
    ("remote +procedure +call|calls", &["rpc"]),
    ("command +line +interface", &["cli"]),
    ("software +development +kit", &["sdk"]),
    ("continuous +integration", &["ci"]),
    ("pull +request|requests", &["pr"]),
    ("merge +request|requests", &["mr"]),
    ("service +level +objective|objectives", &["slo"]),
    ("service +level +agreement|agreements", &["sla"]),
    ("service +level +indicator|indicators", &["sli"]),
    ("root +cause +analysis", &["rca"]),
    ("out +of +memory", &["oom"]),
    ("virtual +machine|machines", &["vm"]),
    ("operating +system", &["os"]),
    ("open +container +initiative", &["oci"]),
    ("process +id|ids|identifier", &["pid"]),
    ("inter +process +communication", &["ipc"]),
    ("network +address +translation", &["nat"]),
    ("virtual +private +network", &["vpn"]),
    ("personally +identifiable +information", &["pii"]),
    ("non +disclosure +agreement|agreements", &["nda"]),
    ("statement +of +work", &["sow"]),
    ("master +service|services +agreement", &["msa"]),
    ("accounts +payable", &["ap"]),
    ("accounts +receivable", &["ar"]),
    ("general +ledger", &["gl"]),
    ("journal +entry|entries", &["je"]),
    ("key +performance +indicator|indicators", &["kpi"]),
    ("objectives +and +key +results", &["okr"]),
    ("customer +relationship +management", &["crm"]),
    ("frequently +asked +questions", &["faq"]),
    ("large +language +model|models", &["llm"]),
    ("model +context +protocol", &["mcp"]),
    ("service +discovery", &["sd"]),
    ("secure +shell", &["ssh"]),
    ("certificate +authority|authorities", &["ca"]),
    ("dynamic +client +registration", &["dcr"]),
    ("identity +provider|providers", &["idp"]),
    ("infrastructure +as +code", &["iac"]),
    ("dead +letter +queue|queues", &["dlq"]),
    ("quality +assurance", &["qa"]),
    ("user +interface", &["ui"]),
    ("request +for +comments", &["rfc"]),
    ("denial +of +service", &["dos"]),
    ("man +in +the +middle", &["mitm"]),
    ("end +of +day", &["eod"]),
    ("year +to +date", &["ytd"]),
    ("mutual +tls", &["mtls"]),
    ("ip +address +management", &["ipam"]),
    ("graphics +processing +unit|units", &["gpu"]),
];

/// [`PHRASES`] with every alternative spelled out, in Porter stems, sorted by first stem:
/// `(stems, index into PHRASES)`. Regenerate with
/// `cargo test -p lid-core --lib regenerate_phrase_table -- --ignored`.
const STEMMED: &[(&[&str], u16)] = &[
    (&["access", "+control", "+list"], 138),
    (&["account", "+payabl"], 165),
    (&["account", "+receiv"], 166),
    (&["after", "each"], 126),
    (&["after", "everi"], 126),
    (&["ahead", "each"], 125),
    (&["ahead", "everi"], 125),
    (&["alreadi", "file"], 105),
    (&["alreadi", "log"], 105),
    (&["alreadi", "open"], 105),
    (&["alreadi", "rais"], 105),
    (&["alreadi", "report"], 105),
    (&["at", "+time"], 123),
    (&["at", "the", "same", "time"], 124),
    (&["back", "burner"], 66),
    (&["back", "up"], 80),
    (&["befor", "each"], 125),
    (&["befor", "everi"], 125),
    (&["birth", "+dai"], 114),
    (&["birth", "+date"], 114),
    (&["boot", "up"], 88),
    (&["break", "down"], 81),
    (&["broke", "down"], 81),
    (&["bump", "up"], 3),
    (&["burn", "through"], 96),
    (&["burnt", "through"], 96),
    (&["call", "off"], 14),
    (&["certif", "+author"], 177),
    (&["chain", "of", "command"], 7),
    (&["chase", "up"], 37),
    (&["check", "in"], 35),
    (&["circl", "back"], 36),
    (&["clean", "up"], 71),
    (&["command", "+line", "+interfac"], 144),
    (&["continu", "+integr"], 146),
    (&["cross", "+origin", "+resourc", "+share"], 132),
    (&["cross", "+site", "+request", "+forgeri"], 130),
    (&["cross", "+site", "+script"], 131),
    (&["custom", "+relationship", "+manag"], 171),
    (&["date", "of", "birth"], 115),
    (&["dead", "+letter", "+queue"], 181),
    (&["denial", "+of", "+servic"], 185),
    (&["dig", "into"], 44),
    (&["domain", "+name", "+system"], 140),
    (&["doubl", "+bill"], 111),
    (&["doubl", "+book"], 111),
    (&["doubl", "+charg"], 111),
    (&["doubl", "+click"], 111),
    (&["doubl", "+submit"], 111),
    (&["doubl", "check"], 52),
    (&["dug", "into"], 44),
    (&["dynam", "+client", "+registr"], 178),
    (&["each", "dai"], 112),
    (&["each", "even"], 112),
    (&["each", "fridai"], 112),
    (&["each", "hour"], 112),
    (&["each", "mondai"], 112),
    (&["each", "month"], 112),
    (&["each", "morn"], 112),
    (&["each", "night"], 112),
    (&["each", "quarter"], 112),
    (&["each", "saturdai"], 112),
    (&["each", "sundai"], 112),
    (&["each", "thursdai"], 112),
    (&["each", "tuesdai"], 112),
    (&["each", "wednesdai"], 112),
    (&["each", "week"], 112),
    (&["each", "weekdai"], 112),
    (&["end", "+of", "+dai"], 187),
    (&["everi", "dai"], 112),
    (&["everi", "even"], 112),
    (&["everi", "fridai"], 112),
    (&["everi", "hour"], 112),
    (&["everi", "mondai"], 112),
    (&["everi", "month"], 112),
    (&["everi", "morn"], 112),
    (&["everi", "night"], 112),
    (&["everi", "quarter"], 112),
    (&["everi", "saturdai"], 112),
    (&["everi", "sundai"], 112),
    (&["everi", "thursdai"], 112),
    (&["everi", "tuesdai"], 112),
    (&["everi", "wednesdai"], 112),
    (&["everi", "week"], 112),
    (&["everi", "weekdai"], 112),
    (&["exactli", "onc"], 110),
    (&["fall", "back"], 90),
    (&["fall", "behind"], 97),
    (&["fell", "back"], 90),
    (&["fell", "behind"], 97),
    (&["figur", "out"], 45),
    (&["find", "out"], 46),
    (&["fire", "up"], 59),
    (&["first", "messag"], 19),
    (&["follow", "up"], 34),
    (&["found", "out"], 46),
    (&["frequent", "+ask", "+question"], 172),
    (&["gener", "+ledger"], 167),
    (&["get", "back", "to"], 17),
    (&["get", "rid"], 70),
    (&["go", "live"], 67),
    (&["go", "over"], 54),
    (&["go", "over", "head"], 8),
    (&["goe", "live"], 67),
    (&["got", "back", "to"], 17),
    (&["got", "rid"], 70),
    (&["graphic", "+process", "+unit"], 191),
    (&["green", "light"], 41),
    (&["half", "done"], 102),
    (&["half", "finish"], 102),
    (&["hand", "off"], 27),
    (&["hand", "over"], 28),
    (&["hang", "up"], 86),
    (&["head", "up"], 32),
    (&["held", "forev"], 119),
    (&["held", "indefinit"], 119),
    (&["held", "off"], 64),
    (&["hire", "employe"], 121),
    (&["hire", "peopl"], 121),
    (&["hire", "personnel"], 121),
    (&["hire", "staff"], 121),
    (&["hire", "worker"], 121),
    (&["hold", "forev"], 119),
    (&["hold", "indefinit"], 119),
    (&["hold", "off"], 64),
    (&["home", "address"], 116),
    (&["hook", "up"], 87),
    (&["how", "fast"], 113),
    (&["how", "quickli"], 113),
    (&["how", "soon"], 113),
    (&["hung", "up"], 86),
    (&["ident", "+provid"], 179),
    (&["in", "again"], 104),
    (&["in", "charg"], 25),
    (&["in", "flight"], 101),
    (&["infrastructur", "+as", "+code"], 180),
    (&["inter", "+process", "+commun"], 158),
    (&["ip", "+address", "+manag"], 190),
    (&["iron", "out"], 50),
    (&["jot", "down"], 75),
    (&["journal", "+entri"], 168),
    (&["json", "+web", "+token"], 134),
    (&["keep", "forev"], 119),
    (&["keep", "indefinit"], 119),
    (&["keep", "post"], 33),
    (&["keep", "tab"], 39),
    (&["keep", "track"], 38),
    (&["kei", "+perform", "+indic"], 169),
    (&["kept", "forev"], 119),
    (&["kept", "indefinit"], 119),
    (&["kick", "off"], 57),
    (&["kick", "up"], 1),
    (&["kick", "upstair"], 0),
    (&["larg", "+languag", "+model"], 173),
    (&["live", "in"], 122),
    (&["log", "in"], 78),
    (&["log", "out"], 91),
    (&["look", "into"], 43),
    (&["look", "over"], 53),
    (&["look", "up"], 93),
    (&["loop", "in"], 31),
    (&["mail", "address"], 116),
    (&["make", "sure"], 51),
    (&["man", "+in", "+the", "+middl"], 186),
    (&["master", "+servic", "+agreement"], 164),
    (&["merg", "+request"], 148),
    (&["mid", "flight"], 101),
    (&["model", "+context", "+protocol"], 174),
    (&["monei", "back"], 103),
    (&["more", "than", "onc"], 109),
    (&["multi", "+factor", "+authent"], 136),
    (&["mutual", "+tl"], 189),
    (&["network", "+address", "+translat"], 159),
    (&["no", "+hire"], 120),
    (&["no", "+poach"], 120),
    (&["non", "+disclosur", "+agreement"], 162),
    (&["note", "down"], 76),
    (&["object", "+and", "+kei", "+result"], 170),
    (&["on", "hold"], 63),
    (&["on", "pager"], 21),
    (&["on", "the", "hook"], 26),
    (&["open", "+contain", "+initi"], 156),
    (&["open", "messag"], 18),
    (&["oper", "+system"], 155),
    (&["out", "+of", "+memori"], 153),
    (&["out", "of", "date"], 99),
    (&["pass", "along"], 30),
    (&["pass", "on"], 29),
    (&["pass", "up"], 4),
    (&["person", "+identifi", "+inform"], 161),
    (&["phone", "+number"], 117),
    (&["pick", "up"], 22),
    (&["poach", "employe"], 121),
    (&["poach", "peopl"], 121),
    (&["poach", "personnel"], 121),
    (&["poach", "staff"], 121),
    (&["poach", "worker"], 121),
    (&["postal", "address"], 116),
    (&["process", "+id"], 157),
    (&["process", "+identifi"], 157),
    (&["proof", "+kei", "+for", "+code", "+exchang"], 133),
    (&["pull", "+request"], 147),
    (&["pull", "back"], 12),
    (&["push", "up"], 5),
    (&["put", "off"], 65),
    (&["put", "on", "hold"], 62),
    (&["qualiti", "+assur"], 182),
    (&["ran", "out"], 94),
    (&["read", "through"], 55),
    (&["recruit", "employe"], 121),
    (&["recruit", "peopl"], 121),
    (&["recruit", "personnel"], 121),
    (&["recruit", "staff"], 121),
    (&["recruit", "worker"], 121),
    (&["remot", "+procedur", "+call"], 143),
    (&["request", "+for", "+comment"], 184),
    (&["retain", "forev"], 119),
    (&["retain", "indefinit"], 119),
    (&["rip", "out"], 73),
    (&["role", "+base", "+access", "+control"], 137),
    (&["roll", "back"], 69),
    (&["roll", "out"], 68),
    (&["root", "+caus", "+analysi"], 152),
    (&["root", "caus"], 48),
    (&["run", "out"], 94),
    (&["second", "case"], 106),
    (&["second", "complaint"], 106),
    (&["second", "report"], 106),
    (&["second", "request"], 106),
    (&["second", "ticket"], 106),
    (&["secur", "+shell"], 176),
    (&["send", "back"], 15),
    (&["send", "up"], 2),
    (&["sent", "back"], 15),
    (&["sent", "up"], 2),
    (&["separ", "ticket"], 107),
    (&["server", "+sent", "+event"], 142),
    (&["server", "+side", "+request", "+forgeri"], 129),
    (&["servic", "+discoveri"], 175),
    (&["servic", "+level", "+agreement"], 150),
    (&["servic", "+level", "+indic"], 151),
    (&["servic", "+level", "+object"], 149),
    (&["set", "up"], 77),
    (&["shut", "down"], 60),
    (&["sign", "in"], 79),
    (&["sign", "off"], 40),
    (&["sign", "up"], 92),
    (&["singl", "+sign", "+on"], 135),
    (&["size", "up"], 56),
    (&["slip", "through", "the", "crack"], 98),
    (&["social", "+secur", "+number"], 118),
    (&["softwar", "+develop", "+kit"], 145),
    (&["sort", "out"], 49),
    (&["spin", "up"], 58),
    (&["spun", "up"], 58),
    (&["stand", "down"], 13),
    (&["statement", "+of", "+work"], 163),
    (&["stood", "down"], 13),
    (&["store", "forev"], 119),
    (&["store", "indefinit"], 119),
    (&["street", "address"], 116),
    (&["switch", "off"], 85),
    (&["switch", "on"], 84),
    (&["take", "on"], 23),
    (&["take", "over"], 24),
    (&["tear", "down"], 61),
    (&["threw", "awai"], 72),
    (&["throw", "awai"], 72),
    (&["time", "+seri", "+databas"], 128),
    (&["time", "+to", "+live"], 141),
    (&["time", "out"], 89),
    (&["took", "on"], 23),
    (&["took", "over"], 24),
    (&["tore", "down"], 61),
    (&["track", "down"], 47),
    (&["transport", "+layer", "+secur"], 139),
    (&["turn", "down"], 42),
    (&["turn", "off"], 83),
    (&["turn", "on"], 82),
    (&["twice"], 108),
    (&["up", "the", "chain"], 6),
    (&["up", "to", "date"], 100),
    (&["us", "up"], 95),
    (&["user", "+interfac"], 183),
    (&["virtual", "+machin"], 154),
    (&["virtual", "+privat", "+network"], 160),
    (&["walk", "back"], 11),
    (&["went", "over"], 54),
    (&["went", "over", "head"], 8),
    (&["wind", "back"], 10),
    (&["wind", "down"], 9),
    (&["wound", "back"], 10),
    (&["wound", "down"], 9),
    (&["write", "+ahead", "+log"], 127),
    (&["write", "back"], 16),
    (&["write", "down"], 74),
    (&["write", "up"], 20),
    (&["wrote", "back"], 16),
    (&["wrote", "down"], 74),
    (&["wrote", "up"], 20),
    (&["year", "+to", "+date"], 188),
];

/// The plain words of every phrase in `stems` (the intent's words, stopwords included,
/// stemmed), each phrase once.
pub fn implied(stems: &[String]) -> Vec<&'static [&'static str]> {
    let mut out: Vec<&'static [&'static str]> = Vec::new();
    for (i, first) in stems.iter().enumerate() {
        let from = STEMMED.partition_point(|(p, _)| p[0] < first.as_str());
        for (pat, at) in STEMMED[from..].iter().take_while(|(p, _)| p[0] == first.as_str()) {
            let mut j = i;
            let found = pat[1..].iter().all(|w| {
                // a `+` word follows the one before it directly; others may leave a gap
                let (w, gap) = match w.strip_prefix('+') {
                    Some(tight) => (tight, 0),
                    None => (*w, GAP),
                };
                match (j + 1..stems.len().min(j + 2 + gap)).find(|&k| stems[k] == w) {
                    Some(k) => {
                        j = k;
                        true
                    }
                    None => false,
                }
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
            let (word, tight) = match word.strip_prefix('+') {
                Some(w) => (w, "+"),
                None => (word, ""),
            };
            out = out.iter().flat_map(|o| word.split('|').map(move |alt| [o.clone(), vec![format!("{tight}{}", stem(alt))]].concat())).collect();
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
            // a phrase, or one of the few single words that stand for another idea ("twice")
            assert!(p.split(' ').count() >= 2 || SINGLE_WORD_CUES.contains(p), "{p}");
            assert!(!words.is_empty() && words.iter().all(|w| w.chars().all(|c| c.is_ascii_lowercase())), "{p}");
        }
    }

    /// The entries of one word: words whose plain sense is another idea's, and which no
    /// thesaurus group can hold since the relation runs one way ("twice" is a duplicate; a
    /// duplicate is not "twice").
    const SINGLE_WORD_CUES: &[&str] = &["twice"];

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

    #[test]
    fn phrases_of_several_groups_each_imply_their_words() {
        // a hook around every run; "each" as well as "every"
        assert_eq!(implied(&stems("open a DB connection before every attempt")), vec![&["hook", "setup", "init"][..]]);
        assert_eq!(implied(&stems("close it after each run")), vec![&["hook", "cleanup", "teardown"][..]]);
        // the same matter coming in again
        assert_eq!(implied(&stems("the same customer wrote in again")), vec![&["duplicate", "existing"][..]]);
        // how many at once; a three-word phrase with no gap
        assert_eq!(implied(&stems("only two syncs at a time")), vec![&["concurrency", "concurrent", "limit"][..]]);
        // ... where "+time" must follow "at" directly: not "at the time"
        assert!(implied(&stems("what was the config at the time of the outage")).is_empty());
        // two phrases in one intent, in the order they are said
        assert_eq!(
            implied(&stems("size up the outage, then pull the case back")),
            vec![&["assess", "impact", "estimate"][..], &["deescalate", "deescalation", "retract"][..]]
        );
        // a phrase's words apart by more than the gap: nothing
        assert!(implied(&stems("after the deploy and the migration, every check passed")).is_empty());
    }

    #[test]
    fn single_word_cues_calendars_and_examples_of_personal_data_imply_their_ideas() {
        // one word on its own, wherever it stands
        assert_eq!(implied(&stems("retries charge the customer's card twice")), vec![&["duplicate", "idempotency"][..]]);
        assert_eq!(implied(&stems("it must run exactly once")), vec![&["duplicate", "idempotency"][..]]);
        // "only once" is also "as soon as": no idea of its own
        assert!(implied(&stems("alert only once every retry has failed")).is_empty());
        // a calendar, and how soon
        assert_eq!(implied(&stems("send the digest every weekday at 9am")), vec![&["schedule", "recurring"][..]]);
        assert_eq!(implied(&stems("how quickly must we answer")), vec![&["timeline", "urgency", "immediately"][..]]);
        // personal data named by its examples, kept for good
        assert_eq!(implied(&stems("we keep birth dates forever")), vec![&["retention"][..], &["pii", "personal"][..]]);
        assert_eq!(implied(&stems("their home addresses")), vec![&["pii", "personal"][..]]);
        // where a thing is kept
        assert_eq!(implied(&stems("our task files live in src/jobs")), vec![&["directory", "location", "path"][..]]);
        // the other side's people
        assert_eq!(implied(&stems("a clause barring us from hiring their staff")), vec![&["solicitation", "nonsolicitation"][..]]);
    }

    #[test]
    fn spelled_out_abbreviations_imply_the_abbreviation_only() {
        // hyphens split words; the spelled-out words must be adjacent
        assert_eq!(implied(&stems("how far along is the write-ahead log replay")), vec![&["wal"][..]]);
        assert_eq!(implied(&stems("block server side request forgery via metadata URLs")), vec![&["ssrf"][..]]);
        assert_eq!(implied(&stems("opened a pull request for it")), vec![&["pr"][..]]);
        assert!(implied(&stems("write the log ahead of time")).is_empty());
        assert_eq!(implied(&stems("time to go live")), vec![&["release", "launch", "deploy"][..]]);
        // the abbreviation itself implies nothing: it matches units that use it as it is
        assert!(implied(&stems("is the PR green on CI")).is_empty());
        assert!(implied(&stems("WAL replay status")).is_empty());
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
