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

/// The stems a word's stem stands in for in technical English (empty if none): the other
/// members of every group it is in, sorted, deduplicated, itself excluded.
pub fn synonyms(word_stem: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let Some(&first) = word_stem.as_bytes().first() else { return out };
    for g in STEMS {
        // (the first byte rules out nearly every member before a comparison)
        if g.iter().any(|s| s.as_bytes().first() == Some(&first) && *s == word_stem) {
            out.extend(g.iter().copied().filter(|o| *o != word_stem));
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
