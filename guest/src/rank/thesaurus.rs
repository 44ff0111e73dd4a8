//! A domain-independent thesaurus of technical English for recall ranking (§21.3.3).
//!
//! WordNet (the [`super::lexicon`]) knows general English but not how software
//! documentation words its ideas: "absent" and "optional", "strip" and "drop", "down"
//! and "unavailable", "downside" and "limitation", "config" and "configuration". Each
//! group below is a set of words that documentation uses interchangeably for one idea,
//! written from general usage across software manuals, APIs, operations runbooks and
//! protocols (not from any evaluation set). An intent word in a group also matches
//! units that use another member, at [`SYNONYM`] strength, in the semantic signal only
//! (the lexical signal stays literal). Words are matched by Porter stem.

#[cfg(test)]
use super::stem::stem;

/// Match strength of a thesaurus synonym relative to the word itself.
pub const SYNONYM: f32 = 0.7;

/// Interchangeable words, one idea per group (matched through [`STEMS`]).
#[cfg_attr(not(test), allow(dead_code))]
const GROUPS: &[&[&str]] = &[
    // removing and undoing
    &["remove", "delete", "drop", "strip", "erase", "discard", "purge", "unset", "clear", "eliminate"],
    &["reset", "revert", "restore", "rollback", "undo"],
    &["override", "overwrite", "replace", "supersede"],
    &["exclude", "omit", "skip", "ignore", "filter"],
    &["disable", "deactivate", "turn off", "switch off"],
    &["enable", "activate", "turn on", "switch on"],
    // presence and absence
    &["missing", "absent", "nonexistent", "unavailable", "lacking"],
    &["optional", "nonrequired", "unrequired"],
    &["required", "mandatory", "compulsory", "obligatory"],
    &["default", "fallback", "implicit"],
    // failure
    &["fail", "failure", "error", "fault", "crash", "broken"],
    &["down", "outage", "unavailable", "unreachable", "offline"],
    &["retry", "reattempt", "backoff"],
    &["reconnect", "resume", "resumption", "resumability", "reestablish", "redeliver", "redelivery", "replay"],
    &["disconnect", "drop", "interrupt", "sever", "hang up"],
    &["timeout", "deadline", "expiry", "expire"],
    &["invalid", "malformed", "bad", "corrupt", "illegal"],
    // limits and drawbacks
    &["limit", "cap", "ceiling", "maximum", "quota", "threshold", "bound"],
    &["restrict", "constrain", "throttle", "confine"],
    &["limitation", "downside", "drawback", "caveat", "disadvantage", "shortcoming", "restriction", "unsupported"],
    &["benefit", "advantage", "upside", "pro"],
    // lifecycle
    &["start", "launch", "boot", "spawn", "begin", "startup"],
    &["stop", "halt", "terminate", "kill", "shutdown", "end"],
    &["cancel", "abort", "revoke", "withdraw"],
    &["restart", "reboot", "relaunch", "reload"],
    &["create", "make", "provision", "generate", "establish"],
    &["update", "modify", "change", "edit", "alter", "patch"],
    &["deploy", "release", "rollout", "ship", "publish"],
    &["install", "setup", "bootstrap"],
    &["manage", "maintain", "administer", "operate", "control", "handle", "govern"],
    &["attach", "connect", "join", "link", "bind", "mount", "plug"],
    &["detach", "disconnect", "unlink", "unmount", "unplug"],
    &["upgrade", "migrate", "migration", "update"],
    &["wait", "block", "await", "pause"],
    &["schedule", "cron", "periodic", "interval", "recurring"],
    &["run", "execute", "invoke", "exec"],
    &["configure", "specify", "define", "declare", "set"],
    &["allow", "permit", "whitelist", "allowlist"],
    &["deny", "reject", "refuse", "forbid", "blocklist", "blacklist"],
    &["increase", "raise", "grow", "expand", "extend"],
    &["decrease", "reduce", "lower", "shrink", "trim"],
    &["convert", "transform", "translate", "map", "coerce"],
    &["show", "display", "print", "output", "render", "view"],
    &["test", "assert", "verify", "check"],
    &["subscribe", "listen", "follow", "watch"],
    &["size", "length", "capacity", "volume"],
    // data and storage
    &["store", "persist", "save", "retain", "keep"],
    &["retention", "lifetime", "ttl", "expiration"],
    &["cache", "memoize", "buffer"],
    &["fetch", "retrieve", "get", "read", "load", "pull"],
    &["send", "emit", "push", "transmit", "post", "dispatch"],
    &["receive", "accept", "ingest", "consume"],
    &["list", "enumerate", "index", "catalog"],
    &["search", "find", "lookup", "query", "discover"],
    &["copy", "duplicate", "clone", "replicate", "mirror"],
    &["merge", "combine", "join", "union", "concatenate"],
    &["split", "chunk", "partition", "shard", "segment"],
    &["sort", "order", "rank"],
    &["paginate", "pagination", "page", "cursor", "offset"],
    &["compress", "gzip", "zip", "deflate"],
    &["encrypt", "cipher", "encipher"],
    &["hash", "digest", "checksum", "fingerprint"],
    // access and security
    &["authenticate", "authentication", "login", "signin", "credential", "auth"],
    &["authorize", "authorization", "permission", "grant", "consent", "scope"],
    &["secret", "password", "credential", "token", "key"],
    &["attack", "exploit", "threat", "malicious", "adversary", "attacker"],
    &["mitigation", "protection", "safeguard", "defense", "countermeasure"],
    &["expose", "publish", "open", "bind", "listen"],
    &["isolate", "sandbox", "separate", "segregate"],
    &["trust", "verify", "validate", "check"],
    &["private", "internal", "local", "loopback", "localhost"],
    &["public", "external", "remote"],
    &["existing", "preexisting", "external", "unmanaged"],
    // structure and configuration
    &["config", "configuration", "settings", "setting", "options", "preferences"],
    &["parameter", "param", "argument", "arg", "flag", "option"],
    &["variable", "var", "env", "environment"],
    &["directory", "dir", "folder", "path"],
    &["file", "document"],
    &["field", "attribute", "property", "key", "element"],
    &["format", "schema", "syntax", "structure", "shape", "layout"],
    &["example", "sample", "illustration", "demo"],
    &["overview", "introduction", "summary", "basics"],
    &["template", "pattern", "placeholder"],
    &["label", "tag", "annotation", "metadata"],
    &["name", "identifier", "id", "alias"],
    &["version", "revision", "release"],
    &["dependency", "prerequisite", "requirement", "depends"],
    &["group", "cluster", "collection", "set", "pool"],
    // systems
    &["server", "host", "backend", "service"],
    &["host", "machine", "laptop", "workstation", "computer", "node"],
    &["client", "consumer", "caller", "frontend"],
    &["container", "pod", "instance"],
    &["image", "snapshot"],
    &["network", "subnet", "vlan", "bridge"],
    &["port", "socket", "endpoint"],
    &["address", "ip", "hostname"],
    &["database", "db", "datastore", "store"],
    &["queue", "buffer", "backlog"],
    &["log", "logging", "trace", "record", "audit"],
    &["metric", "measurement", "statistic", "stat", "gauge", "counter"],
    &["alert", "notification", "alarm", "page", "warn"],
    &["monitor", "observe", "watch", "probe"],
    &["health", "liveness", "readiness", "healthcheck", "alive"],
    &["memory", "ram", "mem"],
    &["cpu", "processor", "core"],
    &["gpu", "accelerator", "cuda"],
    &["disk", "volume", "storage", "drive"],
    &["request", "call", "invocation", "query"],
    &["response", "reply", "result", "answer"],
    &["message", "event", "notification"],
    &["stream", "streaming", "sse", "chunked"],
    &["progress", "status", "percent", "completion"],
    &["latency", "delay", "lag", "duration"],
    &["throughput", "rate", "bandwidth"],
    &["percentile", "quantile"],
    &["average", "mean", "avg"],
    &["count", "total", "number", "tally"],
    &["difference", "compare", "comparison", "versus", "vs"],
    &["previous", "prior", "earlier", "last", "former"],
    &["today", "now", "current", "present"],
    &["user", "human", "person", "operator"],
    &["model", "llm", "ai"],
    &["tool", "function", "plugin", "extension"],
    &["prompt", "instruction", "template"],
    &["app", "application", "program"],
    &["production", "prod", "live"],
    &["development", "dev", "local"],
    &["documentation", "docs", "doc", "spec", "specification", "manual"],
];

/// [`GROUPS`] by Porter stem, group by group (words of more than one word left out):
/// written out so that no instance stems the table on its first recall (the component
/// starts a fresh instance per call). `stems_are_the_groups_stemmed` checks it.
const STEMS: &[&[&str]] = &[
    &["remov", "delet", "drop", "strip", "eras", "discard", "purg", "unset", "clear", "elimin"],
    &["reset", "revert", "restor", "rollback", "undo"],
    &["overrid", "overwrit", "replac", "supersed"],
    &["exclud", "omit", "skip", "ignor", "filter"],
    &["disabl", "deactiv"],
    &["enabl", "activ"],
    &["miss", "absent", "nonexist", "unavail", "lack"],
    &["option", "nonrequir", "unrequir"],
    &["requir", "mandatori", "compulsori", "obligatori"],
    &["default", "fallback", "implicit"],
    &["fail", "failur", "error", "fault", "crash", "broken"],
    &["down", "outag", "unavail", "unreach", "offlin"],
    &["retri", "reattempt", "backoff"],
    &["reconnect", "resum", "resumpt", "resum", "reestablish", "redeliv", "redeliveri", "replai"],
    &["disconnect", "drop", "interrupt", "sever"],
    &["timeout", "deadlin", "expiri", "expir"],
    &["invalid", "malform", "bad", "corrupt", "illeg"],
    &["limit", "cap", "ceil", "maximum", "quota", "threshold", "bound"],
    &["restrict", "constrain", "throttl", "confin"],
    &["limit", "downsid", "drawback", "caveat", "disadvantag", "shortcom", "restrict", "unsupport"],
    &["benefit", "advantag", "upsid", "pro"],
    &["start", "launch", "boot", "spawn", "begin", "startup"],
    &["stop", "halt", "termin", "kill", "shutdown", "end"],
    &["cancel", "abort", "revok", "withdraw"],
    &["restart", "reboot", "relaunch", "reload"],
    &["creat", "make", "provis", "gener", "establish"],
    &["updat", "modifi", "chang", "edit", "alter", "patch"],
    &["deploi", "releas", "rollout", "ship", "publish"],
    &["instal", "setup", "bootstrap"],
    &["manag", "maintain", "administ", "oper", "control", "handl", "govern"],
    &["attach", "connect", "join", "link", "bind", "mount", "plug"],
    &["detach", "disconnect", "unlink", "unmount", "unplug"],
    &["upgrad", "migrat", "migrat", "updat"],
    &["wait", "block", "await", "paus"],
    &["schedul", "cron", "period", "interv", "recur"],
    &["run", "execut", "invok", "exec"],
    &["configur", "specifi", "defin", "declar", "set"],
    &["allow", "permit", "whitelist", "allowlist"],
    &["deni", "reject", "refus", "forbid", "blocklist", "blacklist"],
    &["increas", "rais", "grow", "expand", "extend"],
    &["decreas", "reduc", "lower", "shrink", "trim"],
    &["convert", "transform", "translat", "map", "coerc"],
    &["show", "displai", "print", "output", "render", "view"],
    &["test", "assert", "verifi", "check"],
    &["subscrib", "listen", "follow", "watch"],
    &["size", "length", "capac", "volum"],
    &["store", "persist", "save", "retain", "keep"],
    &["retent", "lifetim", "ttl", "expir"],
    &["cach", "memoiz", "buffer"],
    &["fetch", "retriev", "get", "read", "load", "pull"],
    &["send", "emit", "push", "transmit", "post", "dispatch"],
    &["receiv", "accept", "ingest", "consum"],
    &["list", "enumer", "index", "catalog"],
    &["search", "find", "lookup", "queri", "discov"],
    &["copi", "duplic", "clone", "replic", "mirror"],
    &["merg", "combin", "join", "union", "concaten"],
    &["split", "chunk", "partit", "shard", "segment"],
    &["sort", "order", "rank"],
    &["pagin", "pagin", "page", "cursor", "offset"],
    &["compress", "gzip", "zip", "deflat"],
    &["encrypt", "cipher", "enciph"],
    &["hash", "digest", "checksum", "fingerprint"],
    &["authent", "authent", "login", "signin", "credenti", "auth"],
    &["author", "author", "permiss", "grant", "consent", "scope"],
    &["secret", "password", "credenti", "token", "kei"],
    &["attack", "exploit", "threat", "malici", "adversari", "attack"],
    &["mitig", "protect", "safeguard", "defens", "countermeasur"],
    &["expos", "publish", "open", "bind", "listen"],
    &["isol", "sandbox", "separ", "segreg"],
    &["trust", "verifi", "valid", "check"],
    &["privat", "intern", "local", "loopback", "localhost"],
    &["public", "extern", "remot"],
    &["exist", "preexist", "extern", "unmanag"],
    &["config", "configur", "set", "set", "option", "prefer"],
    &["paramet", "param", "argument", "arg", "flag", "option"],
    &["variabl", "var", "env", "environ"],
    &["directori", "dir", "folder", "path"],
    &["file", "document"],
    &["field", "attribut", "properti", "kei", "element"],
    &["format", "schema", "syntax", "structur", "shape", "layout"],
    &["exampl", "sampl", "illustr", "demo"],
    &["overview", "introduct", "summari", "basic"],
    &["templat", "pattern", "placehold"],
    &["label", "tag", "annot", "metadata"],
    &["name", "identifi", "id", "alia"],
    &["version", "revis", "releas"],
    &["depend", "prerequisit", "requir", "depend"],
    &["group", "cluster", "collect", "set", "pool"],
    &["server", "host", "backend", "servic"],
    &["host", "machin", "laptop", "workstat", "comput", "node"],
    &["client", "consum", "caller", "frontend"],
    &["contain", "pod", "instanc"],
    &["imag", "snapshot"],
    &["network", "subnet", "vlan", "bridg"],
    &["port", "socket", "endpoint"],
    &["address", "ip", "hostnam"],
    &["databas", "db", "datastor", "store"],
    &["queue", "buffer", "backlog"],
    &["log", "log", "trace", "record", "audit"],
    &["metric", "measur", "statist", "stat", "gaug", "counter"],
    &["alert", "notif", "alarm", "page", "warn"],
    &["monitor", "observ", "watch", "probe"],
    &["health", "live", "readi", "healthcheck", "aliv"],
    &["memori", "ram", "mem"],
    &["cpu", "processor", "core"],
    &["gpu", "acceler", "cuda"],
    &["disk", "volum", "storag", "drive"],
    &["request", "call", "invoc", "queri"],
    &["respons", "repli", "result", "answer"],
    &["messag", "event", "notif"],
    &["stream", "stream", "sse", "chunk"],
    &["progress", "statu", "percent", "complet"],
    &["latenc", "delai", "lag", "durat"],
    &["throughput", "rate", "bandwidth"],
    &["percentil", "quantil"],
    &["averag", "mean", "avg"],
    &["count", "total", "number", "talli"],
    &["differ", "compar", "comparison", "versu", "vs"],
    &["previou", "prior", "earlier", "last", "former"],
    &["todai", "now", "current", "present"],
    &["user", "human", "person", "oper"],
    &["model", "llm", "ai"],
    &["tool", "function", "plugin", "extens"],
    &["prompt", "instruct", "templat"],
    &["app", "applic", "program"],
    &["product", "prod", "live"],
    &["develop", "dev", "local"],
    &["document", "doc", "doc", "spec", "specif", "manual"],
];

/// Every stem of [`STEMS`] with the groups it is in, sorted by stem: a query word's
/// synonyms are one binary search away. Written out (not built on first use, which a
/// fresh instance per call would pay every time); `stem_index_is_stems_inverted` checks it.
const STEM_INDEX: &[(&str, &[u16])] = &[
    ("abort", &[23]), ("absent", &[6]), ("acceler", &[105]), ("accept", &[51]), ("activ", &[5]),
    ("address", &[95]), ("administ", &[29]), ("advantag", &[20]), ("adversari", &[65]),
    ("ai", &[121]), ("alarm", &[100]), ("alert", &[100]), ("alia", &[84]), ("aliv", &[102]),
    ("allow", &[37]), ("allowlist", &[37]), ("alter", &[26]), ("annot", &[83]), ("answer", &[108]),
    ("app", &[124]), ("applic", &[124]), ("arg", &[74]), ("argument", &[74]), ("assert", &[43]),
    ("attach", &[30]), ("attack", &[65]), ("attribut", &[78]), ("audit", &[98]), ("auth", &[62]),
    ("authent", &[62]), ("author", &[63]), ("averag", &[115]), ("avg", &[115]), ("await", &[33]),
    ("backend", &[88]), ("backlog", &[97]), ("backoff", &[12]), ("bad", &[16]),
    ("bandwidth", &[113]), ("basic", &[81]), ("begin", &[21]), ("benefit", &[20]),
    ("bind", &[30, 67]), ("blacklist", &[38]), ("block", &[33]), ("blocklist", &[38]),
    ("boot", &[21]), ("bootstrap", &[28]), ("bound", &[17]), ("bridg", &[93]), ("broken", &[10]),
    ("buffer", &[48, 97]), ("cach", &[48]), ("call", &[107]), ("caller", &[90]), ("cancel", &[23]),
    ("cap", &[17]), ("capac", &[45]), ("catalog", &[52]), ("caveat", &[19]), ("ceil", &[17]),
    ("chang", &[26]), ("check", &[43, 69]), ("checksum", &[61]), ("chunk", &[56, 110]),
    ("cipher", &[60]), ("clear", &[0]), ("client", &[90]), ("clone", &[54]), ("cluster", &[87]),
    ("coerc", &[41]), ("collect", &[87]), ("combin", &[55]), ("compar", &[117]),
    ("comparison", &[117]), ("complet", &[111]), ("compress", &[59]), ("compulsori", &[8]),
    ("comput", &[89]), ("concaten", &[55]), ("config", &[73]), ("configur", &[36, 73]),
    ("confin", &[18]), ("connect", &[30]), ("consent", &[63]), ("constrain", &[18]),
    ("consum", &[51, 90]), ("contain", &[91]), ("control", &[29]), ("convert", &[41]),
    ("copi", &[54]), ("core", &[104]), ("corrupt", &[16]), ("count", &[116]), ("counter", &[99]),
    ("countermeasur", &[66]), ("cpu", &[104]), ("crash", &[10]), ("creat", &[25]),
    ("credenti", &[62, 64]), ("cron", &[34]), ("cuda", &[105]), ("current", &[119]),
    ("cursor", &[58]), ("databas", &[96]), ("datastor", &[96]), ("db", &[96]), ("deactiv", &[4]),
    ("deadlin", &[15]), ("declar", &[36]), ("decreas", &[40]), ("default", &[9]), ("defens", &[66]),
    ("defin", &[36]), ("deflat", &[59]), ("delai", &[112]), ("delet", &[0]), ("demo", &[80]),
    ("deni", &[38]), ("depend", &[86]), ("deploi", &[27]), ("detach", &[31]), ("dev", &[126]),
    ("develop", &[126]), ("differ", &[117]), ("digest", &[61]), ("dir", &[76]),
    ("directori", &[76]), ("disabl", &[4]), ("disadvantag", &[19]), ("discard", &[0]),
    ("disconnect", &[14, 31]), ("discov", &[53]), ("disk", &[106]), ("dispatch", &[50]),
    ("displai", &[42]), ("doc", &[127]), ("document", &[77, 127]), ("down", &[11]),
    ("downsid", &[19]), ("drawback", &[19]), ("drive", &[106]), ("drop", &[0, 14]),
    ("duplic", &[54]), ("durat", &[112]), ("earlier", &[118]), ("edit", &[26]), ("element", &[78]),
    ("elimin", &[0]), ("emit", &[50]), ("enabl", &[5]), ("enciph", &[60]), ("encrypt", &[60]),
    ("end", &[22]), ("endpoint", &[94]), ("enumer", &[52]), ("env", &[75]), ("environ", &[75]),
    ("eras", &[0]), ("error", &[10]), ("establish", &[25]), ("event", &[109]), ("exampl", &[80]),
    ("exclud", &[3]), ("exec", &[35]), ("execut", &[35]), ("exist", &[72]), ("expand", &[39]),
    ("expir", &[15, 47]), ("expiri", &[15]), ("exploit", &[65]), ("expos", &[67]),
    ("extend", &[39]), ("extens", &[122]), ("extern", &[71, 72]), ("fail", &[10]),
    ("failur", &[10]), ("fallback", &[9]), ("fault", &[10]), ("fetch", &[49]), ("field", &[78]),
    ("file", &[77]), ("filter", &[3]), ("find", &[53]), ("fingerprint", &[61]), ("flag", &[74]),
    ("folder", &[76]), ("follow", &[44]), ("forbid", &[38]), ("format", &[79]), ("former", &[118]),
    ("frontend", &[90]), ("function", &[122]), ("gaug", &[99]), ("gener", &[25]), ("get", &[49]),
    ("govern", &[29]), ("gpu", &[105]), ("grant", &[63]), ("group", &[87]), ("grow", &[39]),
    ("gzip", &[59]), ("halt", &[22]), ("handl", &[29]), ("hash", &[61]), ("health", &[102]),
    ("healthcheck", &[102]), ("host", &[88, 89]), ("hostnam", &[95]), ("human", &[120]),
    ("id", &[84]), ("identifi", &[84]), ("ignor", &[3]), ("illeg", &[16]), ("illustr", &[80]),
    ("imag", &[92]), ("implicit", &[9]), ("increas", &[39]), ("index", &[52]), ("ingest", &[51]),
    ("instal", &[28]), ("instanc", &[91]), ("instruct", &[123]), ("intern", &[70]),
    ("interrupt", &[14]), ("interv", &[34]), ("introduct", &[81]), ("invalid", &[16]),
    ("invoc", &[107]), ("invok", &[35]), ("ip", &[95]), ("isol", &[68]), ("join", &[30, 55]),
    ("keep", &[46]), ("kei", &[64, 78]), ("kill", &[22]), ("label", &[83]), ("lack", &[6]),
    ("lag", &[112]), ("laptop", &[89]), ("last", &[118]), ("latenc", &[112]), ("launch", &[21]),
    ("layout", &[79]), ("length", &[45]), ("lifetim", &[47]), ("limit", &[17, 19]), ("link", &[30]),
    ("list", &[52]), ("listen", &[44, 67]), ("live", &[102, 125]), ("llm", &[121]), ("load", &[49]),
    ("local", &[70, 126]), ("localhost", &[70]), ("log", &[98]), ("login", &[62]),
    ("lookup", &[53]), ("loopback", &[70]), ("lower", &[40]), ("machin", &[89]),
    ("maintain", &[29]), ("make", &[25]), ("malform", &[16]), ("malici", &[65]), ("manag", &[29]),
    ("mandatori", &[8]), ("manual", &[127]), ("map", &[41]), ("maximum", &[17]), ("mean", &[115]),
    ("measur", &[99]), ("mem", &[103]), ("memoiz", &[48]), ("memori", &[103]), ("merg", &[55]),
    ("messag", &[109]), ("metadata", &[83]), ("metric", &[99]), ("migrat", &[32]),
    ("mirror", &[54]), ("miss", &[6]), ("mitig", &[66]), ("model", &[121]), ("modifi", &[26]),
    ("monitor", &[101]), ("mount", &[30]), ("name", &[84]), ("network", &[93]), ("node", &[89]),
    ("nonexist", &[6]), ("nonrequir", &[7]), ("notif", &[100, 109]), ("now", &[119]),
    ("number", &[116]), ("obligatori", &[8]), ("observ", &[101]), ("offlin", &[11]),
    ("offset", &[58]), ("omit", &[3]), ("open", &[67]), ("oper", &[29, 120]),
    ("option", &[7, 73, 74]), ("order", &[57]), ("outag", &[11]), ("output", &[42]),
    ("overrid", &[2]), ("overview", &[81]), ("overwrit", &[2]), ("page", &[58, 100]),
    ("pagin", &[58]), ("param", &[74]), ("paramet", &[74]), ("partit", &[56]), ("password", &[64]),
    ("patch", &[26]), ("path", &[76]), ("pattern", &[82]), ("paus", &[33]), ("percent", &[111]),
    ("percentil", &[114]), ("period", &[34]), ("permiss", &[63]), ("permit", &[37]),
    ("persist", &[46]), ("person", &[120]), ("placehold", &[82]), ("plug", &[30]),
    ("plugin", &[122]), ("pod", &[91]), ("pool", &[87]), ("port", &[94]), ("post", &[50]),
    ("preexist", &[72]), ("prefer", &[73]), ("prerequisit", &[86]), ("present", &[119]),
    ("previou", &[118]), ("print", &[42]), ("prior", &[118]), ("privat", &[70]), ("pro", &[20]),
    ("probe", &[101]), ("processor", &[104]), ("prod", &[125]), ("product", &[125]),
    ("program", &[124]), ("progress", &[111]), ("prompt", &[123]), ("properti", &[78]),
    ("protect", &[66]), ("provis", &[25]), ("public", &[71]), ("publish", &[27, 67]),
    ("pull", &[49]), ("purg", &[0]), ("push", &[50]), ("quantil", &[114]), ("queri", &[53, 107]),
    ("queue", &[97]), ("quota", &[17]), ("rais", &[39]), ("ram", &[103]), ("rank", &[57]),
    ("rate", &[113]), ("read", &[49]), ("readi", &[102]), ("reattempt", &[12]), ("reboot", &[24]),
    ("receiv", &[51]), ("reconnect", &[13]), ("record", &[98]), ("recur", &[34]),
    ("redeliv", &[13]), ("redeliveri", &[13]), ("reduc", &[40]), ("reestablish", &[13]),
    ("refus", &[38]), ("reject", &[38]), ("relaunch", &[24]), ("releas", &[27, 85]),
    ("reload", &[24]), ("remot", &[71]), ("remov", &[0]), ("render", &[42]), ("replac", &[2]),
    ("replai", &[13]), ("repli", &[108]), ("replic", &[54]), ("request", &[107]),
    ("requir", &[8, 86]), ("reset", &[1]), ("respons", &[108]), ("restart", &[24]),
    ("restor", &[1]), ("restrict", &[18, 19]), ("result", &[108]), ("resum", &[13]),
    ("resumpt", &[13]), ("retain", &[46]), ("retent", &[47]), ("retri", &[12]), ("retriev", &[49]),
    ("revert", &[1]), ("revis", &[85]), ("revok", &[23]), ("rollback", &[1]), ("rollout", &[27]),
    ("run", &[35]), ("safeguard", &[66]), ("sampl", &[80]), ("sandbox", &[68]), ("save", &[46]),
    ("schedul", &[34]), ("schema", &[79]), ("scope", &[63]), ("search", &[53]), ("secret", &[64]),
    ("segment", &[56]), ("segreg", &[68]), ("send", &[50]), ("separ", &[68]), ("server", &[88]),
    ("servic", &[88]), ("set", &[36, 73, 87]), ("setup", &[28]), ("sever", &[14]), ("shape", &[79]),
    ("shard", &[56]), ("ship", &[27]), ("shortcom", &[19]), ("show", &[42]), ("shrink", &[40]),
    ("shutdown", &[22]), ("signin", &[62]), ("size", &[45]), ("skip", &[3]), ("snapshot", &[92]),
    ("socket", &[94]), ("sort", &[57]), ("spawn", &[21]), ("spec", &[127]), ("specif", &[127]),
    ("specifi", &[36]), ("split", &[56]), ("sse", &[110]), ("start", &[21]), ("startup", &[21]),
    ("stat", &[99]), ("statist", &[99]), ("statu", &[111]), ("stop", &[22]), ("storag", &[106]),
    ("store", &[46, 96]), ("stream", &[110]), ("strip", &[0]), ("structur", &[79]),
    ("subnet", &[93]), ("subscrib", &[44]), ("summari", &[81]), ("supersed", &[2]),
    ("syntax", &[79]), ("tag", &[83]), ("talli", &[116]), ("templat", &[82, 123]),
    ("termin", &[22]), ("test", &[43]), ("threat", &[65]), ("threshold", &[17]), ("throttl", &[18]),
    ("throughput", &[113]), ("timeout", &[15]), ("todai", &[119]), ("token", &[64]),
    ("tool", &[122]), ("total", &[116]), ("trace", &[98]), ("transform", &[41]),
    ("translat", &[41]), ("transmit", &[50]), ("trim", &[40]), ("trust", &[69]), ("ttl", &[47]),
    ("unavail", &[6, 11]), ("undo", &[1]), ("union", &[55]), ("unlink", &[31]), ("unmanag", &[72]),
    ("unmount", &[31]), ("unplug", &[31]), ("unreach", &[11]), ("unrequir", &[7]), ("unset", &[0]),
    ("unsupport", &[19]), ("updat", &[26, 32]), ("upgrad", &[32]), ("upsid", &[20]),
    ("user", &[120]), ("valid", &[69]), ("var", &[75]), ("variabl", &[75]), ("verifi", &[43, 69]),
    ("version", &[85]), ("versu", &[117]), ("view", &[42]), ("vlan", &[93]), ("volum", &[45, 106]),
    ("vs", &[117]), ("wait", &[33]), ("warn", &[100]), ("watch", &[44, 101]), ("whitelist", &[37]),
    ("withdraw", &[23]), ("workstat", &[89]), ("zip", &[59]),
];

/// The stems a word's stem stands in for in technical English (empty if none): the other
/// members of every group it is in, sorted, deduplicated, itself excluded.
pub fn synonyms(word_stem: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let Ok(at) = STEM_INDEX.binary_search_by(|(s, _)| (*s).cmp(word_stem)) else { return out };
    for &g in STEM_INDEX[at].1 {
        if let Some(group) = STEMS.get(g as usize) {
            out.extend(group.iter().copied().filter(|o| *o != word_stem));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_symmetric_and_exclude_the_word() {
        let s = synonyms(&stem("absent"));
        assert!(s.contains(&stem("missing").as_str()), "{s:?}");
        assert!(synonyms(&stem("missing")).contains(&stem("absent").as_str()));
        assert!(!s.contains(&stem("absent").as_str()));
        assert!(synonyms("zzzz").is_empty());
        for g in GROUPS {
            assert!(g.len() >= 2, "{g:?}");
            assert!(g.iter().all(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == ' ')), "{g:?}");
        }
    }

    #[test]
    fn stem_index_is_stems_inverted() {
        let mut want: std::collections::BTreeMap<&str, Vec<u16>> = Default::default();
        for (g, stems) in STEMS.iter().enumerate() {
            for s in *stems {
                let gs = want.entry(s).or_default();
                if !gs.contains(&(g as u16)) {
                    gs.push(g as u16);
                }
            }
        }
        let got: Vec<(&str, Vec<u16>)> = STEM_INDEX.iter().map(|(s, g)| (*s, g.to_vec())).collect();
        assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn stems_are_the_groups_stemmed() {
        assert_eq!(STEMS.len(), GROUPS.len());
        let mut table: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (g, s) in GROUPS.iter().zip(STEMS) {
            let stems: Vec<String> = g.iter().filter(|w| !w.contains(' ')).map(|w| stem(w)).collect();
            assert_eq!(stems, *s, "{g:?}");
            for x in &stems {
                table.entry(x.clone()).or_default().extend(stems.iter().filter(|o| *o != x).cloned());
            }
        }
        // the same answers as a stem -> synonyms table built from the words
        for (k, mut v) in table {
            v.sort();
            v.dedup();
            assert_eq!(v, synonyms(&k), "{k}");
        }
    }
}
