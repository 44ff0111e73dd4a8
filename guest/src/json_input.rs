//! JSON input errors (§21.9: every failure carries a code, an HTTP status and an
//! actionable message).
//!
//! serde_json reports two different failures alike: input that is not JSON, and JSON of
//! the wrong shape (`{"max_chunks": "3"}`). The second comes with Rust type names
//! (`expected u32`, `expected struct Approvals`) and a line and column the caller may
//! never have written (an MCP tool builds the JSON from its arguments). [`classify`]
//! tells them apart with [`serde_json::Error::classify`]: a syntax or EOF error stays
//! [`Problem::Syntax`] (`invalid_json`, with its position); a data error on well-formed
//! JSON becomes [`Problem::Shape`] (`invalid_request`), a message that names the field
//! (`max_chunks`, `layers[0].section`) and the JSON type it takes ("a whole number",
//! "a string", "an object", "true or false"), without Rust names or positions.

use serde_json::error::Category;

/// What is wrong with a JSON input.
#[derive(Debug)]
pub enum Problem {
    /// Not JSON: the parser's error, with its line and column.
    Syntax(serde_json::Error),
    /// Well-formed JSON of the wrong shape: what to change, in JSON terms.
    Shape(String),
}

/// Reads the same type again from another input, returning its error (see [`describe`]).
pub type Reread<'a> = &'a dyn Fn(&str) -> Option<serde_json::Error>;

/// Sort the error of reading `input` as JSON: syntax, or the shape of `what`. `reread`
/// reads the same type from a probe input, to place errors serde_json positions late.
pub fn classify(what: &str, input: &str, e: serde_json::Error, reread: Reread<'_>) -> Problem {
    let category = e.classify();
    match serde_json::from_str::<serde::de::IgnoredAny>(input).err() {
        // A data error stops the parser early: the syntax error further on is what to fix.
        Some(syntax) if category == Category::Data => Problem::Syntax(syntax),
        Some(_) => Problem::Syntax(e),
        None => match category {
            Category::Data => Problem::Shape(describe(what, input, &e, reread)),
            // Deeper nesting than the typed reader takes is not a field's problem.
            Category::Syntax if message(&e).starts_with("recursion limit") => Problem::Syntax(e),
            // Well-formed JSON the typed reader refused where it peeked (an enum given a number).
            Category::Syntax => {
                let path = locate(input, offset(input, &e).saturating_sub(1), Mode::Peeked);
                // A string escaping half of a UTF-16 pair (`"\ud800"`) is well-formed JSON
                // that no Rust string can hold (serde_json: "lone leading surrogate in hex
                // escape", or "unexpected end of hex escape" when no second half follows).
                let m = message(&e);
                if m.contains("surrogate") || m.contains("hex escape") {
                    Problem::Shape(format!("{} is not valid Unicode text: it escapes half of a UTF-16 surrogate pair (\\uD800 to \\uDFFF alone); send the text as UTF-8, or escape both halves of the pair", subject(what, &path)))
                } else {
                    Problem::Shape(format!("{} does not have an accepted type or value", subject(what, &path)))
                }
            }
            Category::Io | Category::Eof => Problem::Syntax(e),
        },
    }
}

/// The error's message without serde_json's ` at line L column C`.
fn message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).map(str::to_string).unwrap_or(full)
}

/// The byte offset serde_json's line (1-based) and column (bytes into the line) name.
fn offset(input: &str, e: &serde_json::Error) -> usize {
    let line_start = if e.line() <= 1 { 0 } else { input.match_indices('\n').nth(e.line() - 2).map_or(input.len(), |(i, _)| i + 1) };
    (line_start + e.column()).min(input.len())
}

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A path in JSON terms: `layers[0].section`.
fn path_text(path: &[Step]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// What a message is about: a field of `what`, or `what` itself.
fn subject(what: &str, path: &[Step]) -> String {
    if path.is_empty() {
        format!("the {what}")
    } else {
        format!("`{}` in the {what}", path_text(path))
    }
}

/// Where serde_json's position points, by the kind of error.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Just after the value read (or at the start of a container it only peeked at).
    After,
    /// One byte past the start of the value it peeked at.
    Peeked,
    /// Just after the object or array concerned (a missing field, read to its `}`), or
    /// just after one of its keys (an unknown or repeated field).
    Container,
}

/// One open object or array while scanning.
struct Frame {
    object: bool,
    key: String,
    index: usize,
    expect_key: bool,
}

fn steps(stack: &[Frame]) -> Vec<Step> {
    stack.iter().map(|f| if f.object { Step::Key(f.key.clone()) } else { Step::Index(f.index) }).collect()
}

/// The path of the value serde_json's `pos` points at (see [`Mode`]), in well-formed
/// `input`.
fn locate(input: &str, pos: usize, mode: Mode) -> Vec<Step> {
    let inside = |q: Option<usize>| q.and_then(|q| scan(input, Target::Inside(q)));
    let found = match mode {
        // serde_json may have read whitespace after the value before it placed the error.
        Mode::After => scan(input, Target::StartsAt(pos)).or_else(|| inside(last_token_byte(input.as_bytes(), pos))),
        Mode::Peeked => scan(input, Target::StartsAt(pos)).or_else(|| inside(Some(pos))),
        Mode::Container => inside(last_token_byte(input.as_bytes(), pos)),
    };
    found.unwrap_or_default()
}

/// What [`scan`] looks for.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// The value that starts at this byte.
    StartsAt(usize),
    /// The innermost value that holds this byte (a key, `:`, `,` or closing bracket
    /// belongs to its container).
    Inside(usize),
}

/// Scan well-formed `input` token by token for `target`. Iterative: any depth is safe.
fn scan(input: &str, target: Target) -> Option<Vec<Step>> {
    let b = input.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        let is_key = b[i] == b'"' && stack.last().is_some_and(|f| f.object && f.expect_key);
        let value_start = !matches!(b[i], b'}' | b']' | b',' | b':') && !is_key;
        let end = token_end(b, i);
        match target {
            Target::StartsAt(p) if p == i && value_start => return Some(steps(&stack)),
            Target::StartsAt(p) if p < i => return None,
            Target::Inside(q) if q >= i && q < end => return Some(if value_start { steps(&stack) } else { container_path(&stack) }),
            Target::Inside(q) if q < i => return Some(container_path(&stack)),
            _ => {}
        }
        match b[i] {
            b'{' | b'[' => stack.push(Frame { object: b[i] == b'{', key: String::new(), index: 0, expect_key: b[i] == b'{' }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(f) = stack.last_mut() {
                    f.index += 1;
                    f.expect_key = f.object;
                }
            }
            b':' => {
                if let Some(f) = stack.last_mut() {
                    f.expect_key = false;
                }
            }
            _ if is_key => {
                if let Some(f) = stack.last_mut() {
                    f.key = serde_json::from_str::<String>(&input[i..end]).unwrap_or_default();
                }
            }
            _ => {}
        }
        i = end;
    }
}

/// The last byte before `pos` that is not whitespace.
fn last_token_byte(b: &[u8], pos: usize) -> Option<usize> {
    (0..pos.min(b.len())).rev().find(|&j| !b[j].is_ascii_whitespace())
}

/// Where serde_json's "after the value" position really is. A deserializer's own error
/// (a custom message, an untagged form) is placed only when the object or array it sits
/// in has been read to its end: for the last member, after the closing bracket. A probe
/// with a comma after that member stops the reader there: if it fails alike, the member
/// is the value; otherwise (the bracket closes the value itself) `pos` stands.
fn after_value(input: &str, pos: usize, msg: &str, reread: Reread<'_>) -> usize {
    let b = input.as_bytes();
    let Some(close) = last_token_byte(b, pos).filter(|&c| matches!(b[c], b'}' | b']')) else { return pos };
    let Some(last) = last_token_byte(b, close).filter(|&l| !matches!(b[l], b'{' | b'[')) else { return pos };
    let end = last + 1;
    let probe = format!("{},{}", &input[..end], &input[end..]);
    match reread(&probe) {
        Some(e) if e.classify() == Category::Data && message(&e) == msg => offset(&probe, &e).min(end),
        _ => pos,
    }
}

/// The path of the innermost open container.
fn container_path(stack: &[Frame]) -> Vec<Step> {
    steps(&stack[..stack.len().saturating_sub(1)])
}

/// Where the token starting at `i` ends (exclusive).
fn token_end(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'{' | b'[' | b'}' | b']' | b',' | b':' => i + 1,
        b'"' => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(b.len())
        }
        _ => {
            let mut j = i + 1;
            while j < b.len() && !matches!(b[j], b',' | b']' | b'}') && !b[j].is_ascii_whitespace() {
                j += 1;
            }
            j
        }
    }
}

/// The JSON type a serde "expected …" names, in JSON terms; `None` for a Rust type name
/// with no plain meaning. `bounded`: say the range of a whole number.
fn expected_json(exp: &str, bounded: bool) -> Option<String> {
    let whole = |lo: i128, hi: u128| if bounded { format!("a whole number from {lo} to {hi}") } else { "a whole number".into() };
    let plain = match exp {
        "u8" => whole(0, u8::MAX.into()),
        "u16" => whole(0, u16::MAX.into()),
        "u32" => whole(0, u32::MAX.into()),
        "u64" | "usize" => whole(0, u64::MAX.into()),
        "u128" => whole(0, u128::MAX),
        "i8" => whole(i8::MIN.into(), i8::MAX as u128),
        "i16" => whole(i16::MIN.into(), i16::MAX as u128),
        "i32" => whole(i32::MIN.into(), i32::MAX as u128),
        "i64" | "isize" => whole(i64::MIN.into(), i64::MAX as u128),
        "i128" => whole(i128::MIN, i128::MAX as u128),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" | "a borrowed string" | "a character" => "a string".into(),
        "a sequence" | "a byte array" | "a borrowed byte array" => "an array".into(),
        "a map" => "an object".into(),
        "unit" => "null".into(),
        _ if exp.starts_with("struct ") || exp.starts_with("struct variant ") => "an object".into(),
        _ if exp.starts_with("a tuple") || exp.starts_with("an array") || exp.starts_with("tuple ") => "an array".into(),
        _ if exp.starts_with("unit struct ") => "null".into(),
        _ if exp.starts_with("enum ") || exp.contains("::") || !exp.contains(' ') => return None,
        // A deserializer's own wording ("a version such as v1") is already plain.
        _ => exp.into(),
    };
    Some(plain)
}

/// The value serde describes as unexpected (`string "3"`, ``integer `5` ``), in JSON
/// terms: numbers and booleans as themselves, a string as itself when `strings` and it
/// is short, anything else as its JSON type.
fn given(unexp: &str, strings: bool) -> String {
    let scalar = ["integer `", "floating point `", "boolean `"].iter().any(|p| unexp.starts_with(p));
    if scalar {
        return unexp.split('`').nth(1).unwrap_or_default().to_string();
    }
    if let Some(s) = unexp.strip_prefix("string ") {
        return if strings && s.len() <= 40 { format!("the string {s}") } else { "a string".into() };
    }
    match unexp {
        "null" | "unit value" => "null".into(),
        "sequence" => "an array".into(),
        "map" => "an object".into(),
        _ => "a value of another type".into(),
    }
}

/// serde's `` `a`, `b` `` name lists as JSON strings: `"a", "b"`.
fn names(list: &str) -> String {
    list.replace('`', "\"")
}

/// The message for a data error (classified `Data`) on well-formed `input`.
fn describe(what: &str, input: &str, e: &serde_json::Error, reread: Reread<'_>) -> String {
    let msg = message(e);
    let pos = offset(input, e);
    let at = |mode| if mode == Mode::After { locate(input, after_value(input, pos, &msg, reread), mode) } else { locate(input, pos, mode) };
    if let Some(rest) = msg.strip_prefix("invalid type: ") {
        let (unexp, exp) = rest.rsplit_once(", expected ").unwrap_or((rest, ""));
        let s = subject(what, &at(Mode::After));
        return match expected_json(exp, false) {
            Some(want) => format!("{s} must be {want}, not {}", given(unexp, false)),
            None => format!("{s} does not take {}", given(unexp, false)),
        };
    }
    if let Some(rest) = msg.strip_prefix("invalid value: ") {
        let (unexp, exp) = rest.rsplit_once(", expected ").unwrap_or((rest, ""));
        let s = subject(what, &at(Mode::After));
        return match expected_json(exp, true) {
            Some(want) => format!("{s} must be {want}, not {}", given(unexp, true)),
            None => format!("{s} does not take {}", given(unexp, true)),
        };
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let s = subject(what, &at(Mode::After));
        return match rest.rsplit_once("`, expected ") {
            Some((v, list)) => format!("{s} must be {}, not \"{v}\"", names(list)),
            None => format!("{s} takes no value here"),
        };
    }
    if let Some(field) = msg.strip_prefix("missing field `").and_then(|r| r.strip_suffix('`')) {
        let mut path = at(Mode::Container);
        path.push(Step::Key(field.to_string()));
        return format!("{} is required", subject(what, &path));
    }
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let s = subject(what, &at(Mode::Container));
        return match rest.rsplit_once("`, expected ") {
            Some((f, list)) => format!("{s} has an unknown field \"{f}\": expected {}", names(list)),
            None => format!("{s} takes no fields, not \"{}\"", rest.split('`').next().unwrap_or_default()),
        };
    }
    if let Some(field) = msg.strip_prefix("duplicate field `").and_then(|r| r.strip_suffix('`')) {
        return format!("{} gives the field \"{field}\" twice; give each key once", subject(what, &at(Mode::Container)));
    }
    if let Some(rest) = msg.strip_prefix("invalid length ") {
        let (n, exp) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let want = exp.rsplit(' ').next().filter(|w| w.bytes().all(|c| c.is_ascii_digit()) && !w.is_empty());
        let s = subject(what, &at(Mode::Container));
        return match want {
            Some(k) => format!("{s} must have {k} items, not {n}"),
            None => format!("{s} has the wrong number of items ({n})"),
        };
    }
    let s = subject(what, &at(Mode::After));
    if msg.starts_with("data did not match any variant of untagged enum") {
        return format!("{s} is in none of the accepted forms");
    }
    // A deserializer's own message (`budget "task=lots": use SECTION=TOKENS`).
    format!("{s}: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        name: String,
        #[serde(default)]
        on: bool,
        #[serde(default, deserialize_with = "even")]
        n: u32,
    }

    /// A deserializer with its own message (placed late by serde_json).
    fn even<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        let n = u32::deserialize(d)?;
        if n % 2 == 0 {
            Ok(n)
        } else {
            Err(serde::de::Error::custom("use an even number"))
        }
    }

    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Form {
        Map(std::collections::BTreeMap<String, u32>),
        Text(String),
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mode2 {
        Data,
        Persona,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Req {
        #[serde(default)]
        intent: String,
        #[serde(default)]
        max_chunks: Option<u32>,
        #[serde(default)]
        score: Option<f64>,
        #[serde(default)]
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
        #[serde(default)]
        mode: Option<Mode2>,
        #[serde(default)]
        pair: Option<[u8; 2]>,
        #[serde(default, deserialize_with = "even")]
        n: u32,
        #[serde(default)]
        form: Option<Form>,
    }

    fn problem(json: &str) -> Problem {
        classify("test request", json, serde_json::from_str::<Req>(json).unwrap_err(), &|p| serde_json::from_str::<Req>(p).err())
    }

    fn shape(json: &str) -> String {
        match problem(json) {
            Problem::Shape(m) => {
                for rust in ["u32", "u8", "f64", "struct", "Inner", "Mode2", "sequence", " map", "line ", "column"] {
                    assert!(!m.contains(rust), "{json}: {m:?} names {rust:?}");
                }
                m
            }
            Problem::Syntax(e) => panic!("{json}: a shape problem, not syntax: {e}"),
        }
    }

    #[test]
    fn syntax_errors_stay_syntax_with_their_position() {
        for json in ["{\"intent\": ", "{\"intent\" \"x\"}", "not json", "{\"max_chunks\": \"3\", oops}", "[[[[" ] {
            match problem(json) {
                Problem::Syntax(e) => assert!(e.line() >= 1 && e.to_string().contains("column"), "{json}: {e}"),
                Problem::Shape(m) => panic!("{json}: {m}"),
            }
        }
        // a data error before a syntax error further on: the syntax error is what to fix
        let Problem::Syntax(e) = problem("{\"max_chunks\": \"3\", oops}") else { panic!() };
        assert_eq!(e.classify(), Category::Syntax);
        // deeper than the typed reader goes is syntax too
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let e = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        assert!(matches!(classify("test request", &deep, e, &|_| None), Problem::Syntax(_)));
    }

    #[test]
    fn wrong_types_name_the_field_and_the_json_type() {
        assert_eq!(shape(r#"{"intent":"x","max_chunks":"3"}"#), "`max_chunks` in the test request must be a whole number, not a string");
        assert_eq!(shape(r#"{"intent": 5}"#), "`intent` in the test request must be a string, not 5");
        assert_eq!(shape(r#"{"max_chunks": 1.5}"#), "`max_chunks` in the test request must be a whole number, not 1.5");
        assert_eq!(shape(r#"{"max_chunks": {"a": 1}}"#), "`max_chunks` in the test request must be a whole number, not an object");
        assert_eq!(shape(r#"{"score": true}"#), "`score` in the test request must be a number, not true");
        assert_eq!(shape(r#"{"inner": "all"}"#), "`inner` in the test request must be an object, not a string");
        assert_eq!(shape(r#"{"inner": 7}"#), "`inner` in the test request must be an object, not 7");
        assert_eq!(shape(r#"{"list": {"name": "x"}}"#), "`list` in the test request must be an array, not an object");
        assert_eq!(shape("{\n  \"list\": [{\"name\": \"a\"},\n {\"name\": \"b\", \"on\": \"yes\"}]\n}"), "`list[1].on` in the test request must be true or false, not a string");
        assert_eq!(shape(r#"{"list": [{"name": null}]}"#), "`list[0].name` in the test request must be a string, not null");
        assert_eq!(shape(r#""all""#), "the test request must be an object, not a string");
    }

    #[test]
    fn values_out_of_range_unknown_and_missing_fields() {
        assert_eq!(shape(r#"{"max_chunks": -1}"#), "`max_chunks` in the test request must be a whole number from 0 to 4294967295, not -1");
        assert_eq!(shape(r#"{"mode": "loud"}"#), "`mode` in the test request must be \"data\" or \"persona\", not \"loud\"");
        assert_eq!(shape(r#"{"mode": 3}"#), "`mode` in the test request does not have an accepted type or value");
        let lone = "is not valid Unicode text: it escapes half of a UTF-16 surrogate pair (\\uD800 to \\uDFFF alone); send the text as UTF-8, or escape both halves of the pair";
        assert_eq!(shape(r#"{"intent": "a\ud800b"}"#), format!("`intent` in the test request {lone}"));
        assert_eq!(shape(r#"{"list": [{"name": "\udc00"}]}"#), format!("`list[0].name` in the test request {lone}"));
        // a whole pair is one character, and reads
        assert!(serde_json::from_str::<String>(r#""\ud83d\ude00""#).is_ok());
        assert_eq!(shape(r#"{"list": [{"on": true}]}"#), "`list[0].name` in the test request is required");
        assert_eq!(shape(r#"{"inner": {}}"#), "`inner.name` in the test request is required");
        assert!(shape(r#"{"intent": "x", "max_chunk": 3}"#).starts_with("the test request has an unknown field \"max_chunk\": expected one of \"intent\", \"max_chunks\""));
        assert_eq!(shape(r#"{"intent": "x", "intent": "y"}"#), "the test request gives the field \"intent\" twice; give each key once");
        assert_eq!(shape(r#"{"pair": [1]}"#), "`pair` in the test request must have 2 items, not 1");
    }

    #[test]
    fn any_cut_or_changed_byte_is_classified_without_panicking() {
        let good = "{\"intent\": \"d\\u00e9ploy \\\"x\\\"\", \"list\": [{\"name\": \"a\", \"on\": true}], \"pair\": [1, 2], \"mode\": \"data\", \"score\": 0.5}";
        serde_json::from_str::<Req>(good).expect("the sample is valid");
        let mut inputs: Vec<String> = (0..good.len()).map(|n| good[..n].to_string()).collect();
        for (i, _) in good.char_indices() {
            for c in ['"', '1', '{', ']', ',', 'x', ' ', 'n'] {
                let mut s = good.to_string();
                s.replace_range(i..i + 1, &c.to_string());
                inputs.push(s);
            }
        }
        for input in inputs {
            let Err(e) = serde_json::from_str::<Req>(&input) else { continue };
            match classify("test request", &input, e, &|p| serde_json::from_str::<Req>(p).err()) {
                Problem::Shape(m) => assert!(!m.contains("line ") && !m.contains(" at column"), "{input}: {m}"),
                Problem::Syntax(e) => assert!(serde_json::from_str::<serde_json::Value>(&input).is_err(), "{input}: {e}"),
            }
        }
    }

    #[test]
    fn errors_placed_late_still_name_their_field() {
        let field = |json: &str| shape(json).split(" in the test request").next().unwrap_or_default().to_string();
        assert_eq!(shape(r#"{"n": 3}"#), "`n` in the test request: use an even number");
        assert_eq!(field(r#"{"intent": "x", "n": 3 }"#), "`n`");
        assert_eq!(field(r#"{"n": 3 , "intent": "x"}"#), "`n`");
        assert_eq!(field(r#"{"list": [{"name": "a", "n": 3}]}"#), "`list[0].n`");
        assert_eq!(field(r#"{"list": [{"n": 3, "name": "a"}, {"name": "b"}]}"#), "`list[0].n`");
        assert_eq!(field(r#"{"list": [{"name": "b"}, {"name": "a", "n": 5}], "intent": "x"}"#), "`list[1].n`");
        assert_eq!(shape(r#"{"form": {"a": "x"}, "intent": "y"}"#), "`form` in the test request is in none of the accepted forms");
        assert_eq!(field(r#"{"intent": "y", "form": {"a": "x"}}"#), "`form`");
        assert_eq!(field(r#"{"intent": "y", "form": 7}"#), "`form`");
        assert_eq!(field("{\"form\": [1]\n}"), "`form`");
    }

    #[test]
    fn paths_are_found_past_escapes_and_whitespace() {
        assert_eq!(shape("{\"intent\": \"a\\\"b, }\", \"list\" :\n\t[ {\"name\":\"x\"} , { \"name\" : 7 } ]}").split(" must").next(), Some("`list[1].name` in the test request"));
        assert_eq!(path_text(&[Step::Key("a".into()), Step::Index(2), Step::Key("b".into())]), "a[2].b");
    }
}
