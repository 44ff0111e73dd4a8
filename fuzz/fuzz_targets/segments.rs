//! Split ranker indexes (§21.3.3 ranking over a precomputed index cached in parts): the
//! demo agent's index split into small segments. Even first bytes: the rest is an intent,
//! and ranking over the head plus only the segments that intent reaches
//! (`Ranker::terms_for`) equals ranking over the whole index. Odd first bytes: the rest
//! is a hostile cached segment (a host's cache is not trusted): decoding it, installing
//! it and ranking over it never panics, an install that refuses it leaves the head
//! untouched, and whatever is installed ranks deterministically with scores in [0, 1].
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::rank::index::{Index, Segment};
use lid_core::rank::{Ranker, Weights};
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static FIX: OnceLock<(Ranker, Index, Vec<Segment>)> = OnceLock::new();
    let (whole, head, segs) = FIX.get_or_init(|| {
        let whole = lid_fuzz::demo_ranker();
        let (head, segs) = whole.index().clone().split(96);
        (whole, head, segs)
    });
    let w = Weights::default();
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        let Some(intent) = lid_fuzz::text(rest) else { return };
        let wanted = head.segments_of(&Ranker::from_index(head.clone()).terms_for(intent));
        let mut r = Ranker::from_index(head.clone());
        assert!(r.install(wanted.iter().map(|&s| (s, segs[s as usize].clone())).collect()), "the head's own segments install");
        assert_eq!(r.rank(intent, Some("issue_assigned"), &w), whole.rank(intent, Some("issue_assigned"), &w), "a split index ranks as the whole");
        return;
    }
    let Some(seg) = Segment::decode(rest.to_vec()) else { return };
    let s = (mode >> 1) as u32 % segs.len() as u32;
    let mut r = Ranker::from_index(head.clone());
    if !r.install(vec![(s, seg)]) {
        assert_eq!(r.index(), head, "a refused install leaves the head as it was");
        return;
    }
    for intent in ["roll back the release", "review the dependency upgrade", "status update for the incident"] {
        let a = r.rank(intent, Some("issue_assigned"), &w);
        assert_eq!(a, r.rank(intent, Some("issue_assigned"), &w), "deterministic");
        assert!(a.iter().all(|x| (0.0..=1.0).contains(&x.score)), "scores in [0, 1]");
    }
});
