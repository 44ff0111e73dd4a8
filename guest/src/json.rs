//! The recall response's JSON (§21.3.2), written by hand where serde_json is slow.
//!
//! Owns [`recall_response`]: the one large output of a hot path. Its bulk is the units'
//! markdown, and serde_json escapes a string one byte per step (a table lookup each,
//! and a write per run between escapes); that was 14 % of a recall of the `engineer`
//! agent natively and 8 % in the component. [`string`] escapes the very same
//! characters eight bytes per step. The response's other fields are serde_json's own
//! output, so the whole is byte-identical to `serde_json::to_string` of the response
//! (tested against it), which every host relies on (§21.3.4 determinism).

use crate::recall::{Chunk, RecallResponse};

/// `serde_json::to_string(resp)`, faster.
pub fn recall_response(resp: &RecallResponse) -> Result<String, serde_json::Error> {
    // `chunks` is the first field: the rest is serde_json's object from its second
    // field on.
    let RecallResponse { chunks, total_tokens, truncated, missed_hints, omitted, audit_token, warnings, assembly_sha256, content, content_tokens, content_omitted, content_sha256 } = resp;
    let rest = serde_json::to_string(&Rest { total_tokens, truncated, missed_hints, omitted, audit_token, warnings, assembly_sha256, content, content_tokens, content_omitted, content_sha256 })?;
    let mut out = Vec::with_capacity(rest.len() + chunks.iter().map(|c| c.content.len() + c.name.len() * 2 + 256).sum::<usize>());
    out.extend_from_slice(b"{\"chunks\":[");
    for (i, c) in chunks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        chunk(&mut out, c);
    }
    out.push(b']');
    match rest.strip_prefix('{') {
        Some("}") | None => out.push(b'}'),
        Some(fields) => {
            out.push(b',');
            out.extend_from_slice(fields.as_bytes());
        }
    }
    // Only whole UTF-8 strings and ASCII were written.
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

/// [`RecallResponse`] without its `chunks`, in field order (serde_json writes these).
#[derive(serde::Serialize)]
struct Rest<'a> {
    total_tokens: &'a u32,
    truncated: &'a bool,
    missed_hints: &'a Vec<String>,
    omitted: &'a Vec<crate::recall::Omitted>,
    audit_token: &'a String,
    warnings: &'a Vec<String>,
    assembly_sha256: &'a String,
    content: &'a Vec<crate::content::ContentItem>,
    content_tokens: &'a u32,
    content_omitted: &'a Vec<crate::content::ContentOmitted>,
    content_sha256: &'a String,
}

/// One [`Chunk`] as serde_json writes it (fields in declaration order).
fn chunk(out: &mut Vec<u8>, c: &Chunk) {
    let Chunk { name, fact_uri, content, tokens, valid_until, version, score, source, selected_by, sha256 } = c;
    out.extend_from_slice(b"{\"name\":");
    string(out, name);
    out.extend_from_slice(b",\"fact_uri\":");
    string(out, fact_uri);
    out.extend_from_slice(b",\"content\":");
    string(out, content);
    out.extend_from_slice(b",\"tokens\":");
    out.extend_from_slice(itoa::Buffer::new().format(*tokens).as_bytes());
    out.extend_from_slice(b",\"valid_until\":");
    match valid_until {
        Some(v) => string(out, v),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"version\":");
    string(out, version);
    out.extend_from_slice(b",\"score\":");
    if score.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(*score).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b",\"source\":");
    string(out, source);
    out.extend_from_slice(b",\"selected_by\":");
    string(out, selected_by);
    out.extend_from_slice(b",\"sha256\":");
    string(out, sha256);
    out.push(b'}');
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes of `w` must be escaped: below 0x20, `"` or `\`.
fn needs_escape(w: u64) -> bool {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w;
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v;
    (below_space | zero_in(w ^ (ONES * b'"' as u64)) | zero_in(w ^ (ONES * b'\\' as u64))) & HIGHS != 0
}

/// `s` as a JSON string, escaped exactly as serde_json escapes it: `"`, `\`, and the
/// control characters below U+0020 (`\b \t \n \f \r` by name, the rest as `\u00xx`);
/// everything else, U+007F and non-ASCII included, as it is.
pub fn string(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let (mut run, mut i) = (0, 0);
    while i < b.len() {
        if let Some(word) = b.get(i..i + 8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            if !needs_escape(u64::from_le_bytes(w)) {
                i += 8;
                continue;
            }
        }
        let byte = b[i];
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                out.extend_from_slice(&b[run..i]);
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(byte >> 4) as usize], HEX[(byte & 15) as usize]]);
                i += 1;
                run = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&b[run..i]);
        out.extend_from_slice(escape);
        i += 1;
        run = i;
    }
    out.extend_from_slice(&b[run..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &str) -> String {
        let mut out = Vec::new();
        string(&mut out, s);
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn strings_escape_as_serde_json_escapes_them() {
        // every ASCII character, at every offset of an eight-byte word, among
        // multi-byte characters that cross word boundaries
        for c in (0u8..0x80).map(char::from).chain(['é', '€', '😀', '\u{2028}', '\u{7f}']) {
            for pad in 0..17 {
                for s in [format!("{}{c}", "a".repeat(pad)), format!("{c}{}", "é".repeat(pad)), format!("{}{c}{c}x{}", "€".repeat(pad), "b".repeat(pad))] {
                    assert_eq!(json(&s), serde_json::to_string(&s).expect("json"), "{s:?}");
                }
            }
        }
        let md = "## Rules\n\n- Say \"done\" only\twhen C:\\path\\x is\r\nwritten; \u{1}\u{1f} ends.\n";
        assert_eq!(json(md), serde_json::to_string(md).expect("json"));
        assert_eq!(json(""), "\"\"");
    }

    #[test]
    fn the_response_is_serde_jsons_byte_for_byte() {
        let chunk = |name: &str, content: &str, score: f64, valid_until: Option<&str>| Chunk {
            name: name.into(),
            fact_uri: format!("instruction:dep/agent/{name}/v2"),
            content: content.into(),
            tokens: 4_294_967_295,
            valid_until: valid_until.map(Into::into),
            version: "v2".into(),
            score,
            source: "stigmem".into(),
            selected_by: "ranked".into(),
            sha256: "ab".repeat(32),
        };
        let mut resp = RecallResponse {
            chunks: vec![],
            total_tokens: 0,
            truncated: false,
            missed_hints: vec![],
            omitted: vec![],
            audit_token: String::new(),
            warnings: vec![],
            assembly_sha256: String::new(),
            content: vec![],
            content_tokens: 0,
            content_omitted: vec![],
            content_sha256: String::new(),
        };
        assert_eq!(recall_response(&resp).expect("json"), serde_json::to_string(&resp).expect("json"));
        resp.chunks = vec![
            chunk("ground-rules", "## Ground rules\n\"Quote\" \\ back\tslash\u{0}é😀", 1.0, None),
            chunk("odd \"name\"", "", 0.123456, Some("2027-01-01T00:00:00Z")),
            chunk("zero", "x", 0.0, None),
            chunk("tiny", "y", 1e-6, None),
            chunk("nan", "z", f64::NAN, None),
        ];
        resp.total_tokens = 812;
        resp.truncated = true;
        resp.missed_hints = vec!["gone".into()];
        resp.omitted = vec![crate::recall::Omitted { name: "big".into(), tokens: 9000, reason: "token_budget".into() }];
        resp.audit_token = "audi_01".into();
        resp.warnings = vec!["a\nwarning".into()];
        resp.assembly_sha256 = "cd".repeat(32);
        assert_eq!(recall_response(&resp).expect("json"), serde_json::to_string(&resp).expect("json"));
    }
}
