//! Retrieval evaluation metrics for `recall_instruction` ranking (§21.3.3).
//!
//! Owns the probe format of the evaluation sets (`probes-dev.jsonl`) and the
//! metrics the `lid eval` CLI reports, overall and per agent:
//! hit@1 (top unit is required), hit@3 / hit@10 (all required units within the
//! top k), MRR (reciprocal rank of the first required unit) over positive probes,
//! and none-AUC: the probability that a positive probe's top score beats an
//! `expect_none` probe's top score (ties count one half). Beside them, §21.5.4's
//! probe-set metrics, each probe at its own `k` (default 3): probe-coverage@k (the share
//! of a probe's required units in its top k) and probe-hit@k (at least one of them
//! there), computed by [`crate::audit::probe_metrics`]. Plain functions; the ranking
//! itself happens elsewhere.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One line of a probe file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub id: String,
    /// Scope of retrieval: the agent (eval) or knowledge pack (`pack_id`, eval-large).
    #[serde(alias = "pack_id")]
    pub agent_id: String,
    pub intent: String,
    #[serde(default)]
    pub required_units: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_reason: Option<String>,
    #[serde(default)]
    pub expect_none: bool,
    /// §21.5.4's `k`: the top k its probe-set metrics count (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
}

/// Parse a JSON-lines probe file; blank lines are skipped. Errors name the line.
pub fn parse_probes(jsonl: &str) -> Result<Vec<Probe>, String> {
    let mut out = Vec::new();
    for (i, line) in jsonl.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let p: Probe = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        out.push(p);
    }
    Ok(out)
}

/// A probe with the engine's ranking for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub id: String,
    pub agent_id: String,
    /// The probe's intent (shown with its misses).
    #[serde(default)]
    pub intent: String,
    #[serde(default)]
    pub required_units: Vec<String>,
    #[serde(default)]
    pub expect_none: bool,
    /// Unit names with scores, best first.
    #[serde(default)]
    pub ranked: Vec<(String, f64)>,
    /// §21.5.4's `k` for this probe.
    #[serde(default = "default_k")]
    pub k: usize,
}

fn default_k() -> usize {
    3
}

impl ProbeResult {
    pub fn new(probe: &Probe, ranked: Vec<(String, f64)>) -> ProbeResult {
        ProbeResult {
            id: probe.id.clone(),
            agent_id: probe.agent_id.clone(),
            intent: probe.intent.clone(),
            required_units: probe.required_units.clone(),
            expect_none: probe.expect_none,
            ranked,
            k: probe.k.unwrap_or_else(default_k),
        }
    }

    fn is_positive(&self) -> bool {
        !self.expect_none && !self.required_units.is_empty()
    }

    fn top_score(&self) -> f64 {
        self.ranked.first().map(|r| r.1).filter(|s| s.is_finite()).unwrap_or(0.0)
    }

    /// The units the intent retrieved, best first: those with a score above 0. A unit that
    /// shares nothing with the intent scores 0 and is not retrieved, wherever the tie-break
    /// by name puts it (so a probe whose intent matches nothing is a miss, never a hit).
    fn retrieved(&self) -> impl Iterator<Item = &(String, f64)> {
        self.ranked.iter().take_while(|r| r.1 > 0.0)
    }

    /// 1-based rank of a unit, if retrieved.
    fn rank_of(&self, name: &str) -> Option<usize> {
        self.retrieved().position(|r| r.0 == name).map(|i| i + 1)
    }

    fn all_within(&self, k: usize) -> bool {
        self.required_units.iter().all(|u| self.rank_of(u).map(|r| r <= k).unwrap_or(false))
    }

    fn hit_at_1(&self) -> bool {
        self.retrieved().next().is_some_and(|t| self.required_units.contains(&t.0))
    }

    /// The probe as a [`Miss`], when it is one.
    fn miss(&self) -> Option<Miss> {
        let (h1, h3) = (self.hit_at_1(), self.all_within(3));
        if !self.is_positive() || (h1 && h3) {
            return None;
        }
        let (top, top_score) = self.ranked.first().cloned().unwrap_or_default();
        Some(Miss {
            id: self.id.clone(),
            agent_id: self.agent_id.clone(),
            intent: self.intent.clone(),
            top,
            top_score,
            required: self.required_units.iter().map(|u| (u.clone(), self.rank_of(u))).collect(),
            hit_at_1: h1,
            hit_at_3: h3,
        })
    }

    fn first_rank(&self) -> Option<usize> {
        self.required_units.iter().filter_map(|u| self.rank_of(u)).min()
    }
}

/// Metrics over a group of probes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// All probes in the group (positive and nothing-relevant).
    pub probes: usize,
    pub positives: usize,
    pub none_probes: usize,
    pub hit_at_1: f64,
    pub hit_at_3: f64,
    pub hit_at_10: f64,
    pub mrr: f64,
    /// §21.5.4 probe-coverage@k over the positive probes (each at its own `k`).
    pub probe_coverage_at_k: f64,
    /// §21.5.4 probe-hit@k: the share of positive probes with a required unit in their top k.
    pub probe_hit_at_k: f64,
    /// `None` when the group lacks positive or nothing-relevant probes.
    pub none_auc: Option<f64>,
    pub mean_top_positive: Option<f64>,
    pub mean_top_none: Option<f64>,
}

/// The evaluation report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub overall: Metrics,
    pub per_agent: BTreeMap<String, Metrics>,
    /// Ids of positive probes whose required units were not all in the top 3.
    pub misses_at_3: Vec<String>,
    /// Every positive probe missed at 1 or at 3, in probe order: what to look at when
    /// tuning a manifest's descriptions, trigger intents and keywords.
    #[serde(default)]
    pub misses: Vec<Miss>,
}

/// A positive probe whose top unit is not a required one, or whose required units are
/// not all in the top 3.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Miss {
    pub id: String,
    pub agent_id: String,
    pub intent: String,
    /// The unit ranked first, and its score (empty and 0 when nothing was ranked).
    pub top: String,
    pub top_score: f64,
    /// Each required unit with its 1-based rank (`None`: not ranked at all).
    pub required: Vec<(String, Option<usize>)>,
    pub hit_at_1: bool,
    pub hit_at_3: bool,
}


fn mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        None
    } else {
        // rounded as the scores are (6 decimals), so the last bits of a sum's order never show
        Some(((v.iter().sum::<f64>() / v.len() as f64) * 1e6).round() / 1e6)
    }
}

/// AUC of positive vs negative scores; ties count one half.
pub fn auc(pos: &[f64], neg: &[f64]) -> Option<f64> {
    if pos.is_empty() || neg.is_empty() {
        return None;
    }
    let mut wins = 0.0;
    for p in pos {
        for q in neg {
            if p > q {
                wins += 1.0;
            } else if p == q {
                wins += 0.5;
            }
        }
    }
    Some(wins / (pos.len() * neg.len()) as f64)
}

/// Metrics of one group of results.
pub fn metrics(results: &[&ProbeResult]) -> Metrics {
    let mut m = Metrics { probes: results.len(), ..Metrics::default() };
    let (mut h1, mut h3, mut h10) = (0.0, 0.0, 0.0);
    let mut first_ranks: std::collections::BTreeMap<usize, u64> = std::collections::BTreeMap::new();
    let mut pos_top = Vec::new();
    let mut none_top = Vec::new();
    for r in results {
        if r.expect_none {
            m.none_probes += 1;
            none_top.push(r.top_score());
            continue;
        }
        if !r.is_positive() {
            continue;
        }
        m.positives += 1;
        pos_top.push(r.top_score());
        if r.hit_at_1() {
            h1 += 1.0;
        }
        if r.all_within(3) {
            h3 += 1.0;
        }
        if r.all_within(10) {
            h10 += 1.0;
        }
        if let Some(k) = r.first_rank() {
            *first_ranks.entry(k).or_insert(0u64) += 1;
        }
    }
    // summed rank by rank, so that the probes' order never reaches the last digits
    let rr: f64 = first_ranks.iter().map(|(k, n)| *n as f64 / *k as f64).sum();
    if m.positives > 0 {
        let n = m.positives as f64;
        m.hit_at_1 = h1 / n;
        m.hit_at_3 = h3 / n;
        m.hit_at_10 = h10 / n;
        m.mrr = rr / n;
    }
    let outcomes: Vec<crate::audit::ProbeOutcome> = results
        .iter()
        .filter(|r| r.is_positive())
        .map(|r| crate::audit::ProbeOutcome { probe_id: r.id.clone(), required_units: r.required_units.clone(), ranked: r.retrieved().map(|u| u.0.clone()).collect(), k: r.k })
        .collect();
    let probe_set = crate::audit::probe_metrics(&outcomes);
    m.probe_coverage_at_k = probe_set.coverage_at_k.unwrap_or(0.0);
    m.probe_hit_at_k = probe_set.hit_at_k.unwrap_or(0.0);
    m.none_auc = auc(&pos_top, &none_top);
    m.mean_top_positive = mean(&pos_top);
    m.mean_top_none = mean(&none_top);
    m
}

/// Overall and per-agent metrics.
pub fn evaluate(results: &[ProbeResult]) -> Report {
    let all: Vec<&ProbeResult> = results.iter().collect();
    let mut groups: BTreeMap<String, Vec<&ProbeResult>> = BTreeMap::new();
    for r in results {
        groups.entry(r.agent_id.clone()).or_default().push(r);
    }
    let per_agent = groups.into_iter().map(|(k, v)| (k, metrics(&v))).collect();
    let misses: Vec<Miss> = results.iter().filter_map(ProbeResult::miss).collect();
    let misses_at_3 = misses.iter().filter(|m| !m.hit_at_3).map(|m| m.id.clone()).collect();
    Report { overall: metrics(&all), per_agent, misses_at_3, misses }
}

/// One line per [`Miss`]: `miss@1|miss@3|miss@1,3 id agent  top unit (score)  required
/// unit@rank …  | intent` (where it was missed), `@-` for a required unit not ranked.
pub fn format_misses(report: &Report) -> String {
    let mut s = String::new();
    for m in &report.misses {
        let at = match (m.hit_at_1, m.hit_at_3) {
            (false, false) => "miss@1,3",
            (false, true) => "miss@1",
            _ => "miss@3",
        };
        let req: Vec<String> = m.required.iter().map(|(u, r)| format!("{u}@{}", r.map_or_else(|| "-".to_string(), |r| r.to_string()))).collect();
        s.push_str(&format!("{at} {:<14} {:<24} top {} ({:.3})  required {}  | {}\n", m.id, m.agent_id, m.top, m.top_score, req.join(" "), m.intent));
    }
    s
}

/// A fixed-width text table of a report.
pub fn format_table(report: &Report) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{:<26} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6} {:>6}\n",
        "agent", "probes", "pos", "hit@1", "hit@3", "hit@10", "mrr", "none_auc", "topP", "topN"
    ));
    let opt = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
    let mut row = |name: &str, m: &Metrics| {
        s.push_str(&format!(
            "{:<26} {:>6} {:>6} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>8} {:>6} {:>6}\n",
            name,
            m.probes,
            m.positives,
            m.hit_at_1,
            m.hit_at_3,
            m.hit_at_10,
            m.mrr,
            opt(m.none_auc),
            opt(m.mean_top_positive),
            opt(m.mean_top_none)
        ));
    };
    for (k, m) in &report.per_agent {
        row(k, m);
    }
    row("OVERALL", &report.overall);
    let o = &report.overall;
    s.push_str(&format!("probe-set (§21.5.4, each probe's k, default 3): probe-coverage@k {:.3}  probe-hit@k {:.3}\n", o.probe_coverage_at_k, o.probe_hit_at_k));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(id: &str, agent: &str, req: &[&str], none: bool, ranked: &[(&str, f64)]) -> ProbeResult {
        ProbeResult {
            id: id.into(),
            agent_id: agent.into(),
            intent: format!("intent of {id}"),
            required_units: req.iter().map(|s| s.to_string()).collect(),
            expect_none: none,
            ranked: ranked.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            k: 3,
        }
    }

    #[test]
    fn hand_computed() {
        let rs = vec![
            // rank 1: hit@1, hit@3, rr 1
            pr("p1", "a", &["x"], false, &[("x", 0.9), ("y", 0.5), ("z", 0.1)]),
            // rank 2: rr 1/2, hit@3
            pr("p2", "a", &["y"], false, &[("x", 0.8), ("y", 0.7), ("z", 0.1)]),
            // two required, x at 1 and z at 4: hit@1 yes, hit@3 no, rr 1
            pr("p3", "b", &["x", "z"], false, &[("x", 0.6), ("y", 0.5), ("w", 0.4), ("z", 0.3)]),
            // required not ranked at all: rr 0
            pr("p4", "b", &["q"], false, &[("x", 0.3)]),
            pr("n1", "a", &[], true, &[("x", 0.8)]),
            pr("n2", "b", &[], true, &[("x", 0.2)]),
        ];
        let r = evaluate(&rs);
        let o = &r.overall;
        assert_eq!((o.probes, o.positives, o.none_probes), (6, 4, 2));
        assert!((o.hit_at_1 - 0.5).abs() < 1e-12);
        assert!((o.hit_at_3 - 0.5).abs() < 1e-12);
        assert!((o.hit_at_10 - 0.75).abs() < 1e-12);
        assert!((o.mrr - (1.0 + 0.5 + 1.0 + 0.0) / 4.0).abs() < 1e-12);
        // positives' tops 0.9 0.8 0.6 0.3 vs nones 0.8 0.2:
        // vs 0.8: 1 + 0.5 + 0 + 0 = 1.5; vs 0.2: 4  => 5.5 / 8
        assert!((o.none_auc.unwrap() - 5.5 / 8.0).abs() < 1e-12);
        // §21.5.4 at k = 3: p3 has one of its two units there (coverage 1/2, a hit),
        // unlike the issue's hit@3, which needs both; p4 none.
        assert_eq!((o.probe_coverage_at_k, o.probe_hit_at_k), (0.625, 0.75));
        // Each probe's own k: p3 at k = 4 covers both.
        let mut wide = rs.clone();
        wide[2].k = 4;
        assert_eq!(evaluate(&wide).overall.probe_coverage_at_k, 0.75);
        let a = &r.per_agent["a"];
        assert_eq!(a.positives, 2);
        assert!((a.mrr - 0.75).abs() < 1e-12);
        // a: tops 0.9, 0.8 vs none 0.8 => (1 + 0.5) / 2
        assert!((a.none_auc.unwrap() - 0.75).abs() < 1e-12);
        let b = &r.per_agent["b"];
        assert!((b.none_auc.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(r.misses_at_3, vec!["p3".to_string(), "p4".to_string()]);
        // missed at 1 (p2, p4) or at 3 (p3, p4); never a hit (p1) or a none probe
        let m: Vec<(&str, &str, bool, bool)> = r.misses.iter().map(|m| (m.id.as_str(), m.top.as_str(), m.hit_at_1, m.hit_at_3)).collect();
        assert_eq!(m, vec![("p2", "x", false, true), ("p3", "x", true, false), ("p4", "x", false, false)]);
        assert_eq!(r.misses[1].required, vec![("x".to_string(), Some(1)), ("z".to_string(), Some(4))]);
        assert_eq!(r.misses[2].required, vec![("q".to_string(), None)]);
        let t = format_misses(&r);
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(t.lines().next().is_some_and(|l| l.starts_with("miss@1 p2") && l.contains("top x (0.800)") && l.contains("required y@2") && l.ends_with("| intent of p2")), "{t}");
        assert!(t.contains("miss@3 p3") && t.contains("required x@1 z@4") && t.contains("miss@1,3 p4") && t.contains("required q@-"), "{t}");
    }

    #[test]
    fn units_that_score_zero_are_not_retrieved() {
        // an intent that matches nothing: every unit at 0, in name order
        let nothing = pr("p1", "a", &["a-unit"], false, &[("a-unit", 0.0), ("b-unit", 0.0)]);
        // the required unit after the last unit with a score
        let after = pr("p2", "a", &["c"], false, &[("x", 0.4), ("c", 0.0)]);
        let r = evaluate(&[nothing, after]);
        let o = &r.overall;
        assert_eq!((o.hit_at_1, o.hit_at_3, o.hit_at_10, o.mrr), (0.0, 0.0, 0.0, 0.0));
        assert_eq!((o.probe_coverage_at_k, o.probe_hit_at_k), (0.0, 0.0));
        assert_eq!(r.misses[0].required, vec![("a-unit".to_string(), None)]);
        assert_eq!(r.misses[1].required, vec![("c".to_string(), None)]);
    }

    /// The same probes in another order give the same figures to the last bit (a sum of
    /// reciprocal ranks taken probe by probe did not: 0.8583333333333334 against …32).
    #[test]
    fn the_probes_order_does_not_reach_the_figures() {
        let names: Vec<String> = (0..7).map(|j| format!("u{j}")).collect();
        let mut rs: Vec<ProbeResult> = (0..60)
            .map(|i| {
                let none = i % 11 == 0;
                let required = [names[(i * 5 + i / 3) % 7].as_str()];
                let ranked: Vec<(&str, f64)> = names.iter().enumerate().map(|(j, n)| (n.as_str(), 1.0 - j as f64 / 10.0 - (i % 4) as f64 / 100.0)).collect();
                pr(&format!("p{i}"), if i % 2 == 0 { "a" } else { "b" }, if none { &[] } else { &required }, none, &ranked)
            })
            .collect();
        let figures = |rs: &[ProbeResult]| {
            let r = evaluate(rs);
            serde_json::to_string(&(r.overall, r.per_agent)).unwrap()
        };
        let forward = figures(&rs);
        rs.reverse();
        assert_eq!(figures(&rs), forward);
        rs.sort_by_key(|r| (r.required_units.clone(), r.id.len()));
        assert_eq!(figures(&rs), forward);
    }

    #[test]
    fn no_none_probes_gives_null_auc() {
        let rs = vec![pr("p1", "a", &["x"], false, &[("x", 0.9)])];
        let r = evaluate(&rs);
        assert_eq!(r.overall.none_auc, None);
        let j = serde_json::to_value(&r).unwrap();
        assert!(j["overall"]["none_auc"].is_null());
        assert!(evaluate(&[]).overall.none_auc.is_none());
    }

    #[test]
    fn probe_parsing_accepts_pack_id() {
        let s = r#"{"id":"d1","pack_id":"prometheus","intent":"x","required_units":["a"],"why":"w"}

{"id":"d2","agent_id":"ceo","intent":"y","required_units":[],"expect_none":true,"wake_reason":"issue_assigned"}"#;
        let ps = parse_probes(s).unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0].agent_id, "prometheus");
        assert!(ps[1].expect_none);
        assert_eq!(ps[1].wake_reason.as_deref(), Some("issue_assigned"));
        assert!(parse_probes("{bad").is_err());
    }

    /// The module's §21.5.4 probe-set metrics count each probe's top k, 3 when the probe or
    /// its result names none (the spec's example probe has `"k": 3`).
    #[test]
    fn a_probe_without_k_counts_its_top_3() {
        let p: Probe = serde_json::from_str(r#"{"id":"p1","agent_id":"a","intent":"x","required_units":["u"]}"#).unwrap();
        assert_eq!(p.k, None);
        assert_eq!(ProbeResult::new(&p, vec![]).k, 3);
        assert_eq!(ProbeResult::new(&Probe { k: Some(5), ..p }, vec![]).k, 5);
        let r: ProbeResult = serde_json::from_str(r#"{"id":"p1","agent_id":"a"}"#).unwrap();
        assert_eq!(r.k, 3);
        // a required unit at rank 3 is covered at the default k, one at rank 4 is not
        let at3 = pr("p1", "a", &["c"], false, &[("a", 0.9), ("b", 0.8), ("c", 0.7)]);
        let at4 = pr("p2", "a", &["d"], false, &[("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)]);
        let o = evaluate(&[ProbeResult { k: default_k(), ..at3 }, ProbeResult { k: default_k(), ..at4 }]).overall;
        assert_eq!((o.probe_coverage_at_k, o.probe_hit_at_k), (0.5, 0.5));
    }

    /// A probe that neither names a required unit nor expects none is not a positive probe:
    /// it counts among the probes only, and is never a miss.
    #[test]
    fn a_probe_without_required_units_is_not_positive() {
        let r = evaluate(&[pr("p0", "a", &[], false, &[("x", 0.5)]), pr("p1", "a", &["x"], false, &[("x", 0.5)])]);
        let o = &r.overall;
        assert_eq!((o.probes, o.positives, o.none_probes), (2, 1, 0));
        assert_eq!((o.hit_at_1, o.mrr), (1.0, 1.0));
        assert!(r.misses.is_empty(), "{:?}", r.misses);
    }

    /// The mean top scores of positive and of nothing-relevant probes (the table's `topP`,
    /// `topN`), rounded to 6 decimals as the scores are; `None` for a group without any.
    #[test]
    fn the_mean_top_scores_are_per_kind_and_rounded_to_6_decimals() {
        let rs = [
            pr("p1", "a", &["x"], false, &[("x", 0.1)]),
            pr("p2", "a", &["x"], false, &[("y", 0.2), ("x", 0.1)]),
            pr("n1", "a", &[], true, &[("x", 0.2)]),
            pr("n2", "a", &[], true, &[("x", 0.2)]),
            pr("n3", "a", &[], true, &[("x", 0.3)]),
        ];
        // (0.1 + 0.2) / 2 is 0.15000000000000002 in f64; 0.7 / 3 is 0.2333…
        let o = evaluate(&rs).overall;
        assert_eq!((o.mean_top_positive, o.mean_top_none), (Some(0.15), Some(0.233333)));
        let o = evaluate(&rs[..2]).overall;
        assert_eq!((o.mean_top_positive, o.mean_top_none), (Some(0.15), None));
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[2.0, 4.0]), Some(3.0));
    }

    /// A group with no positive probe (an agent with only nothing-relevant probes) has its
    /// hit rates and MRR at 0, not a 0/0.
    #[test]
    fn a_group_without_positive_probes_has_zero_rates() {
        let r = evaluate(&[pr("n1", "a", &[], true, &[("x", 0.4)]), pr("p1", "b", &["x"], false, &[("x", 0.9)])]);
        let a = &r.per_agent["a"];
        assert_eq!((a.positives, a.hit_at_1, a.hit_at_3, a.hit_at_10, a.mrr), (0, 0.0, 0.0, 0.0, 0.0));
        assert!(format_table(&r).lines().nth(1).is_some_and(|l| l.starts_with('a') && !l.contains("NaN")), "{}", format_table(&r));
    }

    /// `lid eval`'s table: a header, one row per agent (by name), the overall row, then the
    /// §21.5.4 probe-set line; figures to 3 decimals, `-` where a figure has no value.
    #[test]
    fn the_table_has_a_row_per_agent_then_overall_and_the_probe_set_line() {
        let r = evaluate(&[pr("p1", "b", &["x"], false, &[("x", 0.9)]), pr("p2", "a", &["y"], false, &[("x", 0.9), ("y", 0.5)]), pr("n1", "a", &[], true, &[("x", 0.25)])]);
        let t = format_table(&r);
        let rows: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows.len(), 5, "{t}");
        assert_eq!(rows[0], ["agent", "probes", "pos", "hit@1", "hit@3", "hit@10", "mrr", "none_auc", "topP", "topN"]);
        // a: p2 (y at rank 2: hit@3, rr 1/2) and a none probe whose top (0.25) is below p2's (0.9)
        assert_eq!(rows[1], ["a", "2", "1", "0.000", "1.000", "1.000", "0.500", "1.000", "0.900", "0.250"]);
        assert_eq!(rows[2], ["b", "1", "1", "1.000", "1.000", "1.000", "1.000", "-", "0.900", "-"]);
        assert_eq!(rows[3], ["OVERALL", "3", "2", "0.500", "1.000", "1.000", "0.750", "1.000", "0.900", "0.250"]);
        // probe-coverage@3: p1 1, p2 1; probe-hit@3 likewise
        assert_eq!(t.lines().nth(4), Some("probe-set (§21.5.4, each probe's k, default 3): probe-coverage@k 1.000  probe-hit@k 1.000"));
    }
}
