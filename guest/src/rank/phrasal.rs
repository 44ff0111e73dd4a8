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
    ("pass|passes|passed|passing through", &["passthrough", "forward"]),
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
    ("deal +breaker|breakers|killer|killers", &["reject", "rejection", "unacceptable"]),
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
    ("break|breaks|broke +in", &["breach", "intrusion", "unauthorized"]),
    // switching, connecting and failing over (technical usage)
    ("turn|turned on", &["enable", "activate"]),
    ("turn|turned off", &["disable", "deactivate"]),
    ("switch|switched on", &["enable", "activate"]),
    ("switch|switched off", &["disable", "deactivate"]),
    ("hang|hung up", &["disconnect"]),
    ("hook|hooked up", &["connect", "integrate"]),
    ("boot|booted up", &["start", "startup"]),
    ("time|timed out", &["timeout"]),
    ("blow|blows|blew up", &["crash", "failure", "error"]),
    ("fix|fixes|fixed|sort|sorted|clear|cleared|resolve|resolved itself|themselves", &["resolved", "resolution"]),
    ("give|gives|gave up", &["abandon", "retry", "stop"]),
    ("between +attempts|retries|tries", &["backoff", "delay", "retry"]),
    ("keep|keeps|kept checking|peeking|refreshing|polling", &["poll", "polling"]),
    ("fill|fills|filled up", &["full", "capacity"]),
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
    (&["access", "+control", "+list"], 147),
    (&["account", "+payabl"], 174),
    (&["account", "+receiv"], 175),
    (&["after", "each"], 135),
    (&["after", "everi"], 135),
    (&["ahead", "each"], 134),
    (&["ahead", "everi"], 134),
    (&["alreadi", "file"], 114),
    (&["alreadi", "log"], 114),
    (&["alreadi", "open"], 114),
    (&["alreadi", "rais"], 114),
    (&["alreadi", "report"], 114),
    (&["at", "+time"], 132),
    (&["at", "the", "same", "time"], 133),
    (&["back", "burner"], 68),
    (&["back", "up"], 82),
    (&["befor", "each"], 134),
    (&["befor", "everi"], 134),
    (&["between", "+attempt"], 96),
    (&["between", "+retri"], 96),
    (&["between", "+tri"], 96),
    (&["birth", "+dai"], 123),
    (&["birth", "+date"], 123),
    (&["blew", "up"], 93),
    (&["blow", "up"], 93),
    (&["boot", "up"], 91),
    (&["break", "+in"], 84),
    (&["break", "down"], 83),
    (&["broke", "+in"], 84),
    (&["broke", "down"], 83),
    (&["bump", "up"], 3),
    (&["burn", "through"], 105),
    (&["burnt", "through"], 105),
    (&["call", "off"], 14),
    (&["certif", "+author"], 186),
    (&["chain", "of", "command"], 7),
    (&["chase", "up"], 38),
    (&["check", "in"], 36),
    (&["circl", "back"], 37),
    (&["clean", "up"], 73),
    (&["clear", "itself"], 94),
    (&["clear", "themselv"], 94),
    (&["command", "+line", "+interfac"], 153),
    (&["continu", "+integr"], 155),
    (&["cross", "+origin", "+resourc", "+share"], 141),
    (&["cross", "+site", "+request", "+forgeri"], 139),
    (&["cross", "+site", "+script"], 140),
    (&["custom", "+relationship", "+manag"], 180),
    (&["date", "of", "birth"], 124),
    (&["dead", "+letter", "+queue"], 190),
    (&["deal", "+breaker"], 43),
    (&["deal", "+killer"], 43),
    (&["denial", "+of", "+servic"], 194),
    (&["dig", "into"], 46),
    (&["domain", "+name", "+system"], 149),
    (&["doubl", "+bill"], 120),
    (&["doubl", "+book"], 120),
    (&["doubl", "+charg"], 120),
    (&["doubl", "+click"], 120),
    (&["doubl", "+submit"], 120),
    (&["doubl", "check"], 54),
    (&["dug", "into"], 46),
    (&["dynam", "+client", "+registr"], 187),
    (&["each", "dai"], 121),
    (&["each", "even"], 121),
    (&["each", "fridai"], 121),
    (&["each", "hour"], 121),
    (&["each", "mondai"], 121),
    (&["each", "month"], 121),
    (&["each", "morn"], 121),
    (&["each", "night"], 121),
    (&["each", "quarter"], 121),
    (&["each", "saturdai"], 121),
    (&["each", "sundai"], 121),
    (&["each", "thursdai"], 121),
    (&["each", "tuesdai"], 121),
    (&["each", "wednesdai"], 121),
    (&["each", "week"], 121),
    (&["each", "weekdai"], 121),
    (&["end", "+of", "+dai"], 196),
    (&["everi", "dai"], 121),
    (&["everi", "even"], 121),
    (&["everi", "fridai"], 121),
    (&["everi", "hour"], 121),
    (&["everi", "mondai"], 121),
    (&["everi", "month"], 121),
    (&["everi", "morn"], 121),
    (&["everi", "night"], 121),
    (&["everi", "quarter"], 121),
    (&["everi", "saturdai"], 121),
    (&["everi", "sundai"], 121),
    (&["everi", "thursdai"], 121),
    (&["everi", "tuesdai"], 121),
    (&["everi", "wednesdai"], 121),
    (&["everi", "week"], 121),
    (&["everi", "weekdai"], 121),
    (&["exactli", "onc"], 119),
    (&["fall", "back"], 99),
    (&["fall", "behind"], 106),
    (&["fell", "back"], 99),
    (&["fell", "behind"], 106),
    (&["figur", "out"], 47),
    (&["fill", "up"], 98),
    (&["find", "out"], 48),
    (&["fire", "up"], 61),
    (&["first", "messag"], 19),
    (&["fix", "itself"], 94),
    (&["fix", "themselv"], 94),
    (&["follow", "up"], 35),
    (&["found", "out"], 48),
    (&["frequent", "+ask", "+question"], 181),
    (&["gave", "up"], 95),
    (&["gener", "+ledger"], 176),
    (&["get", "back", "to"], 17),
    (&["get", "rid"], 72),
    (&["give", "up"], 95),
    (&["go", "live"], 69),
    (&["go", "over"], 56),
    (&["go", "over", "head"], 8),
    (&["goe", "live"], 69),
    (&["got", "back", "to"], 17),
    (&["got", "rid"], 72),
    (&["graphic", "+process", "+unit"], 200),
    (&["green", "light"], 42),
    (&["half", "done"], 111),
    (&["half", "finish"], 111),
    (&["hand", "off"], 27),
    (&["hand", "over"], 28),
    (&["hang", "up"], 89),
    (&["head", "up"], 33),
    (&["held", "forev"], 128),
    (&["held", "indefinit"], 128),
    (&["held", "off"], 66),
    (&["hire", "employe"], 130),
    (&["hire", "peopl"], 130),
    (&["hire", "personnel"], 130),
    (&["hire", "staff"], 130),
    (&["hire", "worker"], 130),
    (&["hold", "forev"], 128),
    (&["hold", "indefinit"], 128),
    (&["hold", "off"], 66),
    (&["home", "address"], 125),
    (&["hook", "up"], 90),
    (&["how", "fast"], 122),
    (&["how", "quickli"], 122),
    (&["how", "soon"], 122),
    (&["hung", "up"], 89),
    (&["ident", "+provid"], 188),
    (&["in", "again"], 113),
    (&["in", "charg"], 25),
    (&["in", "flight"], 110),
    (&["infrastructur", "+as", "+code"], 189),
    (&["inter", "+process", "+commun"], 167),
    (&["ip", "+address", "+manag"], 199),
    (&["iron", "out"], 52),
    (&["jot", "down"], 77),
    (&["journal", "+entri"], 177),
    (&["json", "+web", "+token"], 143),
    (&["keep", "check"], 97),
    (&["keep", "forev"], 128),
    (&["keep", "indefinit"], 128),
    (&["keep", "peek"], 97),
    (&["keep", "poll"], 97),
    (&["keep", "post"], 34),
    (&["keep", "refresh"], 97),
    (&["keep", "tab"], 40),
    (&["keep", "track"], 39),
    (&["kei", "+perform", "+indic"], 178),
    (&["kept", "check"], 97),
    (&["kept", "forev"], 128),
    (&["kept", "indefinit"], 128),
    (&["kept", "peek"], 97),
    (&["kept", "poll"], 97),
    (&["kept", "refresh"], 97),
    (&["kick", "off"], 59),
    (&["kick", "up"], 1),
    (&["kick", "upstair"], 0),
    (&["larg", "+languag", "+model"], 182),
    (&["live", "in"], 131),
    (&["log", "in"], 80),
    (&["log", "out"], 100),
    (&["look", "into"], 45),
    (&["look", "over"], 55),
    (&["look", "up"], 102),
    (&["loop", "in"], 32),
    (&["mail", "address"], 125),
    (&["make", "sure"], 53),
    (&["man", "+in", "+the", "+middl"], 195),
    (&["master", "+servic", "+agreement"], 173),
    (&["merg", "+request"], 157),
    (&["mid", "flight"], 110),
    (&["model", "+context", "+protocol"], 183),
    (&["monei", "back"], 112),
    (&["more", "than", "onc"], 118),
    (&["multi", "+factor", "+authent"], 145),
    (&["mutual", "+tl"], 198),
    (&["network", "+address", "+translat"], 168),
    (&["no", "+hire"], 129),
    (&["no", "+poach"], 129),
    (&["non", "+disclosur", "+agreement"], 171),
    (&["note", "down"], 78),
    (&["object", "+and", "+kei", "+result"], 179),
    (&["on", "hold"], 65),
    (&["on", "pager"], 21),
    (&["on", "the", "hook"], 26),
    (&["open", "+contain", "+initi"], 165),
    (&["open", "messag"], 18),
    (&["oper", "+system"], 164),
    (&["out", "+of", "+memori"], 162),
    (&["out", "of", "date"], 108),
    (&["pass", "along"], 31),
    (&["pass", "on"], 30),
    (&["pass", "through"], 29),
    (&["pass", "up"], 4),
    (&["person", "+identifi", "+inform"], 170),
    (&["phone", "+number"], 126),
    (&["pick", "up"], 22),
    (&["poach", "employe"], 130),
    (&["poach", "peopl"], 130),
    (&["poach", "personnel"], 130),
    (&["poach", "staff"], 130),
    (&["poach", "worker"], 130),
    (&["postal", "address"], 125),
    (&["process", "+id"], 166),
    (&["process", "+identifi"], 166),
    (&["proof", "+kei", "+for", "+code", "+exchang"], 142),
    (&["pull", "+request"], 156),
    (&["pull", "back"], 12),
    (&["push", "up"], 5),
    (&["put", "off"], 67),
    (&["put", "on", "hold"], 64),
    (&["qualiti", "+assur"], 191),
    (&["ran", "out"], 103),
    (&["read", "through"], 57),
    (&["recruit", "employe"], 130),
    (&["recruit", "peopl"], 130),
    (&["recruit", "personnel"], 130),
    (&["recruit", "staff"], 130),
    (&["recruit", "worker"], 130),
    (&["remot", "+procedur", "+call"], 152),
    (&["request", "+for", "+comment"], 193),
    (&["resolv", "itself"], 94),
    (&["resolv", "themselv"], 94),
    (&["retain", "forev"], 128),
    (&["retain", "indefinit"], 128),
    (&["rip", "out"], 75),
    (&["role", "+base", "+access", "+control"], 146),
    (&["roll", "back"], 71),
    (&["roll", "out"], 70),
    (&["root", "+caus", "+analysi"], 161),
    (&["root", "caus"], 50),
    (&["run", "out"], 103),
    (&["second", "case"], 115),
    (&["second", "complaint"], 115),
    (&["second", "report"], 115),
    (&["second", "request"], 115),
    (&["second", "ticket"], 115),
    (&["secur", "+shell"], 185),
    (&["send", "back"], 15),
    (&["send", "up"], 2),
    (&["sent", "back"], 15),
    (&["sent", "up"], 2),
    (&["separ", "ticket"], 116),
    (&["server", "+sent", "+event"], 151),
    (&["server", "+side", "+request", "+forgeri"], 138),
    (&["servic", "+discoveri"], 184),
    (&["servic", "+level", "+agreement"], 159),
    (&["servic", "+level", "+indic"], 160),
    (&["servic", "+level", "+object"], 158),
    (&["set", "up"], 79),
    (&["shut", "down"], 62),
    (&["sign", "in"], 81),
    (&["sign", "off"], 41),
    (&["sign", "up"], 101),
    (&["singl", "+sign", "+on"], 144),
    (&["size", "up"], 58),
    (&["slip", "through", "the", "crack"], 107),
    (&["social", "+secur", "+number"], 127),
    (&["softwar", "+develop", "+kit"], 154),
    (&["sort", "itself"], 94),
    (&["sort", "out"], 51),
    (&["sort", "themselv"], 94),
    (&["spin", "up"], 60),
    (&["spun", "up"], 60),
    (&["stand", "down"], 13),
    (&["statement", "+of", "+work"], 172),
    (&["stood", "down"], 13),
    (&["store", "forev"], 128),
    (&["store", "indefinit"], 128),
    (&["street", "address"], 125),
    (&["switch", "off"], 88),
    (&["switch", "on"], 87),
    (&["take", "on"], 23),
    (&["take", "over"], 24),
    (&["tear", "down"], 63),
    (&["threw", "awai"], 74),
    (&["throw", "awai"], 74),
    (&["time", "+seri", "+databas"], 137),
    (&["time", "+to", "+live"], 150),
    (&["time", "out"], 92),
    (&["took", "on"], 23),
    (&["took", "over"], 24),
    (&["tore", "down"], 63),
    (&["track", "down"], 49),
    (&["transport", "+layer", "+secur"], 148),
    (&["turn", "down"], 44),
    (&["turn", "off"], 86),
    (&["turn", "on"], 85),
    (&["twice"], 117),
    (&["up", "the", "chain"], 6),
    (&["up", "to", "date"], 109),
    (&["us", "up"], 104),
    (&["user", "+interfac"], 192),
    (&["virtual", "+machin"], 163),
    (&["virtual", "+privat", "+network"], 169),
    (&["walk", "back"], 11),
    (&["went", "over"], 56),
    (&["went", "over", "head"], 8),
    (&["wind", "back"], 10),
    (&["wind", "down"], 9),
    (&["wound", "back"], 10),
    (&["wound", "down"], 9),
    (&["write", "+ahead", "+log"], 136),
    (&["write", "back"], 16),
    (&["write", "down"], 76),
    (&["write", "up"], 20),
    (&["wrote", "back"], 16),
    (&["wrote", "down"], 76),
    (&["wrote", "up"], 20),
    (&["year", "+to", "+date"], 197),
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
    fn giving_up_breaking_in_and_fixing_itself_imply_their_ideas() {
        // retries, by how people say them
        assert_eq!(implied(&stems("give up after three attempts")), vec![&["abandon", "retry", "stop"][..]]);
        assert_eq!(implied(&stems("wait longer between attempts")), vec![&["backoff", "delay", "retry"][..]]);
        assert_eq!(implied(&stems("I keep checking whether the runs finished")), vec![&["poll", "polling"][..]]);
        // a break-in (the hyphen splits the words), not a break down or a break in the build
        assert_eq!(implied(&stems("a possible break-in to their account")), vec![&["breach", "intrusion", "unauthorized"][..]]);
        assert!(implied(&stems("don't break the build in CI")).is_empty());
        // a problem that went away, a failure, a disk with no room left
        assert_eq!(implied(&stems("the outage fixed itself overnight")), vec![&["resolved", "resolution"][..]]);
        assert_eq!(implied(&stems("the importer blew up on row 9")), vec![&["crash", "failure", "error"][..]]);
        assert_eq!(implied(&stems("will the disk fill up by Friday")), vec![&["full", "capacity"][..]]);
        assert_eq!(implied(&stems("is that clause a deal-breaker")), vec![&["reject", "rejection", "unacceptable"][..]]);
        assert_eq!(implied(&stems("the proxy passes the token through")), vec![&["passthrough", "forward"][..]]);
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
