//! A domain-independent thesaurus of technical and professional English for recall
//! ranking (§21.3.3).
//!
//! WordNet (the [`super::lexicon`]) knows general English but not how software
//! documentation words its ideas: "absent" and "optional", "strip" and "drop", "down"
//! and "unavailable", "downside" and "limitation", "config" and "configuration"; nor how
//! contracts, accounts and support desks word theirs: "nda" and "confidentiality",
//! "lawyer" and "counsel", "vendor" and "supplier", "refund" and "reimbursement". Each
//! group below is a set of words that such documents use interchangeably for one idea,
//! written from general usage across software manuals, APIs, operations runbooks,
//! protocols, contracts, finance and support procedures (not from any evaluation set's
//! wording). An intent word in a group also matches
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
    &["remove", "delete", "drop", "strip", "erase", "discard", "purge", "unset", "clear", "eliminate", "wipe", "toss"],
    &["reset", "revert", "restore", "rollback", "undo"],
    &["override", "overwrite", "replace", "supersede"],
    &["exclude", "omit", "skip", "ignore", "filter"],
    &["disable", "deactivate", "turn off", "switch off"],
    &["enable", "activate", "turn on", "switch on"],
    // presence and absence
    &["missing", "absent", "nonexistent", "unavailable", "lacking"],
    &["optional", "nonrequired", "unrequired"],
    &["required", "mandatory", "compulsory", "obligatory"],
    &["default", "fallback", "implicit", "baseline"],
    // failure
    &["fail", "failure", "error", "fault", "crash", "broken", "bomb", "flunk"],
    &["down", "outage", "unavailable", "unreachable", "offline"],
    &["retry", "reattempt", "backoff"],
    &["reconnect", "resume", "resumption", "resumability", "reestablish", "redeliver", "redelivery", "replay"],
    &["disconnect", "drop", "interrupt", "sever", "hang up"],
    &["timeout", "deadline", "expiry", "expire"],
    &["invalid", "malformed", "bad", "corrupt", "illegal", "junk"],
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
    &["schedule", "cron", "periodic", "interval", "recurring", "timetable", "hourly", "daily", "weekly"],
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
    &["merge", "combine", "join", "union", "concatenate", "glue"],
    &["forward", "relay", "passthrough"],
    &["split", "chunk", "partition", "shard", "segment"],
    &["sort", "order", "rank"],
    &["paginate", "pagination", "page", "cursor", "offset"],
    &["compress", "gzip", "zip", "deflate"],
    &["encrypt", "cipher", "encipher", "scramble"],
    &["sleep", "nap", "snooze"],
    &["destroy", "shred", "dispose"],
    &["dim", "faded", "faint"],
    &["verbose", "wordy", "rambling"],
    &["hash", "digest", "checksum", "fingerprint"],
    // access and security
    &["authenticate", "authentication", "login", "signin", "credential", "auth"],
    &["authorize", "authorization", "permission", "grant", "consent", "scope"],
    &["secret", "password", "credential", "token", "key", "creds"],
    &["attack", "exploit", "threat", "malicious", "adversary", "attacker", "hacker", "crook"],
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
    &["metric", "measurement", "statistic", "stat", "gauge", "counter", "kpi"],
    &["alert", "notification", "alarm", "page", "warn"],
    &["monitor", "observe", "watch", "probe"],
    &["health", "liveness", "readiness", "healthcheck", "alive"],
    &["memory", "ram", "mem"],
    &["cpu", "processor", "core"],
    &["gpu", "accelerator", "cuda"],
    &["disk", "volume", "storage", "drive"],
    &["request", "call", "invocation", "query"],
    &["response", "respond", "reply", "result", "answer"],
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
    &["tool", "function", "plugin", "extension", "addon"],
    &["prompt", "instruction", "template"],
    &["app", "application", "program"],
    &["production", "prod", "live"],
    &["development", "dev", "local"],
    &["documentation", "docs", "doc", "spec", "specification", "manual"],
    // engineering process
    &["fix", "repair", "remedy", "remediate", "remediation", "resolve", "resolution", "settle"],
    &["finish", "done", "finalize", "complete"],
    &["bug", "defect", "glitch", "flaw"],
    &["vulnerability", "vuln", "cve", "weakness", "flaw"],
    &["flaky", "intermittent", "nondeterministic", "sporadic", "unstable"],
    &["slow", "sluggish", "laggy", "slowness"],
    &["refactor", "restructure", "rewrite", "cleanup"],
    &["repo", "repository", "codebase", "monorepo"],
    &["library", "package", "crate", "lib"],
    &["pr", "changeset", "changelist"],
    &["rule", "policy", "guideline", "convention", "standard", "norm"],
    &["explain", "describe", "clarify", "elaborate"],
    &["ask", "inquire", "inquiry", "question"],
    &["help", "assist", "assistance", "aid"],
    &["owner", "maintainer", "steward"],
    &["important", "essential", "crucial", "vital"],
    &["urgent", "critical", "severe", "emergency", "asap", "pressing"],
    &["priority", "severity", "urgency", "importance"],
    &["prohibit", "ban", "disallow", "forbid"],
    &["notify", "alert", "notification"],
    &["leak", "leakage", "exposure", "disclosure"],
    // legal and contracts
    &["contract", "agreement"],
    &["nda", "nondisclosure", "confidentiality", "secrecy"],
    &["confidential", "proprietary", "sensitive", "classified", "hush"],
    &["clause", "provision", "stipulation"],
    &["lawyer", "attorney", "counsel", "solicitor"],
    &["sign", "signature", "countersign", "signatory", "signoff"],
    &["approve", "approval", "endorse", "ratify"],
    &["review", "assess", "evaluate", "examine", "inspect", "vet", "appraise"],
    &["escalate", "escalation", "elevate"],
    &["obligation", "duty", "commitment", "responsibility"],
    &["breach", "violation", "violate", "infringement", "infringe", "contravene"],
    &["litigation", "lawsuit", "court", "sue"],
    &["serious", "significant", "severe", "grave"],
    &["negotiate", "negotiation", "bargain", "counteroffer", "redline"],
    &["solicit", "solicitation", "poach", "recruit", "hire", "hiring"],
    &["employee", "staff", "personnel", "worker", "workforce", "headcount"],
    &["indemnify", "indemnity", "indemnification"],
    &["license", "licence", "licensing", "sublicense"],
    &["jurisdiction", "venue", "forum"],
    &["risk", "hazard", "danger", "exposure"],
    // money and business
    &["invoice", "bill", "billing"],
    &["payment", "pay", "remittance", "payout", "disbursement"],
    &["expense", "cost", "spend", "spending", "expenditure", "outlay"],
    &["revenue", "income", "sales", "earnings", "turnover"],
    &["forecast", "projection", "outlook"],
    &["variance", "discrepancy", "deviation", "mismatch", "inconsistency"],
    &["refund", "reimburse", "reimbursement", "repay", "repayment"],
    &["customer", "buyer", "purchaser", "shopper"],
    &["vendor", "supplier", "provider", "seller", "contractor"],
    &["purchase", "buy", "procure", "procurement"],
    &["price", "pricing", "fee", "tariff"],
    &["salary", "compensation", "wage", "payroll"],
    &["money", "cash", "funds", "capital"],
    &["tax", "vat", "levy"],
    &["ledger", "bookkeeping", "books"],
    &["goal", "objective", "aim", "okr"],
    &["decide", "decision", "choose", "determine"],
    &["meeting", "standup", "huddle"],
    &["angry", "upset", "frustrated", "annoyed", "irate", "unhappy"],
    &["apologize", "apology", "sorry"],
    &["report", "writeup", "memo", "briefing"],
    // work and coordination
    &["handoff", "handover"],
    &["ticket", "issue"],
    &["conflict", "dispute", "disagreement", "argue", "quarrel", "clash"],
    &["delegate", "delegation", "entrust", "outsource"],
    &["manager", "supervisor", "boss"],
    &["plan", "proposal", "blueprint", "roadmap"],
    &["strategy", "strategic", "vision"],
    &["weigh", "consider", "deliberate", "ponder"],
    &["stuck", "stalled", "hung", "hang", "freeze", "frozen", "unresponsive"],
    &["idle", "inactive", "dormant"],
    &["remember", "memorize", "remind"],
    &["note", "journal", "diary", "notebook"],
    &["tone", "voice", "style", "wording", "phrasing"],
    &["write", "compose", "draft"],
    &["comment", "remark", "feedback"],
    &["feedback", "critique", "opinion"],
    &["confirm", "confirmation", "acknowledge", "ack", "affirm"],
    &["subtask", "subissue", "subitem", "child"],
    &["orchestrate", "orchestration", "coordinate", "coordination", "coordinator"],
    &["procedure", "runbook", "playbook", "checklist"],
    &["improve", "improvement", "enhance", "optimize", "refine"],
    &["category", "categorize", "classify", "classification", "taxonomy", "bucket", "grade"],
    &["developer", "engineer", "programmer", "coder"],
    &["incorrect", "wrong", "erroneous", "mistaken", "misconfigured", "misconfiguration"],
    &["webhook", "callback", "hook"],
    &["deprecated", "obsolete", "outdated", "legacy", "superseded"],
    &["stale", "overdue", "aging", "lingering"],
    &["significant", "substantial", "sizable", "major"],
    &["adjust", "adjustment", "tweak", "tune"],
    &["share", "disclose", "reveal", "divulge"],
    &["advisor", "adviser", "consultant"],
    &["normal", "typical", "usual", "customary"],
    &["company", "organization", "organisation", "org", "firm", "enterprise", "business"],
    &["custom", "customized", "tailored", "bespoke"],
    &["title", "headline", "heading", "subject"],
    // money, continued
    &["subsidiary", "affiliate", "intercompany", "entity"],
    &["owe", "payable", "debt", "debtor"],
    &["unexplained", "unreconciled", "unresolved", "outstanding"],
    // doing a thing once however often it is asked
    &["idempotent", "idempotency", "dedupe", "deduplicate", "deduplication"],
];

/// [`GROUPS`] by Porter stem, group by group (words of more than one word left out):
/// written out so that no instance stems the table on its first recall (the component
/// starts a fresh instance per call). `stems_are_the_groups_stemmed` checks it.
const STEMS: &[&[&str]] = &[
    &["remov", "delet", "drop", "strip", "eras", "discard", "purg", "unset", "clear", "elimin", "wipe", "toss"],
    &["reset", "revert", "restor", "rollback", "undo"],
    &["overrid", "overwrit", "replac", "supersed"],
    &["exclud", "omit", "skip", "ignor", "filter"],
    &["disabl", "deactiv"],
    &["enabl", "activ"],
    &["miss", "absent", "nonexist", "unavail", "lack"],
    &["option", "nonrequir", "unrequir"],
    &["requir", "mandatori", "compulsori", "obligatori"],
    &["default", "fallback", "implicit", "baselin"],
    &["fail", "failur", "error", "fault", "crash", "broken", "bomb", "flunk"],
    &["down", "outag", "unavail", "unreach", "offlin"],
    &["retri", "reattempt", "backoff"],
    &["reconnect", "resum", "resumpt", "resum", "reestablish", "redeliv", "redeliveri", "replai"],
    &["disconnect", "drop", "interrupt", "sever"],
    &["timeout", "deadlin", "expiri", "expir"],
    &["invalid", "malform", "bad", "corrupt", "illeg", "junk"],
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
    &["schedul", "cron", "period", "interv", "recur", "timet", "hourli", "daili", "weekli"],
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
    &["merg", "combin", "join", "union", "concaten", "glue"],
    &["forward", "relai", "passthrough"],
    &["split", "chunk", "partit", "shard", "segment"],
    &["sort", "order", "rank"],
    &["pagin", "pagin", "page", "cursor", "offset"],
    &["compress", "gzip", "zip", "deflat"],
    &["encrypt", "cipher", "enciph", "scrambl"],
    &["sleep", "nap", "snooz"],
    &["destroi", "shred", "dispos"],
    &["dim", "fade", "faint"],
    &["verbos", "wordi", "rambl"],
    &["hash", "digest", "checksum", "fingerprint"],
    &["authent", "authent", "login", "signin", "credenti", "auth"],
    &["author", "author", "permiss", "grant", "consent", "scope"],
    &["secret", "password", "credenti", "token", "kei", "cred"],
    &["attack", "exploit", "threat", "malici", "adversari", "attack", "hacker", "crook"],
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
    &["metric", "measur", "statist", "stat", "gaug", "counter", "kpi"],
    &["alert", "notif", "alarm", "page", "warn"],
    &["monitor", "observ", "watch", "probe"],
    &["health", "live", "readi", "healthcheck", "aliv"],
    &["memori", "ram", "mem"],
    &["cpu", "processor", "core"],
    &["gpu", "acceler", "cuda"],
    &["disk", "volum", "storag", "drive"],
    &["request", "call", "invoc", "queri"],
    &["respons", "respond", "repli", "result", "answer"],
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
    &["tool", "function", "plugin", "extens", "addon"],
    &["prompt", "instruct", "templat"],
    &["app", "applic", "program"],
    &["product", "prod", "live"],
    &["develop", "dev", "local"],
    &["document", "doc", "doc", "spec", "specif", "manual"],
    &["fix", "repair", "remedi", "remedi", "remedi", "resolv", "resolut", "settl"],
    &["finish", "done", "final", "complet"],
    &["bug", "defect", "glitch", "flaw"],
    &["vulner", "vuln", "cve", "weak", "flaw"],
    &["flaki", "intermitt", "nondeterminist", "sporad", "unstabl"],
    &["slow", "sluggish", "laggi", "slow"],
    &["refactor", "restructur", "rewrit", "cleanup"],
    &["repo", "repositori", "codebas", "monorepo"],
    &["librari", "packag", "crate", "lib"],
    &["pr", "changeset", "changelist"],
    &["rule", "polici", "guidelin", "convent", "standard", "norm"],
    &["explain", "describ", "clarifi", "elabor"],
    &["ask", "inquir", "inquiri", "question"],
    &["help", "assist", "assist", "aid"],
    &["owner", "maintain", "steward"],
    &["import", "essenti", "crucial", "vital"],
    &["urgent", "critic", "sever", "emerg", "asap", "press"],
    &["prioriti", "sever", "urgenc", "import"],
    &["prohibit", "ban", "disallow", "forbid"],
    &["notifi", "alert", "notif"],
    &["leak", "leakag", "exposur", "disclosur"],
    &["contract", "agreement"],
    &["nda", "nondisclosur", "confidenti", "secreci"],
    &["confidenti", "proprietari", "sensit", "classifi", "hush"],
    &["claus", "provis", "stipul"],
    &["lawyer", "attornei", "counsel", "solicitor"],
    &["sign", "signatur", "countersign", "signatori", "signoff"],
    &["approv", "approv", "endors", "ratifi"],
    &["review", "assess", "evalu", "examin", "inspect", "vet", "apprais"],
    &["escal", "escal", "elev"],
    &["oblig", "duti", "commit", "respons"],
    &["breach", "violat", "violat", "infring", "infring", "contraven"],
    &["litig", "lawsuit", "court", "sue"],
    &["seriou", "signific", "sever", "grave"],
    &["negoti", "negoti", "bargain", "counteroff", "redlin"],
    &["solicit", "solicit", "poach", "recruit", "hire", "hire"],
    &["employe", "staff", "personnel", "worker", "workforc", "headcount"],
    &["indemnifi", "indemn", "indemnif"],
    &["licens", "licenc", "licens", "sublicens"],
    &["jurisdict", "venu", "forum"],
    &["risk", "hazard", "danger", "exposur"],
    &["invoic", "bill", "bill"],
    &["payment", "pai", "remitt", "payout", "disburs"],
    &["expens", "cost", "spend", "spend", "expenditur", "outlai"],
    &["revenu", "incom", "sale", "earn", "turnov"],
    &["forecast", "project", "outlook"],
    &["varianc", "discrep", "deviat", "mismatch", "inconsist"],
    &["refund", "reimburs", "reimburs", "repai", "repay"],
    &["custom", "buyer", "purchas", "shopper"],
    &["vendor", "supplier", "provid", "seller", "contractor"],
    &["purchas", "bui", "procur", "procur"],
    &["price", "price", "fee", "tariff"],
    &["salari", "compens", "wage", "payrol"],
    &["monei", "cash", "fund", "capit"],
    &["tax", "vat", "levi"],
    &["ledger", "bookkeep", "book"],
    &["goal", "object", "aim", "okr"],
    &["decid", "decis", "choos", "determin"],
    &["meet", "standup", "huddl"],
    &["angri", "upset", "frustrat", "annoi", "irat", "unhappi"],
    &["apolog", "apolog", "sorri"],
    &["report", "writeup", "memo", "brief"],
    &["handoff", "handov"],
    &["ticket", "issu"],
    &["conflict", "disput", "disagr", "argu", "quarrel", "clash"],
    &["deleg", "deleg", "entrust", "outsourc"],
    &["manag", "supervisor", "boss"],
    &["plan", "propos", "blueprint", "roadmap"],
    &["strategi", "strateg", "vision"],
    &["weigh", "consid", "deliber", "ponder"],
    &["stuck", "stall", "hung", "hang", "freez", "frozen", "unrespons"],
    &["idl", "inact", "dormant"],
    &["rememb", "memor", "remind"],
    &["note", "journal", "diari", "notebook"],
    &["tone", "voic", "style", "word", "phrase"],
    &["write", "compos", "draft"],
    &["comment", "remark", "feedback"],
    &["feedback", "critiqu", "opinion"],
    &["confirm", "confirm", "acknowledg", "ack", "affirm"],
    &["subtask", "subissu", "subitem", "child"],
    &["orchestr", "orchestr", "coordin", "coordin", "coordin"],
    &["procedur", "runbook", "playbook", "checklist"],
    &["improv", "improv", "enhanc", "optim", "refin"],
    &["categori", "categor", "classifi", "classif", "taxonomi", "bucket", "grade"],
    &["develop", "engin", "programm", "coder"],
    &["incorrect", "wrong", "erron", "mistaken", "misconfigur", "misconfigur"],
    &["webhook", "callback", "hook"],
    &["deprec", "obsolet", "outdat", "legaci", "supersed"],
    &["stale", "overdu", "ag", "linger"],
    &["signific", "substanti", "sizabl", "major"],
    &["adjust", "adjust", "tweak", "tune"],
    &["share", "disclos", "reveal", "divulg"],
    &["advisor", "advis", "consult"],
    &["normal", "typic", "usual", "customari"],
    &["compani", "organ", "organis", "org", "firm", "enterpris", "busi"],
    &["custom", "custom", "tailor", "bespok"],
    &["titl", "headlin", "head", "subject"],
    &["subsidiari", "affili", "intercompani", "entiti"],
    &["ow", "payabl", "debt", "debtor"],
    &["unexplain", "unreconcil", "unresolv", "outstand"],
    &["idempot", "idempot", "dedup", "dedupl", "dedupl"],
];

/// Every stem of [`STEMS`] with the groups it is in, sorted by stem: a query word's
/// synonyms are one binary search away. Written out (not built on first use, which a
/// fresh instance per call would pay every time); `stem_index_is_stems_inverted` checks it.
const STEM_INDEX: &[(&str, &[u16])] = &[
    ("abort", &[23]), ("absent", &[6]), ("acceler", &[110]), ("accept", &[51]), ("ack", &[211]),
    ("acknowledg", &[211]), ("activ", &[5]), ("addon", &[127]), ("address", &[100]),
    ("adjust", &[223]), ("administ", &[29]), ("advantag", &[20]), ("adversari", &[70]),
    ("advis", &[225]), ("advisor", &[225]), ("affili", &[230]), ("affirm", &[211]),
    ("ag", &[221]), ("agreement", &[154]), ("ai", &[126]), ("aid", &[146]), ("aim", &[189]),
    ("alarm", &[105]), ("alert", &[105, 152]), ("alia", &[89]), ("aliv", &[107]),
    ("allow", &[37]), ("allowlist", &[37]), ("alter", &[26]), ("angri", &[192]),
    ("annoi", &[192]), ("annot", &[88]), ("answer", &[113]), ("apolog", &[193]),
    ("app", &[129]), ("applic", &[129]), ("apprais", &[161]), ("approv", &[160]),
    ("arg", &[79]), ("argu", &[197]), ("argument", &[79]), ("asap", &[149]), ("ask", &[145]),
    ("assert", &[43]), ("assess", &[161]), ("assist", &[146]), ("attach", &[30]),
    ("attack", &[70]), ("attornei", &[158]), ("attribut", &[83]), ("audit", &[103]),
    ("auth", &[67]), ("authent", &[67]), ("author", &[68]), ("averag", &[120]), ("avg", &[120]),
    ("await", &[33]), ("backend", &[93]), ("backlog", &[102]), ("backoff", &[12]),
    ("bad", &[16]), ("ban", &[151]), ("bandwidth", &[118]), ("bargain", &[167]),
    ("baselin", &[9]), ("basic", &[86]), ("begin", &[21]), ("benefit", &[20]),
    ("bespok", &[228]), ("bill", &[174]), ("bind", &[30, 72]), ("blacklist", &[38]),
    ("block", &[33]), ("blocklist", &[38]), ("blueprint", &[200]), ("bomb", &[10]),
    ("book", &[188]), ("bookkeep", &[188]), ("boot", &[21]), ("bootstrap", &[28]),
    ("boss", &[199]), ("bound", &[17]), ("breach", &[164]), ("bridg", &[98]), ("brief", &[194]),
    ("broken", &[10]), ("bucket", &[216]), ("buffer", &[48, 102]), ("bug", &[135]),
    ("bui", &[183]), ("busi", &[227]), ("buyer", &[181]), ("cach", &[48]), ("call", &[112]),
    ("callback", &[219]), ("caller", &[95]), ("cancel", &[23]), ("cap", &[17]),
    ("capac", &[45]), ("capit", &[186]), ("cash", &[186]), ("catalog", &[52]),
    ("categor", &[216]), ("categori", &[216]), ("caveat", &[19]), ("ceil", &[17]),
    ("chang", &[26]), ("changelist", &[142]), ("changeset", &[142]), ("check", &[43, 74]),
    ("checklist", &[214]), ("checksum", &[66]), ("child", &[212]), ("choos", &[190]),
    ("chunk", &[57, 115]), ("cipher", &[61]), ("clarifi", &[144]), ("clash", &[197]),
    ("classif", &[216]), ("classifi", &[156, 216]), ("claus", &[157]), ("cleanup", &[139]),
    ("clear", &[0]), ("client", &[95]), ("clone", &[54]), ("cluster", &[92]),
    ("codebas", &[140]), ("coder", &[217]), ("coerc", &[41]), ("collect", &[92]),
    ("combin", &[55]), ("comment", &[209]), ("commit", &[163]), ("compani", &[227]),
    ("compar", &[122]), ("comparison", &[122]), ("compens", &[185]), ("complet", &[116, 134]),
    ("compos", &[208]), ("compress", &[60]), ("compulsori", &[8]), ("comput", &[94]),
    ("concaten", &[55]), ("confidenti", &[155, 156]), ("config", &[78]),
    ("configur", &[36, 78]), ("confin", &[18]), ("confirm", &[211]), ("conflict", &[197]),
    ("connect", &[30]), ("consent", &[68]), ("consid", &[202]), ("constrain", &[18]),
    ("consult", &[225]), ("consum", &[51, 95]), ("contain", &[96]), ("contract", &[154]),
    ("contractor", &[182]), ("contraven", &[164]), ("control", &[29]), ("convent", &[143]),
    ("convert", &[41]), ("coordin", &[213]), ("copi", &[54]), ("core", &[109]),
    ("corrupt", &[16]), ("cost", &[176]), ("counsel", &[158]), ("count", &[121]),
    ("counter", &[104]), ("countermeasur", &[71]), ("counteroff", &[167]),
    ("countersign", &[159]), ("court", &[165]), ("cpu", &[109]), ("crash", &[10]),
    ("crate", &[141]), ("creat", &[25]), ("cred", &[69]), ("credenti", &[67, 69]),
    ("critic", &[149]), ("critiqu", &[210]), ("cron", &[34]), ("crook", &[70]),
    ("crucial", &[148]), ("cuda", &[110]), ("current", &[124]), ("cursor", &[59]),
    ("custom", &[181, 228]), ("customari", &[226]), ("cve", &[136]), ("daili", &[34]),
    ("danger", &[173]), ("databas", &[101]), ("datastor", &[101]), ("db", &[101]),
    ("deactiv", &[4]), ("deadlin", &[15]), ("debt", &[231]), ("debtor", &[231]),
    ("decid", &[190]), ("decis", &[190]), ("declar", &[36]), ("decreas", &[40]),
    ("dedup", &[233]), ("dedupl", &[233]), ("default", &[9]), ("defect", &[135]),
    ("defens", &[71]), ("defin", &[36]), ("deflat", &[60]), ("delai", &[117]),
    ("deleg", &[198]), ("delet", &[0]), ("deliber", &[202]), ("demo", &[85]), ("deni", &[38]),
    ("depend", &[91]), ("deploi", &[27]), ("deprec", &[220]), ("describ", &[144]),
    ("destroi", &[63]), ("detach", &[31]), ("determin", &[190]), ("dev", &[131]),
    ("develop", &[131, 217]), ("deviat", &[179]), ("diari", &[206]), ("differ", &[122]),
    ("digest", &[66]), ("dim", &[64]), ("dir", &[81]), ("directori", &[81]), ("disabl", &[4]),
    ("disadvantag", &[19]), ("disagr", &[197]), ("disallow", &[151]), ("disburs", &[175]),
    ("discard", &[0]), ("disclos", &[224]), ("disclosur", &[153]), ("disconnect", &[14, 31]),
    ("discov", &[53]), ("discrep", &[179]), ("disk", &[111]), ("dispatch", &[50]),
    ("displai", &[42]), ("dispos", &[63]), ("disput", &[197]), ("divulg", &[224]),
    ("doc", &[132]), ("document", &[82, 132]), ("done", &[134]), ("dormant", &[204]),
    ("down", &[11]), ("downsid", &[19]), ("draft", &[208]), ("drawback", &[19]),
    ("drive", &[111]), ("drop", &[0, 14]), ("duplic", &[54]), ("durat", &[117]),
    ("duti", &[163]), ("earlier", &[123]), ("earn", &[177]), ("edit", &[26]),
    ("elabor", &[144]), ("element", &[83]), ("elev", &[162]), ("elimin", &[0]),
    ("emerg", &[149]), ("emit", &[50]), ("employe", &[169]), ("enabl", &[5]), ("enciph", &[61]),
    ("encrypt", &[61]), ("end", &[22]), ("endors", &[160]), ("endpoint", &[99]),
    ("engin", &[217]), ("enhanc", &[215]), ("enterpris", &[227]), ("entiti", &[230]),
    ("entrust", &[198]), ("enumer", &[52]), ("env", &[80]), ("environ", &[80]), ("eras", &[0]),
    ("erron", &[218]), ("error", &[10]), ("escal", &[162]), ("essenti", &[148]),
    ("establish", &[25]), ("evalu", &[161]), ("event", &[114]), ("examin", &[161]),
    ("exampl", &[85]), ("exclud", &[3]), ("exec", &[35]), ("execut", &[35]), ("exist", &[77]),
    ("expand", &[39]), ("expenditur", &[176]), ("expens", &[176]), ("expir", &[15, 47]),
    ("expiri", &[15]), ("explain", &[144]), ("exploit", &[70]), ("expos", &[72]),
    ("exposur", &[153, 173]), ("extend", &[39]), ("extens", &[127]), ("extern", &[76, 77]),
    ("fade", &[64]), ("fail", &[10]), ("failur", &[10]), ("faint", &[64]), ("fallback", &[9]),
    ("fault", &[10]), ("fee", &[184]), ("feedback", &[209, 210]), ("fetch", &[49]),
    ("field", &[83]), ("file", &[82]), ("filter", &[3]), ("final", &[134]), ("find", &[53]),
    ("fingerprint", &[66]), ("finish", &[134]), ("firm", &[227]), ("fix", &[133]),
    ("flag", &[79]), ("flaki", &[137]), ("flaw", &[135, 136]), ("flunk", &[10]),
    ("folder", &[81]), ("follow", &[44]), ("forbid", &[38, 151]), ("forecast", &[178]),
    ("format", &[84]), ("former", &[123]), ("forum", &[172]), ("forward", &[56]),
    ("freez", &[203]), ("frontend", &[95]), ("frozen", &[203]), ("frustrat", &[192]),
    ("function", &[127]), ("fund", &[186]), ("gaug", &[104]), ("gener", &[25]), ("get", &[49]),
    ("glitch", &[135]), ("glue", &[55]), ("goal", &[189]), ("govern", &[29]), ("gpu", &[110]),
    ("grade", &[216]), ("grant", &[68]), ("grave", &[166]), ("group", &[92]), ("grow", &[39]),
    ("guidelin", &[143]), ("gzip", &[60]), ("hacker", &[70]), ("halt", &[22]), ("handl", &[29]),
    ("handoff", &[195]), ("handov", &[195]), ("hang", &[203]), ("hash", &[66]),
    ("hazard", &[173]), ("head", &[229]), ("headcount", &[169]), ("headlin", &[229]),
    ("health", &[107]), ("healthcheck", &[107]), ("help", &[146]), ("hire", &[168]),
    ("hook", &[219]), ("host", &[93, 94]), ("hostnam", &[100]), ("hourli", &[34]),
    ("huddl", &[191]), ("human", &[125]), ("hung", &[203]), ("hush", &[156]), ("id", &[89]),
    ("idempot", &[233]), ("identifi", &[89]), ("idl", &[204]), ("ignor", &[3]),
    ("illeg", &[16]), ("illustr", &[85]), ("imag", &[97]), ("implicit", &[9]),
    ("import", &[148, 150]), ("improv", &[215]), ("inact", &[204]), ("incom", &[177]),
    ("inconsist", &[179]), ("incorrect", &[218]), ("increas", &[39]), ("indemn", &[170]),
    ("indemnif", &[170]), ("indemnifi", &[170]), ("index", &[52]), ("infring", &[164]),
    ("ingest", &[51]), ("inquir", &[145]), ("inquiri", &[145]), ("inspect", &[161]),
    ("instal", &[28]), ("instanc", &[96]), ("instruct", &[128]), ("intercompani", &[230]),
    ("intermitt", &[137]), ("intern", &[75]), ("interrupt", &[14]), ("interv", &[34]),
    ("introduct", &[86]), ("invalid", &[16]), ("invoc", &[112]), ("invoic", &[174]),
    ("invok", &[35]), ("ip", &[100]), ("irat", &[192]), ("isol", &[73]), ("issu", &[196]),
    ("join", &[30, 55]), ("journal", &[206]), ("junk", &[16]), ("jurisdict", &[172]),
    ("keep", &[46]), ("kei", &[69, 83]), ("kill", &[22]), ("kpi", &[104]), ("label", &[88]),
    ("lack", &[6]), ("lag", &[117]), ("laggi", &[138]), ("laptop", &[94]), ("last", &[123]),
    ("latenc", &[117]), ("launch", &[21]), ("lawsuit", &[165]), ("lawyer", &[158]),
    ("layout", &[84]), ("leak", &[153]), ("leakag", &[153]), ("ledger", &[188]),
    ("legaci", &[220]), ("length", &[45]), ("levi", &[187]), ("lib", &[141]),
    ("librari", &[141]), ("licenc", &[171]), ("licens", &[171]), ("lifetim", &[47]),
    ("limit", &[17, 19]), ("linger", &[221]), ("link", &[30]), ("list", &[52]),
    ("listen", &[44, 72]), ("litig", &[165]), ("live", &[107, 130]), ("llm", &[126]),
    ("load", &[49]), ("local", &[75, 131]), ("localhost", &[75]), ("log", &[103]),
    ("login", &[67]), ("lookup", &[53]), ("loopback", &[75]), ("lower", &[40]),
    ("machin", &[94]), ("maintain", &[29, 147]), ("major", &[222]), ("make", &[25]),
    ("malform", &[16]), ("malici", &[70]), ("manag", &[29, 199]), ("mandatori", &[8]),
    ("manual", &[132]), ("map", &[41]), ("maximum", &[17]), ("mean", &[120]),
    ("measur", &[104]), ("meet", &[191]), ("mem", &[108]), ("memo", &[194]), ("memoiz", &[48]),
    ("memor", &[205]), ("memori", &[108]), ("merg", &[55]), ("messag", &[114]),
    ("metadata", &[88]), ("metric", &[104]), ("migrat", &[32]), ("mirror", &[54]),
    ("misconfigur", &[218]), ("mismatch", &[179]), ("miss", &[6]), ("mistaken", &[218]),
    ("mitig", &[71]), ("model", &[126]), ("modifi", &[26]), ("monei", &[186]),
    ("monitor", &[106]), ("monorepo", &[140]), ("mount", &[30]), ("name", &[89]),
    ("nap", &[62]), ("nda", &[155]), ("negoti", &[167]), ("network", &[98]), ("node", &[94]),
    ("nondeterminist", &[137]), ("nondisclosur", &[155]), ("nonexist", &[6]),
    ("nonrequir", &[7]), ("norm", &[143]), ("normal", &[226]), ("note", &[206]),
    ("notebook", &[206]), ("notif", &[105, 114, 152]), ("notifi", &[152]), ("now", &[124]),
    ("number", &[121]), ("object", &[189]), ("oblig", &[163]), ("obligatori", &[8]),
    ("observ", &[106]), ("obsolet", &[220]), ("offlin", &[11]), ("offset", &[59]),
    ("okr", &[189]), ("omit", &[3]), ("open", &[72]), ("oper", &[29, 125]), ("opinion", &[210]),
    ("optim", &[215]), ("option", &[7, 78, 79]), ("orchestr", &[213]), ("order", &[58]),
    ("org", &[227]), ("organ", &[227]), ("organis", &[227]), ("outag", &[11]),
    ("outdat", &[220]), ("outlai", &[176]), ("outlook", &[178]), ("output", &[42]),
    ("outsourc", &[198]), ("outstand", &[232]), ("overdu", &[221]), ("overrid", &[2]),
    ("overview", &[86]), ("overwrit", &[2]), ("ow", &[231]), ("owner", &[147]),
    ("packag", &[141]), ("page", &[59, 105]), ("pagin", &[59]), ("pai", &[175]),
    ("param", &[79]), ("paramet", &[79]), ("partit", &[57]), ("passthrough", &[56]),
    ("password", &[69]), ("patch", &[26]), ("path", &[81]), ("pattern", &[87]), ("paus", &[33]),
    ("payabl", &[231]), ("payment", &[175]), ("payout", &[175]), ("payrol", &[185]),
    ("percent", &[116]), ("percentil", &[119]), ("period", &[34]), ("permiss", &[68]),
    ("permit", &[37]), ("persist", &[46]), ("person", &[125]), ("personnel", &[169]),
    ("phrase", &[207]), ("placehold", &[87]), ("plan", &[200]), ("playbook", &[214]),
    ("plug", &[30]), ("plugin", &[127]), ("poach", &[168]), ("pod", &[96]), ("polici", &[143]),
    ("ponder", &[202]), ("pool", &[92]), ("port", &[99]), ("post", &[50]), ("pr", &[142]),
    ("preexist", &[77]), ("prefer", &[78]), ("prerequisit", &[91]), ("present", &[124]),
    ("press", &[149]), ("previou", &[123]), ("price", &[184]), ("print", &[42]),
    ("prior", &[123]), ("prioriti", &[150]), ("privat", &[75]), ("pro", &[20]),
    ("probe", &[106]), ("procedur", &[214]), ("processor", &[109]), ("procur", &[183]),
    ("prod", &[130]), ("product", &[130]), ("program", &[129]), ("programm", &[217]),
    ("progress", &[116]), ("prohibit", &[151]), ("project", &[178]), ("prompt", &[128]),
    ("properti", &[83]), ("propos", &[200]), ("proprietari", &[156]), ("protect", &[71]),
    ("provid", &[182]), ("provis", &[25, 157]), ("public", &[76]), ("publish", &[27, 72]),
    ("pull", &[49]), ("purchas", &[181, 183]), ("purg", &[0]), ("push", &[50]),
    ("quantil", &[119]), ("quarrel", &[197]), ("queri", &[53, 112]), ("question", &[145]),
    ("queue", &[102]), ("quota", &[17]), ("rais", &[39]), ("ram", &[108]), ("rambl", &[65]),
    ("rank", &[58]), ("rate", &[118]), ("ratifi", &[160]), ("read", &[49]), ("readi", &[107]),
    ("reattempt", &[12]), ("reboot", &[24]), ("receiv", &[51]), ("reconnect", &[13]),
    ("record", &[103]), ("recruit", &[168]), ("recur", &[34]), ("redeliv", &[13]),
    ("redeliveri", &[13]), ("redlin", &[167]), ("reduc", &[40]), ("reestablish", &[13]),
    ("refactor", &[139]), ("refin", &[215]), ("refund", &[180]), ("refus", &[38]),
    ("reimburs", &[180]), ("reject", &[38]), ("relai", &[56]), ("relaunch", &[24]),
    ("releas", &[27, 90]), ("reload", &[24]), ("remark", &[209]), ("remedi", &[133]),
    ("rememb", &[205]), ("remind", &[205]), ("remitt", &[175]), ("remot", &[76]),
    ("remov", &[0]), ("render", &[42]), ("repai", &[180]), ("repair", &[133]),
    ("repay", &[180]), ("replac", &[2]), ("replai", &[13]), ("repli", &[113]),
    ("replic", &[54]), ("repo", &[140]), ("report", &[194]), ("repositori", &[140]),
    ("request", &[112]), ("requir", &[8, 91]), ("reset", &[1]), ("resolut", &[133]),
    ("resolv", &[133]), ("respond", &[113]), ("respons", &[113, 163]), ("restart", &[24]),
    ("restor", &[1]), ("restrict", &[18, 19]), ("restructur", &[139]), ("result", &[113]),
    ("resum", &[13]), ("resumpt", &[13]), ("retain", &[46]), ("retent", &[47]),
    ("retri", &[12]), ("retriev", &[49]), ("reveal", &[224]), ("revenu", &[177]),
    ("revert", &[1]), ("review", &[161]), ("revis", &[90]), ("revok", &[23]),
    ("rewrit", &[139]), ("risk", &[173]), ("roadmap", &[200]), ("rollback", &[1]),
    ("rollout", &[27]), ("rule", &[143]), ("run", &[35]), ("runbook", &[214]),
    ("safeguard", &[71]), ("salari", &[185]), ("sale", &[177]), ("sampl", &[85]),
    ("sandbox", &[73]), ("save", &[46]), ("schedul", &[34]), ("schema", &[84]),
    ("scope", &[68]), ("scrambl", &[61]), ("search", &[53]), ("secreci", &[155]),
    ("secret", &[69]), ("segment", &[57]), ("segreg", &[73]), ("seller", &[182]),
    ("send", &[50]), ("sensit", &[156]), ("separ", &[73]), ("seriou", &[166]),
    ("server", &[93]), ("servic", &[93]), ("set", &[36, 78, 92]), ("settl", &[133]),
    ("setup", &[28]), ("sever", &[14, 149, 150, 166]), ("shape", &[84]), ("shard", &[57]),
    ("share", &[224]), ("ship", &[27]), ("shopper", &[181]), ("shortcom", &[19]),
    ("show", &[42]), ("shred", &[63]), ("shrink", &[40]), ("shutdown", &[22]), ("sign", &[159]),
    ("signatori", &[159]), ("signatur", &[159]), ("signific", &[166, 222]), ("signin", &[67]),
    ("signoff", &[159]), ("sizabl", &[222]), ("size", &[45]), ("skip", &[3]), ("sleep", &[62]),
    ("slow", &[138]), ("sluggish", &[138]), ("snapshot", &[97]), ("snooz", &[62]),
    ("socket", &[99]), ("solicit", &[168]), ("solicitor", &[158]), ("sorri", &[193]),
    ("sort", &[58]), ("spawn", &[21]), ("spec", &[132]), ("specif", &[132]), ("specifi", &[36]),
    ("spend", &[176]), ("split", &[57]), ("sporad", &[137]), ("sse", &[115]), ("staff", &[169]),
    ("stale", &[221]), ("stall", &[203]), ("standard", &[143]), ("standup", &[191]),
    ("start", &[21]), ("startup", &[21]), ("stat", &[104]), ("statist", &[104]),
    ("statu", &[116]), ("steward", &[147]), ("stipul", &[157]), ("stop", &[22]),
    ("storag", &[111]), ("store", &[46, 101]), ("strateg", &[201]), ("strategi", &[201]),
    ("stream", &[115]), ("strip", &[0]), ("structur", &[84]), ("stuck", &[203]),
    ("style", &[207]), ("subissu", &[212]), ("subitem", &[212]), ("subject", &[229]),
    ("sublicens", &[171]), ("subnet", &[98]), ("subscrib", &[44]), ("subsidiari", &[230]),
    ("substanti", &[222]), ("subtask", &[212]), ("sue", &[165]), ("summari", &[86]),
    ("supersed", &[2, 220]), ("supervisor", &[199]), ("supplier", &[182]), ("syntax", &[84]),
    ("tag", &[88]), ("tailor", &[228]), ("talli", &[121]), ("tariff", &[184]), ("tax", &[187]),
    ("taxonomi", &[216]), ("templat", &[87, 128]), ("termin", &[22]), ("test", &[43]),
    ("threat", &[70]), ("threshold", &[17]), ("throttl", &[18]), ("throughput", &[118]),
    ("ticket", &[196]), ("timeout", &[15]), ("timet", &[34]), ("titl", &[229]),
    ("todai", &[124]), ("token", &[69]), ("tone", &[207]), ("tool", &[127]), ("toss", &[0]),
    ("total", &[121]), ("trace", &[103]), ("transform", &[41]), ("translat", &[41]),
    ("transmit", &[50]), ("trim", &[40]), ("trust", &[74]), ("ttl", &[47]), ("tune", &[223]),
    ("turnov", &[177]), ("tweak", &[223]), ("typic", &[226]), ("unavail", &[6, 11]),
    ("undo", &[1]), ("unexplain", &[232]), ("unhappi", &[192]), ("union", &[55]),
    ("unlink", &[31]), ("unmanag", &[77]), ("unmount", &[31]), ("unplug", &[31]),
    ("unreach", &[11]), ("unreconcil", &[232]), ("unrequir", &[7]), ("unresolv", &[232]),
    ("unrespons", &[203]), ("unset", &[0]), ("unstabl", &[137]), ("unsupport", &[19]),
    ("updat", &[26, 32]), ("upgrad", &[32]), ("upset", &[192]), ("upsid", &[20]),
    ("urgenc", &[150]), ("urgent", &[149]), ("user", &[125]), ("usual", &[226]),
    ("valid", &[74]), ("var", &[80]), ("variabl", &[80]), ("varianc", &[179]), ("vat", &[187]),
    ("vendor", &[182]), ("venu", &[172]), ("verbos", &[65]), ("verifi", &[43, 74]),
    ("version", &[90]), ("versu", &[122]), ("vet", &[161]), ("view", &[42]), ("violat", &[164]),
    ("vision", &[201]), ("vital", &[148]), ("vlan", &[98]), ("voic", &[207]),
    ("volum", &[45, 111]), ("vs", &[122]), ("vuln", &[136]), ("vulner", &[136]),
    ("wage", &[185]), ("wait", &[33]), ("warn", &[105]), ("watch", &[44, 106]),
    ("weak", &[136]), ("webhook", &[219]), ("weekli", &[34]), ("weigh", &[202]),
    ("whitelist", &[37]), ("wipe", &[0]), ("withdraw", &[23]), ("word", &[207]),
    ("wordi", &[65]), ("worker", &[169]), ("workforc", &[169]), ("workstat", &[94]),
    ("write", &[208]), ("writeup", &[194]), ("wrong", &[218]), ("zip", &[60]),
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
    fn everyday_words_reach_the_words_documents_use() {
        // glue strings together, grade a contract, how serious an issue is, leaked creds,
        // going to court, a proxy that forwards a token (passes it through)
        for (said, written) in [("glue", "concatenate"), ("grade", "classify"), ("serious", "significant"), ("creds", "password"), ("court", "litigation"), ("forward", "passthrough")] {
            assert!(synonyms(&stem(said)).contains(&stem(written).as_str()), "{said} -> {written}");
        }
    }

    #[test]
    fn slang_and_plain_words_reach_the_words_documents_use() {
        // a save that bombed, crooks on the site, an add-on, a timetable, junk input,
        // tossing old data, a scrambling routine, a test that naps, faded text, a wordy
        // message, shredded copies, a hush-hush clause
        for (said, written) in [("bombed", "fail"), ("crooks", "attacker"), ("addon", "plugin"), ("timetable", "schedule"), ("junk", "invalid"), ("tossing", "delete"), ("scrambling", "encrypt"), ("nap", "sleep"), ("faded", "dim"), ("wordy", "verbose"), ("shredded", "destroy"), ("hush", "confidential")] {
            assert!(synonyms(&stem(said)).contains(&stem(written).as_str()), "{said} -> {written}");
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

    /// Rewrites [`STEMS`] and [`STEM_INDEX`] in this file from [`GROUPS`] after the groups
    /// are edited: `cargo test -p lid-core --lib regenerate_stem_tables -- --ignored`.
    #[test]
    #[ignore]
    fn regenerate_stem_tables() {
        let mut stems_rs = String::from("const STEMS: &[&[&str]] = &[\n");
        let mut index: std::collections::BTreeMap<String, Vec<u16>> = Default::default();
        for (g, words) in GROUPS.iter().enumerate() {
            let stems: Vec<String> = words.iter().filter(|w| !w.contains(' ')).map(|w| stem(w)).collect();
            let quoted: Vec<String> = stems.iter().map(|s| format!("{s:?}")).collect();
            stems_rs += &format!("    &[{}],\n", quoted.join(", "));
            for s in stems {
                let groups = index.entry(s).or_default();
                if !groups.contains(&(g as u16)) {
                    groups.push(g as u16);
                }
            }
        }
        stems_rs += "];\n";
        let mut index_rs = String::from("const STEM_INDEX: &[(&str, &[u16])] = &[\n");
        let mut line = String::from("   ");
        for (s, groups) in &index {
            let ids: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
            let item = format!(" ({s:?}, &[{}]),", ids.join(", "));
            if line.len() + item.len() > 96 {
                index_rs += &line;
                index_rs += "\n";
                line = String::from("   ");
            }
            line += &item;
        }
        index_rs += &line;
        index_rs += "\n];\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/rank/thesaurus.rs");
        let mut src = std::fs::read_to_string(path).expect("read thesaurus.rs");
        for (start, table) in [("const STEMS: &[&[&str]] = &[\n", stems_rs), ("const STEM_INDEX: &[(&str, &[u16])] = &[\n", index_rs)] {
            let from = src.find(start).expect("table start");
            let to = from + src[from..].find("];\n").expect("table end") + 3;
            src.replace_range(from..to, &table);
        }
        std::fs::write(path, src).expect("write thesaurus.rs");
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
