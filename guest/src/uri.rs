//! `instruction:` URIs and version ordering (§21.4.1, §21.4.2).
//!
//! `instruction:{deployment}/{agent_id}/{unit_name}/{version}`; the manifest itself is
//! `instruction:{deployment}/{agent_id}/manifest/{version}`. Versions must be concrete:
//! floating aliases such as `latest` are rejected. Precedence ([`version_precedence`]):
//! `v2 < v10` (numeric segments compare as numbers), a leading `v` and missing zero
//! segments do not count (`2 == v2 == V2.0`), semver where given (`1.2.0 < 1.10.0`,
//! pre-releases before the release: `3.0.0-rc1 < 3`). [`compare_versions`] adds a byte-order
//! tiebreak to make that a total order for picking the latest.

use std::cmp::Ordering;
use std::fmt;

/// The URI scheme prefix of the reserved instruction scope.
pub const SCHEME: &str = "instruction:";

/// Aliases that would make a URI float; never valid as a version (§21.4.1).
const FLOATING: &[&str] = &["latest", "current", "head", "stable", "newest", "main", "master", "next"];

/// Why a URI or version was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    #[error("URI must start with `instruction:`: {0:?}")]
    Scheme(String),
    #[error("URI must have the form instruction:{{deployment}}/{{agent}}/{{unit}}/{{version}}: {0:?}")]
    Shape(String),
    #[error("URI segment {segment} is empty or contains characters outside [A-Za-z0-9._-]: {value:?}")]
    Segment { segment: &'static str, value: String },
    #[error("version {0:?} is a floating alias; use a concrete version such as v1 (§21.4.1)")]
    Floating(String),
    #[error("version {0:?} must contain a number (e.g. v3 or 1.2.0)")]
    NotAVersion(String),
}

/// A parsed `instruction:` URI.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstructionUri {
    pub deployment: String,
    pub agent: String,
    pub unit: String,
    pub version: String,
}

impl InstructionUri {
    pub fn new(deployment: &str, agent: &str, unit: &str, version: &str) -> Result<Self, UriError> {
        check_segment("deployment", deployment)?;
        check_segment("agent", agent)?;
        check_segment("unit", unit)?;
        check_version(version)?;
        Ok(InstructionUri {
            deployment: deployment.to_string(),
            agent: agent.to_string(),
            unit: unit.to_string(),
            version: version.to_string(),
        })
    }

    /// Parse `instruction:{deployment}/{agent}/{unit}/{version}`.
    pub fn parse(s: &str) -> Result<Self, UriError> {
        let rest = s.strip_prefix(SCHEME).ok_or_else(|| UriError::Scheme(s.to_string()))?;
        let parts: Vec<&str> = rest.split('/').collect();
        match parts.as_slice() {
            [d, a, u, v] => InstructionUri::new(d, a, u, v),
            _ => Err(UriError::Shape(s.to_string())),
        }
    }

    /// The version-less key of this unit: `instruction:{deployment}/{agent}/{unit}`.
    pub fn unit_key(&self) -> String {
        unit_key(&self.deployment, &self.agent, &self.unit)
    }

    pub fn is_manifest(&self) -> bool {
        self.unit == "manifest"
    }
}

impl fmt::Display for InstructionUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}/{}/{}", self.deployment, self.agent, self.unit, self.version)
    }
}

/// `instruction:{deployment}/{agent}/{unit}`: the key under which a unit's versions are listed.
pub fn unit_key(deployment: &str, agent: &str, unit: &str) -> String {
    format!("{SCHEME}{deployment}/{agent}/{unit}")
}

/// The manifest URI of an agent at a version (§21.4.1).
pub fn manifest_uri(deployment: &str, agent: &str, version: &str) -> String {
    format!("{SCHEME}{deployment}/{agent}/manifest/{version}")
}

fn check_segment(segment: &'static str, value: &str) -> Result<(), UriError> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(UriError::Segment { segment, value: value.to_string() })
    }
}

/// Check that `v` is a concrete version string (§21.4.1).
pub fn check_version(v: &str) -> Result<(), UriError> {
    check_segment("version", v)?;
    if FLOATING.iter().any(|f| f.eq_ignore_ascii_case(v)) {
        return Err(UriError::Floating(v.to_string()));
    }
    if !v.bytes().any(|b| b.is_ascii_digit()) {
        return Err(UriError::NotAVersion(v.to_string()));
    }
    Ok(())
}

/// One comparable piece of a version string.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    /// A run of digits, compared as a number of any size.
    Num(&'a str),
    Text(&'a str),
}

fn pieces(v: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let bytes = v.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if bytes[i].is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Piece::Num(&v[start..i]));
        } else if matches!(bytes[i], b'.' | b'_') {
            i += 1;
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_digit() && !matches!(bytes[i], b'.' | b'_') {
                i += 1;
            }
            out.push(Piece::Text(&v[start..i]));
        }
    }
    out
}

/// Two digit runs as numbers of any size: `007 == 7`, `10 > 9`, no overflow.
fn cmp_digits(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// What follows a version's release numbers; the variants are in precedence order.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TailKind {
    /// `-rc.1`: a pre-release sorts below its release (SemVer §11.3).
    Pre,
    /// Nothing, or only `+build` metadata (which never changes precedence).
    Release,
    /// Any other text (`2b`, `r10`): after the release, as before.
    Other,
}

/// A version split for precedence: `v1.2-rc.1` is release `[1, 2]`, pre-release `rc.1`.
struct Parts<'a> {
    release: Vec<&'a str>,
    kind: TailKind,
    tail: &'a str,
}

/// Split `v` after ignoring one leading `v`/`V` (§21.4.1 spells versions `v1`, `v3`).
fn parts(v: &str) -> Parts<'_> {
    let s = v.strip_prefix(['v', 'V']).unwrap_or(v);
    let mut release = Vec::new();
    let mut rest = s;
    loop {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            release.push(&rest[..digits]);
            rest = &rest[digits..];
        } else if let Some(r) = rest.strip_prefix(['.', '_']) {
            rest = r;
        } else {
            break;
        }
    }
    let (kind, tail) = if let Some(pre) = rest.strip_prefix('-') {
        (TailKind::Pre, pre.split('+').next().unwrap_or(pre))
    } else if rest.is_empty() || rest.starts_with('+') {
        (TailKind::Release, "")
    } else {
        (TailKind::Other, rest)
    };
    Parts { release, kind, tail }
}

/// Release numbers with missing pieces read as 0: `3 == 3.0.0`, `1.2 < 1.10`.
fn cmp_release(a: &[&str], b: &[&str]) -> Ordering {
    (0..a.len().max(b.len()))
        .map(|i| cmp_digits(a.get(i).unwrap_or(&"0"), b.get(i).unwrap_or(&"0")))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// Pre-release identifiers by SemVer §11.4: numeric ones as numbers and below
/// alphanumeric ones, which compare in ASCII order; a shorter prefix sorts first.
fn cmp_prerelease(a: &str, b: &str) -> Ordering {
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let ident = |x: &str, y: &str| match (numeric(x), numeric(y)) {
        (true, true) => cmp_digits(x, y),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => x.cmp(y),
    };
    let (mut xs, mut ys) = (a.split('.'), b.split('.'));
    loop {
        match (xs.next(), ys.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match ident(x, y) {
                Ordering::Equal => {}
                o => return o,
            },
        }
    }
}

/// Any other tail piece by piece: numbers as numbers and above text, text ignoring case.
fn cmp_other(a: &str, b: &str) -> Ordering {
    let piece = |x: &Piece, y: &Piece| match (x, y) {
        (Piece::Num(m), Piece::Num(n)) => cmp_digits(m, n),
        (Piece::Num(_), Piece::Text(_)) => Ordering::Greater,
        (Piece::Text(_), Piece::Num(_)) => Ordering::Less,
        (Piece::Text(s), Piece::Text(t)) => s.to_ascii_lowercase().cmp(&t.to_ascii_lowercase()),
    };
    let (pa, pb) = (pieces(a), pieces(b));
    pa.iter()
        .zip(&pb)
        .map(|(x, y)| piece(x, y))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| pa.len().cmp(&pb.len()))
}

/// Version precedence (§21.4.1 "monotonically incrementing", §21.4.2 rule 3): is `a`
/// older, the same version, or newer than `b`? One leading `v`/`V` is ignored and missing
/// numeric pieces count as 0, so `2`, `v2` and `V2.0` are `Equal`; a pre-release sorts below
/// its release (`3.0.0-rc1 < 3`); two semantic versions follow SemVer precedence (build
/// metadata ignored); anything else compares piece by piece (`v2 < v10`, `r9 < r10`).
/// A total preorder: use it for every "is it newer" decision, as
/// `version_precedence(new, old) == Ordering::Greater`.
pub fn version_precedence(a: &str, b: &str) -> Ordering {
    let (x, y) = (parts(a), parts(b));
    cmp_release(&x.release, &y.release).then_with(|| x.kind.cmp(&y.kind)).then_with(|| match x.kind {
        TailKind::Pre => cmp_prerelease(x.tail, y.tail),
        TailKind::Release => Ordering::Equal,
        TailKind::Other => cmp_other(x.tail, y.tail),
    })
}

/// Total order on version strings (§21.4.2 rule 3), for picking the latest: by
/// [`version_precedence`], then equivalent spellings (`v2`, `2`, `v02`, `1.0.0+a`) by
/// byte order, so the pick is deterministic. Not for "is it newer" decisions: `v2` is
/// not newer than `2`.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    version_precedence(a, b).then_with(|| a.cmp(b))
}

/// The highest version in `versions` (§21.4.2 rule 3), ignoring invalid ones.
pub fn latest<'a, I: IntoIterator<Item = &'a String>>(versions: I) -> Option<&'a String> {
    versions
        .into_iter()
        .filter(|v| check_version(v).is_ok())
        .max_by(|a, b| compare_versions(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_round_trip() {
        let s = "instruction:acme/cto/security-posture/v2";
        let u = InstructionUri::parse(s).unwrap();
        assert_eq!(u.deployment, "acme");
        assert_eq!(u.agent, "cto");
        assert_eq!(u.unit, "security-posture");
        assert_eq!(u.version, "v2");
        assert_eq!(u.to_string(), s);
        assert_eq!(u.unit_key(), "instruction:acme/cto/security-posture");
    }

    #[test]
    fn only_the_reserved_manifest_segment_names_a_manifest() {
        // §21.4.1: the manifest itself is instruction:{deployment}/{agent_id}/manifest/{version}
        let m = InstructionUri::parse(&manifest_uri("acme", "cto", "v3")).unwrap();
        assert!(m.is_manifest());
        assert!(!InstructionUri::parse("instruction:acme/cto/security-posture/v3").unwrap().is_manifest());
        assert!(!InstructionUri::parse("instruction:acme/manifest/manifests/v3").unwrap().is_manifest());
    }

    #[test]
    fn rejects_bad_shapes() {
        assert!(matches!(InstructionUri::parse("acme/cto/x/v1"), Err(UriError::Scheme(_))));
        assert!(matches!(InstructionUri::parse("instruction:acme/cto/v1"), Err(UriError::Shape(_))));
        assert!(matches!(InstructionUri::parse("instruction:acme/cto/x/y/v1"), Err(UriError::Shape(_))));
        assert!(matches!(InstructionUri::parse("instruction:acme//x/v1"), Err(UriError::Segment { .. })));
        assert!(matches!(InstructionUri::parse("instruction:ac me/cto/x/v1"), Err(UriError::Segment { .. })));
    }

    #[test]
    fn rejects_floating_aliases() {
        // §21.4.1: MUST NOT be a floating alias.
        for v in ["latest", "LATEST", "current", "head"] {
            let r = InstructionUri::parse(&format!("instruction:acme/cto/x/{v}"));
            assert!(matches!(r, Err(UriError::Floating(_))), "{v}: {r:?}");
        }
        assert!(matches!(check_version("draft"), Err(UriError::NotAVersion(_))));
    }

    #[test]
    fn orders_versions_numerically() {
        assert_eq!(compare_versions("v2", "v10"), Ordering::Less);
        assert_eq!(compare_versions("v10", "v9"), Ordering::Greater);
        assert_eq!(compare_versions("1.2.0", "1.10.0"), Ordering::Less);
        assert_eq!(compare_versions("1.0.0-rc1", "1.0.0"), Ordering::Less);
        assert_eq!(compare_versions("1.0.0-rc.2", "1.0.0-rc.10"), Ordering::Less);
        assert_eq!(compare_versions("v1", "v1"), Ordering::Equal);
        // zero padding is not a different number, but the order stays total.
        assert_ne!(compare_versions("v01", "v1"), Ordering::Equal);
        let vs: Vec<String> = ["v3", "v10", "v2", "latest"].iter().map(|s| s.to_string()).collect();
        assert_eq!(latest(&vs).map(String::as_str), Some("v10"));
    }

    #[test]
    fn semantic_versions_follow_semver_precedence() {
        // SemVer 2.0.0 §11: numeric identifiers rank below alphanumeric ones, and a
        // shorter set of identifiers below a longer one that it begins.
        let order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "v1.0.1", "2.0.0-alpha.gamma", "2.0.0"];
        for w in order.windows(2) {
            assert_eq!(compare_versions(w[0], w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
            assert_eq!(compare_versions(w[1], w[0]), Ordering::Greater, "{} > {}", w[1], w[0]);
        }
        // build metadata does not change precedence; the order stays total
        assert_ne!(compare_versions("1.0.0+a", "1.0.0+b"), Ordering::Equal);
        assert_eq!(compare_versions("1.0.0+b", "1.0.1"), Ordering::Less);
    }

    #[test]
    fn mixed_spellings_compare_by_number() {
        // the `v` is not a piece that sorts below a number: v50 is newer than 3.0.0
        assert_eq!(version_precedence("v50", "3.0.0"), Ordering::Greater);
        assert_eq!(version_precedence("50", "3.0.0"), Ordering::Greater);
        assert_eq!(version_precedence("3.0.0", "v50"), Ordering::Less);
        assert_eq!(version_precedence("V3", "v2.9"), Ordering::Greater);
        assert_eq!(version_precedence("v2", "v10"), Ordering::Less);
        assert_eq!(version_precedence("r9", "r10"), Ordering::Less);
    }

    #[test]
    fn missing_pieces_are_zero_and_prereleases_precede_their_release() {
        assert_eq!(version_precedence("3", "3.0.0"), Ordering::Equal);
        assert_eq!(version_precedence("v1", "v1.0"), Ordering::Equal);
        assert_eq!(version_precedence("3.0.0-rc1", "3"), Ordering::Less);
        assert_eq!(version_precedence("3", "3.0.0-rc1"), Ordering::Greater);
        assert_eq!(version_precedence("v3-rc.2", "3.0.0-rc.10"), Ordering::Less);
        assert_eq!(version_precedence("3.0.1-rc1", "3"), Ordering::Greater);
    }

    #[test]
    fn equivalent_spellings_have_equal_precedence() {
        for (a, b) in [("2", "v2"), ("v2", "V2.0"), ("2", "V2.0"), ("2.0", "2.0.0"), ("v01", "v1"), ("1.0.0+a", "1.0.0+b")] {
            assert_eq!(version_precedence(a, b), Ordering::Equal, "{a} vs {b}");
            assert_eq!(version_precedence(b, a), Ordering::Equal, "{b} vs {a}");
            // still a total order for picking the latest: the tiebreak is byte order
            assert_eq!(compare_versions(a, b), a.cmp(b), "{a} vs {b}");
        }
        let vs: Vec<String> = ["2", "v2", "V2.0"].iter().map(|s| s.to_string()).collect();
        assert_eq!(latest(&vs).map(String::as_str), Some("v2"));
        let vs: Vec<String> = ["3.0.0", "v50", "3.0.0-rc1"].iter().map(|s| s.to_string()).collect();
        assert_eq!(latest(&vs).map(String::as_str), Some("v50"));
    }

    #[test]
    fn precedence_agrees_with_semver_and_is_transitive() {
        let vs = [
            "1", "v1", "1.0", "1.0.0", "1.0.0-rc.1", "1-rc.1", "1.0.0-rc1", "v1-rc2", "1.0.0-rc10", "1.0.0-alpha",
            "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.1", "v1.2", "1.10", "2", "v2b", "2-x", "10", "r10", "r9", "0", "v0.9",
        ];
        for a in vs {
            for b in vs {
                let ab = version_precedence(a, b);
                assert_eq!(ab, version_precedence(b, a).reverse(), "{a} vs {b}");
                if let (Ok(x), Ok(y)) = (semver::Version::parse(a.trim_start_matches('v')), semver::Version::parse(b.trim_start_matches('v'))) {
                    assert_eq!(ab, x.cmp_precedence(&y), "{a} vs {b} must follow SemVer");
                }
                for c in vs {
                    if ab.is_le() && version_precedence(b, c).is_le() {
                        assert!(version_precedence(a, c).is_le(), "{a} <= {b} <= {c}");
                    }
                }
            }
        }
    }

    #[test]
    fn dots_and_underscores_separate_the_pieces_of_a_non_semver_tail() {
        // a tail that is neither a pre-release nor build metadata compares piece by piece,
        // `.` and `_` only separating them: `r1.10` is newer than `r1.9` (§21.4.1)
        assert_eq!(version_precedence("v2rc.10", "v2rc.9"), Ordering::Greater);
        assert_eq!(version_precedence("v2rc_9", "v2rc_10"), Ordering::Less);
        assert_eq!(version_precedence("v2rc.9", "v2rc_9"), Ordering::Equal);
    }

    #[test]
    fn huge_numbers_do_not_panic() {
        let a = format!("v{}", "9".repeat(60));
        assert_eq!(compare_versions(&a, "v10"), Ordering::Greater);
    }
}
