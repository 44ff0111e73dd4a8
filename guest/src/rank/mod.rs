//! Recall ranking (§21.3.3): lexical, semantic and graph signals mixed by weights.
//!
//! PLACEHOLDER interface, owned by the ranking work: keep these signatures.

use serde::{Deserialize, Serialize};

/// Signal weights (§21.3.3 default: lexical 0.35 / semantic 0.50 / graph 0.15).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    pub lexical: f64,
    pub semantic: f64,
    pub graph: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { lexical: 0.35, semantic: 0.50, graph: 0.15 }
    }
}

/// What the ranker sees of one unit: manifest metadata and the unit body.
#[derive(Debug, Clone, Copy)]
pub struct UnitDoc<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub intents: &'a [String],
    pub keywords: &'a [String],
    pub task_types: &'a [String],
    pub required_by_task_types: &'a [String],
    pub body: &'a str,
}

/// One ranked unit. `score` is calibrated to [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// Index into the `units` slice given to [`Ranker::build`].
    pub index: usize,
    pub name: String,
    pub score: f64,
    pub lexical: f64,
    pub semantic: f64,
    pub graph: f64,
}

/// A ranker over one agent's units. Build once, rank many intents.
#[derive(Debug, Clone)]
pub struct Ranker {
    names: Vec<String>,
}

impl Ranker {
    pub fn build(units: &[UnitDoc<'_>]) -> Ranker {
        Ranker { names: units.iter().map(|u| u.name.to_string()).collect() }
    }

    /// All units, best first; ties broken by name. Deterministic.
    pub fn rank(&self, _intent: &str, _wake_reason: Option<&str>, _weights: &Weights) -> Vec<Scored> {
        let mut v: Vec<Scored> = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| Scored { index: i, name: n.clone(), score: 0.0, lexical: 0.0, semantic: 0.0, graph: 0.0 })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}
