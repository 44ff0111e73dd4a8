//! `instruction:` URIs and version ordering (§21.4.1, §21.4.2).
//!
//! `instruction:{deployment}/{agent_id}/{unit_name}/{version}`; the manifest itself is
//! `instruction:{deployment}/{agent_id}/manifest/{version}`. Versions must be concrete:
//! floating aliases such as `latest` are rejected. Ordering: `v2 < v10` (numeric
//! segments compare as numbers), semver where given (`1.2.0 < 1.10.0`, pre-releases
//! before the release).

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
    Num(u128, &'a str),
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
            let digits = &v[start..i];
            // u128 overflows only past 38 digits; saturate to keep ordering total.
            let n = digits.trim_start_matches('0').parse::<u128>().unwrap_or(if digits.trim_start_matches('0').is_empty() { 0 } else { u128::MAX });
            out.push(Piece::Num(n, digits));
        } else if matches!(bytes[i], b'.' | b'_') {
            i += 1;
        } else if bytes[i] == b'-' {
            // semver pre-release marker: kept as text so `1.0.0-rc1 < 1.0.0`.
            out.push(Piece::Text("-"));
            i += 1;
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_digit() && !matches!(bytes[i], b'.' | b'_' | b'-') {
                i += 1;
            }
            out.push(Piece::Text(&v[start..i]));
        }
    }
    out
}

/// `v` as a semantic version, with or without a leading `v`.
fn semantic(v: &str) -> Option<semver::Version> {
    semver::Version::parse(v.strip_prefix(['v', 'V']).unwrap_or(v)).ok()
}

/// Total order on version strings (§21.4.2 rule 3): two semantic versions by SemVer
/// precedence (`1.0.0-alpha.1 < 1.0.0-alpha.beta < 1.0.0`), anything else piece by piece
/// (`v2 < v10`, `1.2 < 1.10`, `1.0-rc1 < 1.0`). Strings that compare equal fall back to
/// byte order, so the order is total and deterministic.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    if let (Some(x), Some(y)) = (semantic(a), semantic(b)) {
        return x.cmp(&y).then_with(|| a.cmp(b));
    }
    let (pa, pb) = (pieces(a), pieces(b));
    let mut i = 0;
    loop {
        match (pa.get(i), pb.get(i)) {
            (None, None) => return a.cmp(b),
            // A pre-release tail sorts before the bare release.
            (Some(Piece::Text("-")), None) => return Ordering::Less,
            (None, Some(Piece::Text("-"))) => return Ordering::Greater,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let o = match (x, y) {
                    (Piece::Num(m, _), Piece::Num(n, _)) => m.cmp(n),
                    (Piece::Num(..), Piece::Text(_)) => Ordering::Greater,
                    (Piece::Text(_), Piece::Num(..)) => Ordering::Less,
                    (Piece::Text(s), Piece::Text(t)) => s.to_ascii_lowercase().cmp(&t.to_ascii_lowercase()),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
        i += 1;
    }
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
    fn huge_numbers_do_not_panic() {
        let a = format!("v{}", "9".repeat(60));
        assert_eq!(compare_versions(&a, "v10"), Ordering::Greater);
    }
}
