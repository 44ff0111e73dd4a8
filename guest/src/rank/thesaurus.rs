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

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::stem::stem;

/// Match strength of a thesaurus synonym relative to the word itself.
pub const SYNONYM: f32 = 0.7;

/// Interchangeable words, one idea per group.
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

/// Stem -> the stems of its synonyms (sorted, deduplicated, itself excluded).
fn table() -> &'static BTreeMap<String, Vec<String>> {
    static TABLE: OnceLock<BTreeMap<String, Vec<String>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for g in GROUPS {
            let stems: Vec<String> = g.iter().filter(|w| !w.contains(' ')).map(|w| stem(w)).collect();
            for s in &stems {
                let e = t.entry(s.clone()).or_default();
                e.extend(stems.iter().filter(|o| *o != s).cloned());
            }
        }
        for v in t.values_mut() {
            v.sort();
            v.dedup();
        }
        t
    })
}

/// The stems a word's stem stands in for in technical English (empty if none).
pub fn synonyms(word_stem: &str) -> &'static [String] {
    table().get(word_stem).map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_symmetric_and_exclude_the_word() {
        let s = synonyms(&stem("absent"));
        assert!(s.contains(&stem("missing")), "{s:?}");
        assert!(synonyms(&stem("missing")).contains(&stem("absent")));
        assert!(!s.contains(&stem("absent")));
        assert!(synonyms("zzzz").is_empty());
        for g in GROUPS {
            assert!(g.len() >= 2, "{g:?}");
            assert!(g.iter().all(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == ' ')), "{g:?}");
        }
    }
}
