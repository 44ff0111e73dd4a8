//! Eval metrics. PLACEHOLDER, owned by the ranking work.
