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
    // everyday idioms of work, software and contracts, whose plain words documents use
    ("how far along", &["progress"]),
    ("left hanging", &["waiting", "overdue", "unanswered"]),
    ("jump|jumps the line|queue", &["priority", "prioritize"]),
    ("last minute", &["late", "deadline"]),
    ("house rules", &["policy", "guidelines", "playbook"]),
    ("under oath", &["certify", "certification"]),
    ("walk|walks away", &["reject", "unacceptable"]),
    ("push|pushed back on|against|with", &["negotiate", "counter", "object"]),
    ("whose|my|your|his|her|their plate", &["owner", "responsible", "assign"]),
    ("butt|butts|butting|butted heads", &["conflict", "dispute", "disagreement"]),
    ("to do list|lists", &["checklist", "plan", "task"]),
    ("long winded", &["verbose", "concise"]),
    ("up to speed", &["context", "background", "onboarding"]),
    ("keep|keeps|kept hammering|trying|retrying", &["retry"]),
    ("by itself|themselves", &["automatic", "automatically"]),
    ("off the shelf", &["standard", "library", "existing"]),
    ("plain text", &["plaintext", "unencrypted"]),
    ("hang|hung on to", &["retain", "retention"]),
    ("thumbs up", &["approve", "approval"]),
    ("in the wild", &["public", "released", "production"]),
    ("tidy|tidied up", &["cleanup", "format"]),
    ("poke|poked around", &["investigate", "explore"]),
    ("bake|baked|baking in|into", &["builtin", "hardcode", "hardcoded"]),
    ("out of the box", &["default"]),
    ("call it a day", &["done", "finish", "complete"]),
    ("turn|turned away", &["reject", "refuse"]),
    ("for good", &["permanent", "permanently"]),
    ("sit tight", &["wait"]),
    ("set|sets off", &["trigger", "start"]),
    ("prove|proving who", &["authenticate", "identity"]),
    ("click|clicks|clicking through", &["link"]),
    ("bare minimum", &["minimal", "basic", "required"]),
    ("lay|lays|laid out", &["format", "structure", "layout"]),
    ("how +bad|serious|severe", &["severity", "impact"]),
    ("add|adds|added up", &["total", "sum", "discrepancy"]),
    ("back to zero", &["reset"]),
    ("point in time", &["snapshot"]),
    ("write|writes|wrote out", &["export", "output"]),
    ("run|runs|ran|running|take|takes|took|taking longer", &["timeout", "duration"]),
    ("run|runs|ran|running|take|takes|took|taking too long", &["timeout", "duration"]),
    ("used to work", &["regression", "broken"]),
    ("stopped working", &["regression", "broken"]),
    // where a piece of work stands
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
    (&["access", "+control", "+list"], 189),
    (&["account", "+payabl"], 216),
    (&["account", "+receiv"], 217),
    (&["ad", "up"], 143),
    (&["add", "up"], 143),
    (&["after", "each"], 177),
    (&["after", "everi"], 177),
    (&["ahead", "each"], 176),
    (&["ahead", "everi"], 176),
    (&["alreadi", "file"], 156),
    (&["alreadi", "log"], 156),
    (&["alreadi", "open"], 156),
    (&["alreadi", "rais"], 156),
    (&["alreadi", "report"], 156),
    (&["at", "+time"], 174),
    (&["at", "the", "same", "time"], 175),
    (&["back", "burner"], 68),
    (&["back", "to", "zero"], 144),
    (&["back", "up"], 82),
    (&["bake", "in"], 131),
    (&["bake", "into"], 131),
    (&["bare", "minimum"], 140),
    (&["befor", "each"], 176),
    (&["befor", "everi"], 176),
    (&["between", "+attempt"], 96),
    (&["between", "+retri"], 96),
    (&["between", "+tri"], 96),
    (&["birth", "+dai"], 165),
    (&["birth", "+date"], 165),
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
    (&["but", "head"], 118),
    (&["butt", "head"], 118),
    (&["by", "itself"], 123),
    (&["by", "themselv"], 123),
    (&["call", "it", "a", "dai"], 133),
    (&["call", "off"], 14),
    (&["certif", "+author"], 228),
    (&["chain", "of", "command"], 7),
    (&["chase", "up"], 38),
    (&["check", "in"], 36),
    (&["circl", "back"], 37),
    (&["clean", "up"], 73),
    (&["clear", "itself"], 94),
    (&["clear", "themselv"], 94),
    (&["click", "through"], 139),
    (&["command", "+line", "+interfac"], 195),
    (&["continu", "+integr"], 197),
    (&["cross", "+origin", "+resourc", "+share"], 183),
    (&["cross", "+site", "+request", "+forgeri"], 181),
    (&["cross", "+site", "+script"], 182),
    (&["custom", "+relationship", "+manag"], 222),
    (&["date", "of", "birth"], 166),
    (&["dead", "+letter", "+queue"], 232),
    (&["deal", "+breaker"], 43),
    (&["deal", "+killer"], 43),
    (&["denial", "+of", "+servic"], 236),
    (&["dig", "into"], 46),
    (&["domain", "+name", "+system"], 191),
    (&["doubl", "+bill"], 162),
    (&["doubl", "+book"], 162),
    (&["doubl", "+charg"], 162),
    (&["doubl", "+click"], 162),
    (&["doubl", "+submit"], 162),
    (&["doubl", "check"], 54),
    (&["dug", "into"], 46),
    (&["dynam", "+client", "+registr"], 229),
    (&["each", "dai"], 163),
    (&["each", "even"], 163),
    (&["each", "fridai"], 163),
    (&["each", "hour"], 163),
    (&["each", "mondai"], 163),
    (&["each", "month"], 163),
    (&["each", "morn"], 163),
    (&["each", "night"], 163),
    (&["each", "quarter"], 163),
    (&["each", "saturdai"], 163),
    (&["each", "sundai"], 163),
    (&["each", "thursdai"], 163),
    (&["each", "tuesdai"], 163),
    (&["each", "wednesdai"], 163),
    (&["each", "week"], 163),
    (&["each", "weekdai"], 163),
    (&["end", "+of", "+dai"], 238),
    (&["everi", "dai"], 163),
    (&["everi", "even"], 163),
    (&["everi", "fridai"], 163),
    (&["everi", "hour"], 163),
    (&["everi", "mondai"], 163),
    (&["everi", "month"], 163),
    (&["everi", "morn"], 163),
    (&["everi", "night"], 163),
    (&["everi", "quarter"], 163),
    (&["everi", "saturdai"], 163),
    (&["everi", "sundai"], 163),
    (&["everi", "thursdai"], 163),
    (&["everi", "tuesdai"], 163),
    (&["everi", "wednesdai"], 163),
    (&["everi", "week"], 163),
    (&["everi", "weekdai"], 163),
    (&["exactli", "onc"], 161),
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
    (&["for", "good"], 135),
    (&["found", "out"], 48),
    (&["frequent", "+ask", "+question"], 223),
    (&["gave", "up"], 95),
    (&["gener", "+ledger"], 218),
    (&["get", "back", "to"], 17),
    (&["get", "rid"], 72),
    (&["give", "up"], 95),
    (&["go", "live"], 69),
    (&["go", "over"], 56),
    (&["go", "over", "head"], 8),
    (&["goe", "live"], 69),
    (&["got", "back", "to"], 17),
    (&["got", "rid"], 72),
    (&["graphic", "+process", "+unit"], 242),
    (&["green", "light"], 42),
    (&["half", "done"], 153),
    (&["half", "finish"], 153),
    (&["hand", "off"], 27),
    (&["hand", "over"], 28),
    (&["hang", "on", "to"], 126),
    (&["hang", "up"], 89),
    (&["head", "up"], 33),
    (&["held", "forev"], 170),
    (&["held", "indefinit"], 170),
    (&["held", "off"], 66),
    (&["her", "plate"], 117),
    (&["hi", "plate"], 117),
    (&["hire", "employe"], 172),
    (&["hire", "peopl"], 172),
    (&["hire", "personnel"], 172),
    (&["hire", "staff"], 172),
    (&["hire", "worker"], 172),
    (&["hold", "forev"], 170),
    (&["hold", "indefinit"], 170),
    (&["hold", "off"], 66),
    (&["home", "address"], 167),
    (&["hook", "up"], 90),
    (&["hous", "rule"], 113),
    (&["how", "+bad"], 142),
    (&["how", "+seriou"], 142),
    (&["how", "+sever"], 142),
    (&["how", "far", "along"], 109),
    (&["how", "fast"], 164),
    (&["how", "quickli"], 164),
    (&["how", "soon"], 164),
    (&["hung", "on", "to"], 126),
    (&["hung", "up"], 89),
    (&["ident", "+provid"], 230),
    (&["in", "again"], 155),
    (&["in", "charg"], 25),
    (&["in", "flight"], 152),
    (&["in", "the", "wild"], 128),
    (&["infrastructur", "+as", "+code"], 231),
    (&["inter", "+process", "+commun"], 209),
    (&["ip", "+address", "+manag"], 241),
    (&["iron", "out"], 52),
    (&["jot", "down"], 77),
    (&["journal", "+entri"], 219),
    (&["json", "+web", "+token"], 185),
    (&["jump", "the", "line"], 111),
    (&["jump", "the", "queue"], 111),
    (&["keep", "check"], 97),
    (&["keep", "forev"], 170),
    (&["keep", "hammer"], 122),
    (&["keep", "indefinit"], 170),
    (&["keep", "peek"], 97),
    (&["keep", "poll"], 97),
    (&["keep", "post"], 34),
    (&["keep", "refresh"], 97),
    (&["keep", "retri"], 122),
    (&["keep", "tab"], 40),
    (&["keep", "track"], 39),
    (&["keep", "try"], 122),
    (&["kei", "+perform", "+indic"], 220),
    (&["kept", "check"], 97),
    (&["kept", "forev"], 170),
    (&["kept", "hammer"], 122),
    (&["kept", "indefinit"], 170),
    (&["kept", "peek"], 97),
    (&["kept", "poll"], 97),
    (&["kept", "refresh"], 97),
    (&["kept", "retri"], 122),
    (&["kept", "try"], 122),
    (&["kick", "off"], 59),
    (&["kick", "up"], 1),
    (&["kick", "upstair"], 0),
    (&["lai", "out"], 141),
    (&["laid", "out"], 141),
    (&["larg", "+languag", "+model"], 224),
    (&["last", "minut"], 112),
    (&["left", "hang"], 110),
    (&["live", "in"], 173),
    (&["log", "in"], 80),
    (&["log", "out"], 100),
    (&["long", "wind"], 120),
    (&["look", "into"], 45),
    (&["look", "over"], 55),
    (&["look", "up"], 102),
    (&["loop", "in"], 32),
    (&["mail", "address"], 167),
    (&["make", "sure"], 53),
    (&["man", "+in", "+the", "+middl"], 237),
    (&["master", "+servic", "+agreement"], 215),
    (&["merg", "+request"], 199),
    (&["mid", "flight"], 152),
    (&["model", "+context", "+protocol"], 225),
    (&["monei", "back"], 154),
    (&["more", "than", "onc"], 160),
    (&["multi", "+factor", "+authent"], 187),
    (&["mutual", "+tl"], 240),
    (&["my", "plate"], 117),
    (&["network", "+address", "+translat"], 210),
    (&["no", "+hire"], 171),
    (&["no", "+poach"], 171),
    (&["non", "+disclosur", "+agreement"], 213),
    (&["note", "down"], 78),
    (&["object", "+and", "+kei", "+result"], 221),
    (&["off", "the", "shelf"], 124),
    (&["on", "hold"], 65),
    (&["on", "pager"], 21),
    (&["on", "the", "hook"], 26),
    (&["open", "+contain", "+initi"], 207),
    (&["open", "messag"], 18),
    (&["oper", "+system"], 206),
    (&["out", "+of", "+memori"], 204),
    (&["out", "of", "date"], 108),
    (&["out", "of", "the", "box"], 132),
    (&["pass", "along"], 31),
    (&["pass", "on"], 30),
    (&["pass", "through"], 29),
    (&["pass", "up"], 4),
    (&["person", "+identifi", "+inform"], 212),
    (&["phone", "+number"], 168),
    (&["pick", "up"], 22),
    (&["plain", "text"], 125),
    (&["poach", "employe"], 172),
    (&["poach", "peopl"], 172),
    (&["poach", "personnel"], 172),
    (&["poach", "staff"], 172),
    (&["poach", "worker"], 172),
    (&["point", "in", "time"], 145),
    (&["poke", "around"], 130),
    (&["postal", "address"], 167),
    (&["process", "+id"], 208),
    (&["process", "+identifi"], 208),
    (&["proof", "+kei", "+for", "+code", "+exchang"], 184),
    (&["prove", "who"], 138),
    (&["pull", "+request"], 198),
    (&["pull", "back"], 12),
    (&["push", "back", "against"], 116),
    (&["push", "back", "on"], 116),
    (&["push", "back", "with"], 116),
    (&["push", "up"], 5),
    (&["put", "off"], 67),
    (&["put", "on", "hold"], 64),
    (&["qualiti", "+assur"], 233),
    (&["ran", "longer"], 147),
    (&["ran", "out"], 103),
    (&["ran", "too", "long"], 148),
    (&["read", "through"], 57),
    (&["recruit", "employe"], 172),
    (&["recruit", "peopl"], 172),
    (&["recruit", "personnel"], 172),
    (&["recruit", "staff"], 172),
    (&["recruit", "worker"], 172),
    (&["remot", "+procedur", "+call"], 194),
    (&["request", "+for", "+comment"], 235),
    (&["resolv", "itself"], 94),
    (&["resolv", "themselv"], 94),
    (&["retain", "forev"], 170),
    (&["retain", "indefinit"], 170),
    (&["rip", "out"], 75),
    (&["role", "+base", "+access", "+control"], 188),
    (&["roll", "back"], 71),
    (&["roll", "out"], 70),
    (&["root", "+caus", "+analysi"], 203),
    (&["root", "caus"], 50),
    (&["run", "longer"], 147),
    (&["run", "out"], 103),
    (&["run", "too", "long"], 148),
    (&["second", "case"], 157),
    (&["second", "complaint"], 157),
    (&["second", "report"], 157),
    (&["second", "request"], 157),
    (&["second", "ticket"], 157),
    (&["secur", "+shell"], 227),
    (&["send", "back"], 15),
    (&["send", "up"], 2),
    (&["sent", "back"], 15),
    (&["sent", "up"], 2),
    (&["separ", "ticket"], 158),
    (&["server", "+sent", "+event"], 193),
    (&["server", "+side", "+request", "+forgeri"], 180),
    (&["servic", "+discoveri"], 226),
    (&["servic", "+level", "+agreement"], 201),
    (&["servic", "+level", "+indic"], 202),
    (&["servic", "+level", "+object"], 200),
    (&["set", "off"], 137),
    (&["set", "up"], 79),
    (&["shut", "down"], 62),
    (&["sign", "in"], 81),
    (&["sign", "off"], 41),
    (&["sign", "up"], 101),
    (&["singl", "+sign", "+on"], 186),
    (&["sit", "tight"], 136),
    (&["size", "up"], 58),
    (&["slip", "through", "the", "crack"], 107),
    (&["social", "+secur", "+number"], 169),
    (&["softwar", "+develop", "+kit"], 196),
    (&["sort", "itself"], 94),
    (&["sort", "out"], 51),
    (&["sort", "themselv"], 94),
    (&["spin", "up"], 60),
    (&["spun", "up"], 60),
    (&["stand", "down"], 13),
    (&["statement", "+of", "+work"], 214),
    (&["stood", "down"], 13),
    (&["stop", "work"], 150),
    (&["store", "forev"], 170),
    (&["store", "indefinit"], 170),
    (&["street", "address"], 167),
    (&["switch", "off"], 88),
    (&["switch", "on"], 87),
    (&["take", "longer"], 147),
    (&["take", "on"], 23),
    (&["take", "over"], 24),
    (&["take", "too", "long"], 148),
    (&["tear", "down"], 63),
    (&["their", "plate"], 117),
    (&["threw", "awai"], 74),
    (&["throw", "awai"], 74),
    (&["thumb", "up"], 127),
    (&["tidi", "up"], 129),
    (&["time", "+seri", "+databas"], 179),
    (&["time", "+to", "+live"], 192),
    (&["time", "out"], 92),
    (&["to", "do", "list"], 119),
    (&["took", "longer"], 147),
    (&["took", "on"], 23),
    (&["took", "over"], 24),
    (&["took", "too", "long"], 148),
    (&["tore", "down"], 63),
    (&["track", "down"], 49),
    (&["transport", "+layer", "+secur"], 190),
    (&["turn", "awai"], 134),
    (&["turn", "down"], 44),
    (&["turn", "off"], 86),
    (&["turn", "on"], 85),
    (&["twice"], 159),
    (&["under", "oath"], 114),
    (&["up", "the", "chain"], 6),
    (&["up", "to", "date"], 151),
    (&["up", "to", "speed"], 121),
    (&["us", "to", "work"], 149),
    (&["us", "up"], 104),
    (&["user", "+interfac"], 234),
    (&["virtual", "+machin"], 205),
    (&["virtual", "+privat", "+network"], 211),
    (&["walk", "awai"], 115),
    (&["walk", "back"], 11),
    (&["went", "over"], 56),
    (&["went", "over", "head"], 8),
    (&["whose", "plate"], 117),
    (&["wind", "back"], 10),
    (&["wind", "down"], 9),
    (&["wound", "back"], 10),
    (&["wound", "down"], 9),
    (&["write", "+ahead", "+log"], 178),
    (&["write", "back"], 16),
    (&["write", "down"], 76),
    (&["write", "out"], 146),
    (&["write", "up"], 20),
    (&["wrote", "back"], 16),
    (&["wrote", "down"], 76),
    (&["wrote", "out"], 146),
    (&["wrote", "up"], 20),
    (&["year", "+to", "+date"], 239),
    (&["your", "plate"], 117),
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
    fn everyday_idioms_imply_the_words_documents_use() {
        // work that happens without anyone ("on its own" is not read so: a reconciling
        // item that "clears on its own" is no automation)
        assert_eq!(implied(&stems("make it start by itself")), vec![&["automatic", "automatically"][..]]);
        assert!(implied(&stems("will it clear on its own")).is_empty());
        // how bad (adjacent only: "how do I state severity" is no such question)
        assert_eq!(implied(&stems("how bad is this outage")), vec![&["severity", "impact"][..]]);
        assert!(implied(&stems("how do I state severity")).is_empty());
        // counters going back to zero, a point-in-time copy, a job running too long
        assert_eq!(implied(&stems("the counter went back to zero")), vec![&["reset"][..]]);
        assert_eq!(implied(&stems("a point-in-time copy of the data")), vec![&["snapshot"][..]]);
        assert_eq!(implied(&stems("kill it if it runs longer than ten minutes")), vec![&["timeout", "duration"][..]]);
        // people at work: whose plate, butting heads, getting up to speed, jumping the queue
        assert_eq!(implied(&stems("whose plate does this land on")), vec![&["owner", "responsible", "assign"][..]]);
        assert_eq!(implied(&stems("two leads keep butting heads")), vec![&["conflict", "dispute", "disagreement"][..]]);
        assert_eq!(implied(&stems("get up to speed on the ticket")), vec![&["context", "background", "onboarding"][..]]);
        assert_eq!(implied(&stems("should it jump the queue")), vec![&["priority", "prioritize"][..]]);
        // defaults, ready-made parts, contracts
        assert_eq!(implied(&stems("it is off out of the box")), vec![&["default"][..]]);
        assert_eq!(implied(&stems("use something off the shelf")), vec![&["standard", "library", "existing"][..]]);
        assert_eq!(implied(&stems("swear under oath that we destroyed it")), vec![&["certify", "certification"][..]]);
        assert_eq!(implied(&stems("is that a reason to walk away")), vec![&["reject", "unacceptable"][..]]);
    }

    #[test]
    fn spelled_out_abbreviations_imply_the_abbreviation_only() {
        // hyphens split words; the spelled-out words must be adjacent
        assert_eq!(implied(&stems("is the write-ahead log replay done")), vec![&["wal"][..]]);
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
