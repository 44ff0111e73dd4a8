//! Bulk migration of a markdown instruction file into units (§21.6.3).
//!
//! Splits at H2/H3 headings (or at lines matching a given regex), names each unit in
//! kebab-case from its heading, writes a one-line description and a cl100k token
//! estimate, and drafts manifest entries for an operator to review. It never updates a
//! live manifest (§21.6.3 step 5).

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::manifest::{Entry, LoadTriggers, Manifest};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MigrateOptions {
    pub deployment: String,
    pub agent: String,
    #[serde(default)]
    pub agent_role: String,
    /// Split before every line matching this regex instead of at H2/H3 headings.
    #[serde(default)]
    pub split_regex: Option<String>,
    /// Version of the new facts (default `v1`).
    #[serde(default)]
    pub version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigratedUnit {
    pub name: String,
    pub heading: String,
    pub description: String,
    pub content: String,
    pub token_estimate: usize,
    pub fact_uri: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Migration {
    pub units: Vec<MigratedUnit>,
    /// A draft manifest for review; not published (§21.6.3 step 5).
    pub manifest: Manifest,
    pub warnings: Vec<String>,
}

/// Call `f` with the ASCII letters of a heading's character, so that a heading in French,
/// German, Polish, Czech or Turkish keeps its words in the unit's name: Latin-1 by its
/// table (`é` → `e`, `Ü` → `u`, `Ø` → `o`, `Þ` → `t`, as before; `ß` → `ss`), any other
/// character by its canonical decomposition (NFD) without its combining marks (`İ` → `i`,
/// `ą` → `a`, `ř` → `r`, `ě` → `e`), and the Latin letters that have none by [`LETTERS`]
/// (`Ł` → `l`, `đ` → `d`, `ı` → `i`, `œ` → `oe`). Anything else comes back as it is (a
/// dash in the name).
fn ascii_fold(c: char, mut f: impl FnMut(char)) {
    if c < '\u{100}' || LETTERS.binary_search_by_key(&c, |&(x, _)| x).is_ok() {
        fold_letter(c, &mut f);
    } else {
        unicode_normalization::char::decompose_canonical(c, |d| {
            if !unicode_normalization::char::is_combining_mark(d) {
                fold_letter(d, &mut f);
            }
        });
    }
}

/// [`ascii_fold`] of one character without a decomposition.
fn fold_letter(c: char, f: &mut impl FnMut(char)) {
    const UPPER: &[u8; 32] = b"aaaaaaaceeeeiiiidnooooo_ouuuuyts"; // U+00C0..=U+00DF
    const LOWER: &[u8; 32] = b"aaaaaaaceeeeiiiidnooooo_ouuuuyty"; // U+00E0..=U+00FF
    let folded = match c as u32 {
        0xDF => return "ss".chars().for_each(f),
        i @ 0xC0..=0xDF => UPPER.get(i as usize - 0xC0),
        i @ 0xE0..=0xFF => LOWER.get(i as usize - 0xE0),
        _ => None,
    };
    match (folded, LETTERS.binary_search_by_key(&c, |&(x, _)| x)) {
        (Some(&b), _) => f(b as char),
        (None, Ok(k)) => LETTERS[k].1.chars().for_each(f),
        (None, Err(_)) => f(c),
    }
}

/// Latin letters without a canonical decomposition, and their ASCII letters ([`ascii_fold`]):
/// Latin Extended-A and -B letters with a stroke, bar, hook or middle dot, the dotless `ı`,
/// ligatures and digraphs, and the capital `ẞ`. Sorted (checked by a test).
const LETTERS: &[(char, &str)] = &[
    ('\u{110}', "d"), ('\u{111}', "d"), ('\u{126}', "h"), ('\u{127}', "h"), ('\u{131}', "i"), ('\u{132}', "ij"), ('\u{133}', "ij"),
    ('\u{138}', "k"), ('\u{13f}', "l"), ('\u{140}', "l"), ('\u{141}', "l"), ('\u{142}', "l"), ('\u{149}', "n"), ('\u{14a}', "n"),
    ('\u{14b}', "n"), ('\u{152}', "oe"), ('\u{153}', "oe"), ('\u{166}', "t"), ('\u{167}', "t"), ('\u{17f}', "s"), ('\u{180}', "b"),
    ('\u{181}', "b"), ('\u{187}', "c"), ('\u{188}', "c"), ('\u{189}', "d"), ('\u{18a}', "d"), ('\u{191}', "f"), ('\u{192}', "f"),
    ('\u{197}', "i"), ('\u{19a}', "l"), ('\u{1b5}', "z"), ('\u{1b6}', "z"), ('\u{1c4}', "dz"), ('\u{1c5}', "dz"), ('\u{1c6}', "dz"),
    ('\u{1c7}', "lj"), ('\u{1c8}', "lj"), ('\u{1c9}', "lj"), ('\u{1ca}', "nj"), ('\u{1cb}', "nj"), ('\u{1cc}', "nj"), ('\u{1e4}', "g"),
    ('\u{1e5}', "g"), ('\u{1f1}', "dz"), ('\u{1f2}', "dz"), ('\u{1f3}', "dz"), ('\u{221}', "d"), ('\u{224}', "z"), ('\u{225}', "z"),
    ('\u{234}', "l"), ('\u{235}', "n"), ('\u{236}', "t"), ('\u{237}', "j"), ('\u{23a}', "a"), ('\u{23b}', "c"), ('\u{23c}', "c"),
    ('\u{23d}', "l"), ('\u{23e}', "t"), ('\u{1e9e}', "ss"),
];

/// The most characters a unit's name takes from its heading.
const NAME_CHARS: usize = 48;

/// `s` without its leading blank lines and its trailing whitespace: the first line keeps
/// its indentation (four spaces make an indented code block).
fn lines_of(s: &str) -> &str {
    let blank: usize = s.split_inclusive('\n').take_while(|l| l.trim().is_empty()).map(str::len).sum();
    s[blank..].trim_end()
}

/// kebab-case of a heading: `## 3. Checkout & Context!` → `checkout-context`,
/// `## Sécurité` → `securite`.
pub fn kebab(s: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in without_step_number(s).chars() {
        ascii_fold(c, |c| {
            if c.is_ascii_alphanumeric() {
                if dash && !out.is_empty() {
                    out.push('-');
                }
                out.push(c.to_ascii_lowercase());
                dash = false;
            } else {
                dash = true;
            }
        });
    }
    let mut cut: String = out.chars().take(NAME_CHARS).collect();
    while cut.ends_with('-') {
        cut.pop();
    }
    cut
}

/// `s` without a leading step or section number ("3. Checkout", "2) Build", "4: Ship",
/// "1.2 Install"), which carries no meaning in a name. A number that belongs to the
/// words stays: "3D printing", "2FA setup", "404 pages". A heading that is only a number
/// is kept whole.
fn without_step_number(s: &str) -> &str {
    // a section sign marks what follows as a section number (`§21.1 Boot Stub`)
    let (t, section) = match s.trim_start().strip_prefix('§') {
        Some(rest) => (rest.trim_start_matches('§').trim_start(), true),
        None => (s.trim_start(), false),
    };
    if !t.starts_with(|c: char| c.is_ascii_digit()) {
        return s;
    }
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, rest) = t.split_at(end);
    let after = rest.strip_prefix([')', ':']).unwrap_or(rest);
    let marked = section || number.contains('.') || after.len() != rest.len();
    let words = after.trim_start();
    if marked && after.starts_with(char::is_whitespace) && !words.is_empty() {
        words
    } else {
        s
    }
}

/// The CommonMark extensions migrate reads: tables (not prose) and task list markers (`[ ]`
/// is not a description's text). Not heading attributes: pulldown-cmark would take any
/// trailing `{…}` for them, and `## Configure {service_name}` is a template's heading, so
/// only an `{#id}` or `{.class}` block is left out of a heading's text ([`without_attributes`]).
const MARKDOWN: Options = Options::ENABLE_TABLES.union(Options::ENABLE_TASKLISTS);

/// `text` without a trailing heading attribute block that names an id or a class
/// (`Recall {#section-21-3}` → `Recall`); other braces are the heading's own text.
fn without_attributes(text: &str) -> &str {
    let t = text.trim_end();
    match t.rfind('{') {
        Some(i) if t.ends_with('}') && t[i + 1..].starts_with(['#', '.']) && !t[i + 1..t.len() - 1].contains(['{', '}']) => t[..i].trim_end(),
        _ => text,
    }
}

/// A heading at the top level of the document (not inside a list or a block quote), as
/// pulldown-cmark reads it (CommonMark: ATX and setext alike, never inside a code block
/// or an HTML block).
#[derive(Debug)]
struct Heading {
    /// where the heading's first line starts
    line_start: usize,
    /// where the heading ends (after a setext heading's underline)
    end: usize,
    level: u8,
    /// its plain text: emphasis and code marks dropped, a link kept as its text
    text: String,
}

/// The document's top-level headings, and the byte ranges of its code and HTML blocks
/// (at any depth), where no line is a split.
fn outline(body: &str) -> (Vec<Heading>, Vec<Range<usize>>) {
    let mut headings = Vec::new();
    let mut literal = Vec::new();
    let mut depth = 0usize;
    let mut open: Option<Heading> = None;
    for (event, range) in Parser::new_ext(body, MARKDOWN).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                match tag {
                    Tag::Heading { level, .. } if depth == 0 => {
                        let line_start = body[..range.start].rfind('\n').map_or(0, |p| p + 1);
                        open = Some(Heading { line_start, end: range.end, level: level as u8, text: String::new() });
                    }
                    Tag::CodeBlock(_) | Tag::HtmlBlock => literal.push(range),
                    _ => {}
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some(mut h) = open.take() {
                        h.text = without_attributes(&h.text.split_whitespace().collect::<Vec<_>>().join(" ")).to_string();
                        headings.push(h);
                    }
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = open.as_mut() {
                    h.text.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(h) = open.as_mut() {
                    h.text.push(' ');
                }
            }
            _ => {}
        }
    }
    (headings, literal)
}

/// Plain text of a piece of markdown (one line: a split line, a heading): emphasis, code
/// and heading marks dropped, a link or image kept as its text (`[guide](https://…)` →
/// `guide`), whitespace collapsed.
fn plain(md: &str) -> String {
    let mut out = String::new();
    for event in Parser::new_ext(md, MARKDOWN) {
        match event {
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            // a break or a block's end parts words; the end of emphasis or a link does not
            // (`**Step 1**: Build` is `Step 1: Build`, as the same text in a heading)
            Event::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Superscript | TagEnd::Subscript | TagEnd::Link | TagEnd::Image) => {}
            Event::SoftBreak | Event::HardBreak | Event::End(_) => out.push(' '),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Stand-ins for `.`, `!` and `?` inside a code span or a link's text in [`first_prose`]'s
/// text (private-use characters), so that no sentence ends there; [`restore_marks`] puts
/// them back.
const QUOTED_MARKS: [(char, char); 8] = [('.', '\u{E000}'), ('!', '\u{E001}'), ('?', '\u{E002}'), ('。', '\u{E003}'), ('！', '\u{E004}'), ('？', '\u{E005}'), ('．', '\u{E006}'), ('｡', '\u{E007}')];

fn quote_marks(t: &str) -> String {
    t.chars().map(|c| QUOTED_MARKS.iter().find(|m| m.0 == c).map_or(c, |m| m.1)).collect()
}

fn restore_marks(t: &str) -> String {
    t.chars().map(|c| QUOTED_MARKS.iter().find(|m| m.1 == c).map_or(c, |m| m.0)).collect()
}

/// The first block of prose in `body` as plain text: its first paragraph (its lines
/// joined, as a hard-wrapped paragraph is one), or the text of its first list item.
/// Headings, code, HTML and tables are not prose. Sentence marks inside a code span or a
/// link's text come as [`QUOTED_MARKS`].
fn first_prose(body: &str) -> String {
    let mut out = String::new();
    // how deep inside a block that is not prose (a heading, code, a table) we are
    let mut skipping = 0usize;
    let mut in_prose = false;
    let mut in_link = 0usize;
    for event in Parser::new_ext(body, MARKDOWN) {
        match event {
            Event::Start(Tag::Heading { .. } | Tag::CodeBlock(_) | Tag::HtmlBlock | Tag::Table(_)) => skipping += 1,
            Event::End(TagEnd::Heading(_) | TagEnd::CodeBlock | TagEnd::HtmlBlock | TagEnd::Table) => skipping = skipping.saturating_sub(1),
            _ if skipping > 0 => {}
            // a paragraph, or a tight list item's own text (its nested list is another block)
            Event::Start(Tag::Paragraph | Tag::Item) if out.trim().is_empty() => {
                out.clear();
                in_prose = true;
            }
            Event::Start(Tag::List(_) | Tag::Item | Tag::BlockQuote(_)) | Event::End(TagEnd::Paragraph | TagEnd::Item) if in_prose => {
                if !out.trim().is_empty() {
                    break;
                }
                in_prose = false;
            }
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) => in_link += 1,
            Event::End(TagEnd::Link | TagEnd::Image) => in_link = in_link.saturating_sub(1),
            Event::Code(t) if in_prose => out.push_str(&quote_marks(&t)),
            Event::Text(t) if in_prose && in_link > 0 => out.push_str(&quote_marks(&t)),
            Event::Text(t) if in_prose => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak if in_prose => out.push(' '),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first sentence of `prose`: up to the first `.`, `!` or `?` followed by a space or
/// the end, but not the dot of an abbreviation ("e.g.", "i.e.", "etc.", "vs.") or inside
/// a number ("1.2") or an address.
fn first_sentence(prose: &str) -> &str {
    const ABBREVIATIONS: &[&str] = &["e.g", "i.e", "etc", "vs", "cf", "incl", "approx", "eg", "ie", "mr", "ms", "dr", "no", "fig"];
    let b = prose.as_bytes();
    for (i, c) in prose.char_indices() {
        // a CJK sentence ends at its full stop, exclamation or question mark (ideographic or
        // full-width), with no space after it
        if matches!(c, '\u{3002}' | '\u{FF61}' | '\u{FF0E}' | '\u{FF01}' | '\u{FF1F}') {
            return prose[..i + c.len_utf8()].trim();
        }
        if !matches!(c, '.' | '!' | '?') || b.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
            continue;
        }
        if c == '.' {
            let word = prose[..i].rsplit(char::is_whitespace).next().unwrap_or("").trim_start_matches(['(', '"', '\'']);
            if ABBREVIATIONS.contains(&word.to_ascii_lowercase().as_str()) || (word.len() == 1 && word.chars().all(|c| c.is_ascii_uppercase())) {
                continue;
            }
        }
        return prose[..=i].trim();
    }
    prose.trim()
}

/// One line ≤120 chars: the first sentence of the section's first paragraph (or list
/// item), else its heading.
fn describe(heading: &str, body: &str) -> String {
    let prose = first_prose(body);
    let first = restore_marks(first_sentence(&prose));
    // (`heading` is plain text already)
    let mut d = if first.len() >= 12 { first } else { heading.trim().to_string() };
    if d.is_empty() {
        d = "Migrated instruction section.".into();
    }
    if d.chars().count() > 120 {
        let cut: String = d.chars().take(117).collect();
        let cut = match cut.rfind(' ') {
            Some(p) if p > 60 => cut[..p].to_string(),
            _ => cut,
        };
        d = format!("{}...", cut.trim_end_matches([',', ';', ':', ' ']));
    }
    d
}

/// The text of a migrated unit's file: its content and a final line break. Hosts write
/// this, and a unit's `token_estimate` is its exact cl100k count (the evaluation set's
/// meaning: "the exact cl100k token count of the unit file").
pub fn unit_file(content: &str) -> String {
    format!("{content}\n")
}

/// Split `markdown` into units and a draft manifest.
pub fn migrate(markdown: &str, opts: &MigrateOptions) -> Result<Migration, EngineError> {
    let version = opts.version.clone().unwrap_or_else(|| "v1".into());
    crate::uri::InstructionUri::new(&opts.deployment, &opts.agent, "unit", &version).map_err(|e| EngineError::Migrate(e.to_string()))?;
    let re = match &opts.split_regex {
        Some(r) => Some(regex_lite::Regex::new(r).map_err(|e| EngineError::Migrate(format!("split regex {r:?} does not compile: {e}")))?),
        None => None,
    };

    // YAML front matter is the file's metadata, not an instruction: left out.
    let mut warnings = Vec::new();
    // CommonMark's line endings: CRLF, and a lone CR, are line feeds
    let normalized;
    let markdown = if markdown.contains('\r') {
        normalized = markdown.replace("\r\n", "\n").replace('\r', "\n");
        normalized.as_str()
    } else {
        markdown
    };
    let body = match front_matter_end(markdown) {
        Some(end) => {
            warnings.push("the YAML front matter at the top of the file was left out of the units".to_string());
            &markdown[end..]
        }
        None => markdown,
    };

    let (headings, literal) = outline(body);
    // The document's title: its first top-level H1 before any split.
    let mut title: Option<&Heading> = None;
    // Sections: (heading, where it starts, where its heading ends); the text before the
    // first split is the preamble, and each section ends where the next starts.
    let mut sections: Vec<(String, usize, usize)> = vec![(String::new(), 0, 0)];
    match &re {
        None => {
            for h in &headings {
                // H2 and H3 split; so does an H1 after the title (a new part of the
                // document, never the tail of the unit before it)
                let split = match h.level {
                    2 | 3 => true,
                    1 if sections.len() == 1 && title.is_none() => {
                        title = Some(h);
                        false
                    }
                    1 => true,
                    _ => false,
                };
                if split {
                    sections.push((h.text.clone(), h.line_start, h.end));
                }
            }
        }
        Some(re) => {
            let mut at = 0;
            let (mut next_heading, mut next_literal) = (headings.iter().peekable(), literal.iter().peekable());
            for line in body.split_inclusive('\n') {
                let (start, text) = (at, line.trim_end_matches('\n'));
                at += line.len();
                let lead = text.len() - text.trim_start().len();
                while next_literal.peek().is_some_and(|r| r.end <= start + lead) {
                    next_literal.next();
                }
                while next_heading.peek().is_some_and(|h| h.line_start < start) {
                    next_heading.next();
                }
                let heading = next_heading.peek().filter(|h| h.line_start == start).copied();
                if title.is_none() && sections.len() == 1 {
                    title = heading.filter(|h| h.level == 1);
                }
                let in_literal = next_literal.peek().is_some_and(|r| r.start < start + text.len().max(lead + 1));
                if !in_literal && re.is_match(text) {
                    sections.push((heading.map_or_else(|| plain(text), |h| h.text.clone()), start, start + text.len()));
                }
            }
        }
    }
    if let (Some(r), 1) = (&opts.split_regex, sections.len()) {
        warnings.push(format!("the split regex {r:?} matched no line (outside code and HTML blocks), so the file is one unit: check the pattern (it is matched against each line, without its line ending)"));
    }
    let ends: Vec<usize> = sections.iter().skip(1).map(|s| s.1).chain([body.len()]).collect();
    let title_text = title.map(|h| h.text.clone()).unwrap_or_default();
    // a preamble holding only the document's title (its H1s) and thematic breaks is not a unit
    let preamble_is_title = {
        let mut at = 0;
        let mut rest = String::new();
        for h in headings.iter().filter(|h| h.level == 1 && h.end <= ends[0]) {
            rest.push_str(&body[at.min(h.line_start)..h.line_start]);
            at = h.end;
        }
        rest.push_str(&body[at.min(ends[0])..ends[0]]);
        // (thematic breaks around the title are not text either)
        rest.lines().all(|l| {
            let t: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            t.is_empty() || (t.len() >= 3 && [b'-', b'*', b'_'].iter().any(|&m| t.bytes().all(|c| c == m)))
        })
    };

    let mut units: Vec<MigratedUnit> = Vec::new();
    let count = sections.len();
    // a section holding only its heading (an H2 right before its first H3), kept at the
    // top of the unit that follows, so that no unit is a bare heading and no text is lost:
    // its headings, and where the first of them starts (that unit's text then starts there)
    let mut carried: Option<(String, usize)> = None;
    // each name given, and the heading that has it
    let mut taken: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut suffixes: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for (i, ((heading, start, head_end), end)) in sections.into_iter().zip(ends).enumerate() {
        if body[start..end].trim().is_empty() {
            continue;
        }
        if i > 0 && i + 1 < count && body[head_end.min(end)..end].trim().is_empty() {
            let (headings, _) = carried.get_or_insert_with(|| (String::new(), start));
            if !headings.is_empty() {
                headings.push_str(", ");
            }
            headings.push_str(&heading);
            continue;
        }
        let above = carried.take();
        // the text exactly as written, from the first carried heading on
        let content = lines_of(&body[above.as_ref().map_or(start, |a| a.1)..end]).to_string();
        if i == 0 && preamble_is_title {
            continue;
        }
        let head = if i == 0 { if title_text.is_empty() { "overview".to_string() } else { title_text.clone() } } else { heading.clone() };
        let mut name = kebab(&head);
        if name.is_empty() || name == "manifest" {
            name = format!("section-{}", i);
            let why = if head.trim().is_empty() { "is empty" } else if kebab(&head).is_empty() { "has no letters or digits a name can keep" } else { "would name the unit `manifest`, which URIs reserve (§21.4.1)" };
            warnings.push(format!("heading {head:?} {why}; unit named {name:?}"));
        }
        let base = name.clone();
        // the next suffix to try for each name, so that a heading repeated n times costs
        // n lookups, not n² comparisons; the suffix fits in the name's 48 characters
        let n = suffixes.entry(base.clone()).or_insert(2);
        while taken.contains_key(&name) {
            let suffix = format!("-{n}");
            name = format!("{}{suffix}", base[..base.len().min(NAME_CHARS.saturating_sub(suffix.len()))].trim_end_matches('-'));
            *n += 1;
        }
        if name != base {
            let other = taken.get(&base).cloned().unwrap_or_default();
            warnings.push(if other == head {
                format!("heading {head:?} repeats; unit named {name:?}")
            } else {
                format!("heading {head:?} gives the name {base:?}, which heading {other:?} has already; unit named {name:?}")
            });
        }
        taken.insert(name.clone(), head.clone());
        if let Some((headings, _)) = &above {
            warnings.push(format!("heading {headings:?} has no text of its own; it was kept at the top of unit {name:?}"));
        }
        // what a publish's admission lint would refuse in the unit's text, said now
        let (refused, _) = crate::lint::lint_unit(&crate::lint::UnitText { name: name.clone(), content: content.clone(), interpret_as: "instruction".into() });
        for f in refused {
            warnings.push(format!("unit {name:?} would be refused by a publish (unit_admission_rejected, {}): {}", f.code, f.message));
        }
        let tokens = crate::tokens::count(&unit_file(&content));
        if tokens > 600 {
            warnings.push(format!("unit {name:?} is {tokens} tokens; consider splitting it further"));
        }
        units.push(MigratedUnit {
            fact_uri: format!("instruction:{}/{}/{}/{}", opts.deployment, opts.agent, name, version),
            description: describe(&head, &content),
            heading: head,
            token_estimate: tokens,
            content,
            name,
        });
    }
    if units.is_empty() {
        return Err(EngineError::Migrate("no sections found: the file is empty or has no H2/H3 headings matching the split rule".into()));
    }
    let entries = units
        .iter()
        .map(|u| Entry {
            name: u.name.clone(),
            description: u.description.clone(),
            // (an empty heading gives no intent: the draft's warning says so)
            load_triggers: LoadTriggers { intents: Some(u.heading.to_lowercase()).filter(|i| !i.trim().is_empty()).into_iter().collect(), keywords: vec![], task_types: vec![] },
            fact_uri: Some(u.fact_uri.clone()),
            token_estimate: Some(u.token_estimate as u64),
            ..Default::default()
        })
        .collect();
    let manifest = Manifest {
        agent_id: opts.agent.clone(),
        deployment: opts.deployment.clone(),
        agent_role: opts.agent_role.clone(),
        manifest_version: "v1".into(),
        entries,
        published_at: None,
        heartbeat_contract: None,
    };
    let draft = crate::manifest::validate(&crate::manifest::canonical_json(&manifest), &Default::default());
    if draft.token_count > crate::manifest::MANIFEST_TOKEN_CAP {
        warnings.push(format!(
            "the draft manifest is {}{} tokens, over the {}-token cap (§21.2.1): merge sections (or split with a coarser --split-regex) or shorten descriptions before publishing",
            if draft.token_count_at_least { "at least " } else { "" },
            draft.token_count,
            crate::manifest::MANIFEST_TOKEN_CAP
        ));
    }
    Ok(Migration { units, manifest, warnings })
}

/// Where a leading YAML front matter block (`---` … `---` or `...`) ends, if the file
/// starts with one: its first line, right after the opening `---`, a YAML mapping's key
/// (`key: value`), and each line after it a key, an indented or `- ` continuation, a `#`
/// comment or blank.
/// Anything else after a leading `---` (a blank line, prose, a heading) is markdown: a
/// thematic break, or a setext heading's underline, whose text is never left out.
fn front_matter_end(markdown: &str) -> Option<usize> {
    let mut lines = markdown.split_inclusive('\n');
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let yaml_key = |l: &str| {
        let key = l.split_once(':').map_or("", |(k, _)| k.trim_end());
        let rest = &l[key.len()..];
        !key.is_empty() && !key.contains(char::is_whitespace) && (rest == ":" || rest.starts_with(": ") || rest.starts_with(":\t"))
    };
    let mut at = markdown.find('\n')? + 1;
    for (i, line) in lines.enumerate() {
        at += line.len();
        let l = line.trim_end();
        if matches!(l, "---" | "...") {
            return (i > 0).then_some(at);
        }
        // the block opens with a key (a `# …` line there would be a markdown heading)
        let yaml = yaml_key(l) || (i > 0 && (l.starts_with('#') || l.starts_with([' ', '\t', '-']) || l.is_empty()));
        if !yaml {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Agent Guide\n\nIntro line.\n\n## 1. Checkout & Context\n\nAlways check out the issue before you work on it.\n\n```\n## not a heading\n```\n\n### Status updates\n\nPost a status comment when you stop.\n\n## Checkout & Context\n\nDuplicate heading.\n";

    fn opts() -> MigrateOptions {
        MigrateOptions { deployment: "acme".into(), agent: "eng".into(), ..Default::default() }
    }

    #[test]
    fn names_keep_numbers_that_belong_to_their_words() {
        for (heading, name) in [("3. Checkout & Context", "checkout-context"), ("2) Build", "build"), ("4: Ship it", "ship-it"), ("1.2 Install", "install"),
            ("3D printing", "3d-printing"), ("2FA setup", "2fa-setup"), ("1Password vault", "1password-vault"), ("404 pages", "404-pages"), ("3.", "3")] {
            assert_eq!(kebab(heading), name, "{heading:?}");
        }
    }

    #[test]
    fn descriptions_are_whole_first_sentences() {
        for (body, description) in [
            ("## Pin\n\nAlways pin version 1.2 of the tool. Then build.", "Always pin version 1.2 of the tool."),
            ("## Eg\n\nUse a short name, e.g. `deploy`, for the job. More.", "Use a short name, e.g. deploy, for the job."),
            ("## Link\n\nSee the [guide](https://example.com/a.b) before you start. More.", "See the guide before you start."),
            ("## Wrap\n\nAlways check out the issue before you\nwork on it, and say so.\n\nNext paragraph.", "Always check out the issue before you work on it, and say so."),
            ("## Names\n\nName tables in snake_case_names only.", "Name tables in snake_case_names only."),
            ("## Code\n\n```\nnot prose at all here\n```\n\n- First item of the list here.\n- Second item.", "First item of the list here."),
        ] {
            assert_eq!(describe("Heading", body), description, "{body:?}");
        }
    }

    #[test]
    fn a_heading_without_text_heads_the_unit_after_it() {
        let doc = "## Priority Framework\n\n### P1 outages\n\nPage the on-call engineer at once.\n\n### P2 bugs\n\nFile a ticket.\n";
        let m = migrate(doc, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["p1-outages", "p2-bugs"]);
        assert!(m.units[0].content.starts_with("## Priority Framework\n\n### P1 outages\n"), "{}", m.units[0].content);
        assert_eq!(m.units[0].description, "Page the on-call engineer at once.");
        assert!(m.warnings.iter().any(|w| w.contains("Priority Framework") && w.contains("p1-outages")), "{:?}", m.warnings);
        // every unit's estimate is the exact count of the file written for it
        assert!(m.units.iter().all(|u| u.token_estimate == crate::tokens::count(&unit_file(&u.content))));
        // a bare heading at the end has nothing to head: it stays a unit
        let m = migrate("## A\n\nText of a.\n\n## B\n", &opts()).unwrap();
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn repeated_headings_take_numbered_names_in_linear_time() {
        let doc = "## same\n\ntext\n\n".repeat(3000) + "## same-2\n\nlast\n";
        let m = migrate(&doc, &opts()).unwrap();
        assert_eq!(m.units.len(), 3001);
        assert_eq!((m.units[0].name.as_str(), m.units[1].name.as_str(), m.units[2999].name.as_str()), ("same", "same-2", "same-3000"));
        // a heading whose own name a repeat took gets the next free one
        assert_eq!(m.units[3000].name, "same-2-2");
        let names: std::collections::BTreeSet<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names.len(), 3001, "unique");
    }

    #[test]
    fn a_blank_line_inside_a_fence_keeps_it_open() {
        let doc = "## Report template\n\nFill in:\n\n```markdown\n## Summary\n\n## Key details\n\n~~~\n```\n\n## Deploy\n\nShip it.\n";
        let m = migrate(doc, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["report-template", "deploy"]);
        assert!(m.units[0].content.contains("## Key details\n\n~~~\n```"), "{}", m.units[0].content);
        assert_eq!(m.units[1].content.trim_end(), "## Deploy\n\nShip it.");
    }

    #[test]
    fn splits_at_h2_h3_outside_fences() {
        let m = migrate(DOC, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, vec!["agent-guide", "checkout-context", "status-updates", "checkout-context-2"]);
        assert!(m.units[1].content.contains("## not a heading"), "fenced heading stays in its unit");
        assert_eq!(m.units[1].description, "Always check out the issue before you work on it.");
        assert_eq!(m.units[1].fact_uri, "instruction:acme/eng/checkout-context/v1");
        assert!(m.units.iter().all(|u| u.token_estimate > 0));
        assert_eq!(m.manifest.entries.len(), 4);
        assert_eq!(m.warnings.len(), 1);
        // The draft validates as a manifest.
        let json = serde_json::to_string(&m.manifest).unwrap();
        let r = crate::manifest::validate(&json, &Default::default());
        assert!(r.ok, "{:?}", r.errors);
    }

    #[test]
    fn fences_of_either_kind_front_matter_and_indented_headings() {
        // `## ` inside a ~~~ fence (or a longer ``` fence holding a shorter one) is code,
        // not a heading; front matter is not a unit; a heading indented up to three
        // spaces is one (CommonMark).
        let md = "---\ntitle: Guide\nowner: ops\n---\n## Real\n\nText here for the unit.\n\n~~~\n## tilde fence heading\n~~~\n\n````md\n```\n## inner\n```\n````\n\n   ## Indented\n\nMore text.\n\n    ## code block, not a heading\n";
        let m = migrate(md, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, vec!["real", "indented"], "{m:#?}");
        assert!(m.units[0].content.contains("~~~\n## tilde fence heading\n~~~"));
        assert!(m.units[0].content.contains("## inner\n```\n````"));
        assert!(m.units[1].content.contains("## code block"));
        assert!(m.units.iter().all(|u| !u.content.contains("owner: ops")));
        assert!(m.warnings.iter().any(|w| w.contains("front matter")), "{:?}", m.warnings);
        // A document that only looks like it starts with front matter keeps its text.
        let m = migrate("---\n## A\n\nbody\n", &opts()).unwrap();
        assert!(m.units.iter().any(|u| u.name == "a" && u.content.contains("body")), "{m:#?}");
        assert!(m.warnings.is_empty());
    }

    #[test]
    fn setext_h2_headings_split_but_thematic_breaks_and_lists_do_not() {
        let md = "Intro paragraph.\n\nDeploying\n---------\n\nRun the deploy script first.\n\n---\n\nStill deploying.\n\n- a list item\n---\n\nTesting\n  ---\n\nRun the tests before you merge.\n\n```\nNot a heading\n---\n```\n";
        let m = migrate(md, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, vec!["overview", "deploying", "testing"], "{m:#?}");
        assert!(m.units[1].content.starts_with("Deploying\n---------") && m.units[1].content.contains("Still deploying."));
        assert_eq!(m.units[1].description, "Run the deploy script first.");
        assert!(m.units[2].content.contains("Not a heading\n---"));
    }

    #[test]
    fn commonmark_blocks_decide_what_a_heading_is() {
        // `##` inside an HTML comment is not a heading; a setext heading may run over
        // several lines; a heading inside a block quote or a list item is no boundary; a
        // mid-document H1 starts a new part, never the tail of the unit before it (and,
        // bare, it heads the unit after it).
        let md = "# Guide\n\nIntro text of the guide.\n\n## Deploy\n\nShip with care.\n\n<!--\n## commented out\n-->\n\n> ## quoted heading\n\n- ## listed heading\n\nA setext heading\nover two lines\n---\n\nIts own text comes here.\n\n# Part two\n\n## Rollback\n\nRevert the release.\n";
        let m = migrate(md, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["guide", "deploy", "a-setext-heading-over-two-lines", "rollback"], "{m:#?}");
        assert!(m.units[1].content.contains("## commented out\n-->") && m.units[1].content.contains("> ## quoted heading") && m.units[1].content.contains("- ## listed heading"));
        assert_eq!(m.units[2].heading, "A setext heading over two lines");
        assert_eq!(m.units[2].description, "Its own text comes here.");
        assert!(!m.units[2].content.contains("Part two"), "{}", m.units[2].content);
        assert!(m.units[3].content.starts_with("# Part two\n\n## Rollback"), "{}", m.units[3].content);
        assert!(m.warnings.iter().any(|w| w.contains("Part two") && w.contains("rollback")), "{:?}", m.warnings);
        // a split regex never matches inside a code block or an HTML block
        let md = "STEP one\nfirst\n\n```\nSTEP fenced\n```\n\n<!--\nSTEP commented\n-->\n\nSTEP two\nsecond\n";
        let m = migrate(md, &MigrateOptions { split_regex: Some("^STEP ".into()), ..opts() }).unwrap();
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["step-one", "step-two"], "{m:#?}");
        // line endings do not change the units
        let crlf = migrate(&DOC.replace('\n', "\r\n"), &opts()).unwrap();
        assert_eq!(crlf, migrate(DOC, &opts()).unwrap());
    }

    #[test]
    fn headings_and_descriptions_are_plain_text() {
        let m = migrate("## **Bold** `code` and [a link](https://example.com)\n\n> Quoted advice that is long enough.\n", &opts()).unwrap();
        assert_eq!(m.units[0].heading, "Bold code and a link");
        assert_eq!(m.units[0].name, "bold-code-and-a-link");
        assert_eq!(m.manifest.entries[0].load_triggers.intents, ["bold code and a link"]);
        assert_eq!(m.units[0].description, "Quoted advice that is long enough.");
        // a table is not prose; a loose list item's paragraph is
        let d = describe("Heading", "## H\n\n| a | b |\n|---|---|\n| table cell text | x |\n\n1. First loose item of the list.\n\n2. Second.\n");
        assert_eq!(d, "First loose item of the list.");
        // a task list's box and a heading's `{#id}` are markup; a numbered heading whose
        // section has no prose is its own description, number and all
        let m = migrate("## Close day 1 {#day-1}\n\n- [ ] Confirm the sub-ledgers are closed.\n\n### 6. Escalate\n\n```\ncode only\n```\n", &opts()).unwrap();
        assert_eq!((m.units[0].heading.as_str(), m.units[0].name.as_str()), ("Close day 1", "close-day-1"));
        assert_eq!(m.units[0].description, "Confirm the sub-ledgers are closed.");
        assert_eq!(m.units[1].description, "6. Escalate");
    }

    #[test]
    fn braces_in_a_heading_are_its_text_unless_they_name_an_id() {
        let m = migrate("## Configure {service_name}\n\nSet the service name first.\n\n## {placeholder}\n\nFill in the placeholder.\n\n## Recall {#section-21-3}\n\nRecall by intent, always.\n", &opts()).unwrap();
        let got: Vec<(&str, &str)> = m.units.iter().map(|u| (u.name.as_str(), u.heading.as_str())).collect();
        assert_eq!(got, [("configure-service-name", "Configure {service_name}"), ("placeholder", "{placeholder}"), ("recall", "Recall")]);
        assert_eq!(m.manifest.entries[0].load_triggers.intents, ["configure {service_name}"]);
    }

    #[test]
    fn no_sentence_ends_inside_inline_code_or_a_links_text() {
        for (body, description) in [
            ("## R\n\nReply with `LGTM. Ship it` when the change is ready. Then wait.", "Reply with LGTM. Ship it when the change is ready."),
            ("## S\n\nSee [the guide. It explains](https://example.com) everything you need. More.", "See the guide. It explains everything you need."),
            ("## T\n\nSet `a.b. c` to true before you start. More.", "Set a.b. c to true before you start."),
        ] {
            assert_eq!(describe("Heading", body), description, "{body:?}");
        }
    }

    #[test]
    fn a_leading_thematic_break_is_markdown_not_front_matter() {
        let m = migrate("---\n\n## Safety\n\nNever leak secrets.\n\n---\n\n## Style\n\nWrite short sentences.\n", &opts()).unwrap();
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["safety", "style"], "{m:#?}");
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        // `---`, prose, `---` is a rule and a setext heading: its text is kept
        let m = migrate("---\nprose here\n---\n\n## A\n\ntext of a\n", &opts()).unwrap();
        assert!(m.units.iter().any(|u| u.content.contains("prose here")), "{m:#?}");
        // YAML is still front matter
        let m = migrate("---\ntitle: Guide\ntags:\n  - ops\n# a comment\n---\n## A\n\ntext of a\n", &opts()).unwrap();
        assert!(m.units.iter().all(|u| !u.content.contains("title: Guide")) && m.warnings.iter().any(|w| w.contains("front matter")), "{m:#?}");
    }

    #[test]
    fn a_lone_carriage_return_ends_a_line() {
        let m = migrate("## Alpha\rAlpha text is here.\r## Beta\rBeta text is here.\r", &opts()).unwrap();
        let got: Vec<(&str, &str)> = m.units.iter().map(|u| (u.name.as_str(), u.description.as_str())).collect();
        assert_eq!(got, [("alpha", "Alpha text is here."), ("beta", "Beta text is here.")]);
    }

    #[test]
    fn what_a_publish_would_refuse_in_a_unit_is_said() {
        let m = migrate("## A\n\nFirst line of the unit.\n\nText\u{200B} with a hidden character.\n", &opts()).unwrap();
        assert!(m.warnings.iter().any(|w| w.starts_with("unit \"a\" would be refused by a publish (unit_admission_rejected, unit_zero_width)") && w.contains("line 5")), "{:?}", m.warnings);
    }

    #[test]
    fn names_stay_within_48_characters_and_say_what_they_collided_with() {
        let long = "Configuring the production deployment pipeline for";
        let md = format!("## {long} staging\n\nStaging text.\n\n## {long} production\n\nProduction text.\n\n## {long} canary\n\nCanary text.\n");
        let m = migrate(&md, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert!(names.iter().all(|n| n.len() <= 48 && crate::manifest::is_kebab(n)), "{names:?}");
        assert_eq!(names.iter().collect::<std::collections::BTreeSet<_>>().len(), 3, "{names:?}");
        assert!(m.warnings.iter().any(|w| w.contains("gives the name") && w.contains("has already")), "{:?}", m.warnings);
        assert!(!m.warnings.iter().any(|w| w.contains("repeats")), "no heading repeats: {:?}", m.warnings);
        let m = migrate("## Example\n\nFirst example.\n\n## Example\n\nSecond example.\n\n## Example 2\n\nThird one.\n", &opts()).unwrap();
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["example", "example-2", "example-2-2"]);
        assert!(m.warnings[0].contains("\"Example\" repeats"), "{:?}", m.warnings);
        assert!(m.warnings[1].contains("heading \"Example 2\" gives the name \"example-2\", which heading \"Example\" has already"), "{:?}", m.warnings);
    }

    #[test]
    fn a_units_text_is_the_files_text() {
        // the first line keeps its indentation (an indented code block stays code)
        let m = migrate("    $ make bootstrap\n\nThe bootstrap sets everything up.\n\n## A\n\ntext of a\n", &opts()).unwrap();
        assert!(m.units[0].content.starts_with("    $ make bootstrap\n"), "{:?}", m.units[0].content);
        assert_eq!(m.units[0].description, "The bootstrap sets everything up.");
        // a line with no text of its own joins the next unit as written, with no blank line added
        let m = migrate("STEP 1: Prepare\nSTEP 2: Build the thing.\n", &MigrateOptions { split_regex: Some("^STEP".into()), ..opts() }).unwrap();
        assert_eq!(m.units.len(), 1, "{m:#?}");
        assert_eq!(m.units[0].content, "STEP 1: Prepare\nSTEP 2: Build the thing.");
        // a section sign marks a section number, left out of the name
        assert_eq!((kebab("§21.1 Boot Stub"), kebab("§§ 4 Scope"), kebab("§21.5.4")), ("boot-stub".into(), "scope".into(), "21-5-4".into()));
    }

    #[test]
    fn a_draft_over_the_token_cap_is_warned_about() {
        let md: String = (0..80).map(|i| format!("## Section number {i} about a topic\n\nThis section explains topic {i} in a sentence or two for the agent.\n\n")).collect();
        let m = migrate(&md, &opts()).unwrap();
        assert_eq!(m.units.len(), 80);
        assert!(m.warnings.iter().any(|w| w.contains("over the 1000-token cap")), "{:?}", m.warnings);
        assert!(!migrate(DOC, &opts()).unwrap().warnings.iter().any(|w| w.contains("token cap")));
        assert!(m.warnings.iter().any(|w| w.starts_with("the draft manifest is ") && !w.contains("at least")), "{:?}", m.warnings);
        // too long to count: the figure is a floor, and says so
        let huge: String = (0..1500).map(|i| format!("## Section number {i} about a topic\n\nThis section explains topic {i} in a sentence or two for the agent.\n\n")).collect();
        let m = migrate(&huge, &opts()).unwrap();
        assert!(m.warnings.iter().any(|w| w.starts_with("the draft manifest is at least ")), "{:?}", m.warnings);
    }

    #[test]
    fn custom_split_regex() {
        let md = "Intro\nSTEP one\nfirst\nSTEP two\nsecond\n";
        let m = migrate(md, &MigrateOptions { split_regex: Some("^STEP ".into()), ..opts() }).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, vec!["overview", "step-one", "step-two"]);
        assert!(migrate(md, &MigrateOptions { split_regex: Some("(".into()), ..opts() }).is_err());
        // a pattern that matches nothing is said, not a silent single unit
        let m = migrate(md, &MigrateOptions { split_regex: Some("^PHASE ".into()), ..opts() }).unwrap();
        assert_eq!(m.units.len(), 1);
        assert!(m.warnings.iter().any(|w| w.contains("\"^PHASE \" matched no line")), "{:?}", m.warnings);
        assert!(!migrate(md, &MigrateOptions { split_regex: Some("^STEP ".into()), ..opts() }).unwrap().warnings.iter().any(|w| w.contains("matched no line")));
    }

    #[test]
    fn empty_reserved_and_accented_headings() {
        let md = "## Manifest\n\nThe manifest section.\n\n## Security rules\n\nNever leak secrets.\n\n##\n\nUnder an empty heading.\n\n## Ünïcödé Heading\n\nText.\n";
        let m = migrate(md, &opts()).unwrap();
        let names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["section-1", "security-rules", "section-3", "unicode-heading"]);
        assert!(!m.units[1].content.contains("empty heading"), "an empty heading is a boundary: {:?}", m.units[1].content);
        assert!(m.warnings.iter().any(|w| w.contains("\"Manifest\"") && w.contains("reserve")), "{:?}", m.warnings);
        assert!(m.warnings.iter().any(|w| w.contains("\"\" is empty")), "{:?}", m.warnings);
        assert_eq!(kebab("Sécurité & Straße"), "securite-strasse");
    }

    /// The audit's headings: Latin Extended letters keep their letter in the name (NFD
    /// without marks, or the table), where they used to become a dash; other scripts still
    /// give no letters, and ASCII and Latin-1 fold as before (but `ß`, now `ss`).
    #[test]
    fn latin_extended_letters_keep_their_letter_in_a_name() {
        for (heading, name) in [
            ("İstanbul Office", "istanbul-office"),
            ("Przegląd kodu", "przeglad-kodu"),
            ("Łódź Office", "lodz-office"),
            ("Řízení změn", "rizeni-zmen"),
            ("Đà Nẵng ĐIỂM", "da-nang-diem"),
            ("Dział ıslık Œuvre STRAẞE", "dzial-islik-oeuvre-strasse"),
            ("Ærøskøbing Þing", "aroskobing-ting"),
            ("部署 Deploy", "deploy"),
            ("Ελληνικά", ""),
        ] {
            assert_eq!(kebab(heading), name, "{heading:?}");
        }
        // ASCII and Latin-1 as the table always gave them
        const UPPER: &[u8; 32] = b"aaaaaaaceeeeiiiidnooooo_ouuuuyts";
        const LOWER: &[u8; 32] = b"aaaaaaaceeeeiiiidnooooo_ouuuuyty";
        for c in (0u32..0x100).filter_map(char::from_u32).filter(|&c| c != '\u{df}') {
            let before = match c as u32 {
                i @ 0xC0..=0xDF => UPPER[i as usize - 0xC0] as char,
                i @ 0xE0..=0xFF => LOWER[i as usize - 0xE0] as char,
                _ => c,
            };
            let mut got = String::new();
            ascii_fold(c, |x| got.push(x));
            assert_eq!(got, before.to_string(), "{c:?}");
        }
        assert!(LETTERS.windows(2).all(|w| w[0].0 < w[1].0));
        // the letters of the table have no canonical decomposition of their own
        for &(c, _) in LETTERS {
            let mut n = 0;
            unicode_normalization::char::decompose_canonical(c, |_| n += 1);
            assert_eq!(n, 1, "{c:?}");
        }
    }

    /// `ascii_fold`: Latin-1 folds by its table, and from U+0100 on a letter folds by its
    /// decomposition, so the first letter of Latin Extended-A (`Ā`, U+0100) keeps its `a`.
    #[test]
    fn the_first_letter_after_latin_1_keeps_its_letter() {
        assert_eq!(kebab("\u{0100}dh\u{0101}r \u{00FF}es"), "adhar-yes");
        let mut got = String::new();
        ascii_fold('\u{0100}', |x| got.push(x));
        assert_eq!(got, "A");
    }

    /// README: a unit "is described by the first sentence" of its first paragraph; a CJK
    /// sentence ends at `。！？` (or the full-width `．`), with no space after it.
    #[test]
    fn a_cjk_sentence_ends_at_its_full_stop() {
        assert_eq!(first_sentence("部署窗口是周一到周四。这是第二句。"), "部署窗口是周一到周四。");
        assert_eq!(first_sentence("本番にデプロイしますか？次に確認します。"), "本番にデプロイしますか？");
        assert_eq!(first_sentence("すぐに止めてください！理由は後で。"), "すぐに止めてください！");
        assert_eq!(first_sentence("全角の句点で終わる．次の文．"), "全角の句点で終わる．");
        assert_eq!(first_sentence("没有句号的一句话"), "没有句号的一句话");
        // English as before: a space after the stop, abbreviations skipped
        assert_eq!(first_sentence("Use e.g. the runbook. Then page."), "Use e.g. the runbook.");
        assert_eq!(first_sentence("Version 1.2 ships. Then"), "Version 1.2 ships.");
        let m = migrate("## 部署\n\n部署窗口是周一到周四。这是第二句。\n\n## İstanbul Office\n\nThe office runbook. More text.\n", &opts()).unwrap();
        assert_eq!(m.units[0].description, "部署窗口是周一到周四。");
        assert_eq!(m.units[1].name, "istanbul-office");
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(migrate("", &opts()).is_err());
        assert!(migrate("# Title only\n", &opts()).is_err());
        assert!(migrate("## A\nx", &MigrateOptions { deployment: "bad dep".into(), ..opts() }).is_err());
    }

    /// `first_prose`: headings and code are not prose, also inside a list item: a section
    /// whose first item opens with a code block or a heading is described by the item's text.
    #[test]
    fn code_and_headings_inside_a_list_item_are_not_its_prose() {
        let code = "## Build\n\n- ```\n  make all targets now\n  ```\n\n  Run the build before pushing.\n";
        assert_eq!(first_prose(code), "Run the build before pushing.");
        let heading = "## Build\n\n- # Heading text here\n  Run the build before pushing.\n";
        assert_eq!(first_prose(heading), "Run the build before pushing.");
        let m = migrate(code, &opts()).unwrap();
        assert_eq!(m.units[0].description, "Run the build before pushing.");
    }

    /// §21.6.3 step 1 with a split regex: a split line that is itself a heading is named by
    /// the heading's text (its `{#id}` left out, as at an H2 split), also below the first line.
    #[test]
    fn a_split_line_that_is_a_heading_takes_the_headings_text() {
        let md = "Intro text.\n\n## Deploy {#deploy}\n\nShip it.\n\n## Roll back {#rollback}\n\nUndo it.\n";
        let m = migrate(md, &MigrateOptions { split_regex: Some("^## ".into()), ..opts() }).unwrap();
        let got: Vec<(&str, &str)> = m.units.iter().map(|u| (u.name.as_str(), u.heading.as_str())).collect();
        assert_eq!(got, [("overview", "overview"), ("deploy", "Deploy"), ("roll-back", "Roll back")]);
    }

    /// `first_prose`: a block with no text of its own (an image without alt text, an item
    /// holding only a nested list) is passed over for the next one that has text.
    #[test]
    fn a_block_without_text_is_passed_over_for_the_next() {
        assert_eq!(first_prose("![](logo.png)\n\nDeploy on weekdays only. Never on Fridays.\n"), "Deploy on weekdays only. Never on Fridays.");
        assert_eq!(first_prose("- - Check the dashboard first.\n  - Then deploy.\n"), "Check the dashboard first.");
        let m = migrate("## Deploy\n\n![](logo.png)\n\nDeploy on weekdays only. Never on Fridays.\n", &opts()).unwrap();
        assert_eq!(m.units[0].description, "Deploy on weekdays only.");
    }

    /// `first_sentence`: a dot after a one-letter capital is an initial ("J. Smith"), not a
    /// sentence's end; after a digit or an acronym it is one.
    #[test]
    fn only_a_single_capitals_dot_is_an_initial() {
        assert_eq!(first_sentence("Ask J. Smith first. Then deploy."), "Ask J. Smith first.");
        assert_eq!(first_sentence("Call the API. Then wait."), "Call the API.");
        assert_eq!(first_sentence("Go to step 5. Then stop."), "Go to step 5.");
    }

    /// `describe`: one line of at most 120 characters; a longer one is cut at its last space
    /// past the 60th character (else at the 117th character) and ends in `...`.
    #[test]
    fn a_description_over_120_characters_is_cut_at_a_word() {
        let exactly = format!("{} end.", "x".repeat(115));
        assert_eq!(exactly.chars().count(), 120);
        assert_eq!(describe("H", &exactly), exactly);
        let over = format!("{} ends.", "x".repeat(115));
        assert_eq!(describe("H", &over), format!("{}...", "x".repeat(115)));
        // the last space is at byte 60 (the 61st character): not past the 60th, a hard cut
        let at_60 = format!("{} {}", "a".repeat(60), "b".repeat(100));
        assert_eq!(describe("H", &at_60), format!("{} {}...", "a".repeat(60), "b".repeat(56)));
        // the last space past the 60th character: cut there
        let at_70 = format!("{} {}", "a".repeat(70), "b".repeat(100));
        assert_eq!(describe("H", &at_70), format!("{}...", "a".repeat(70)));
    }

    /// `unit_file`: a host writes a unit's content with one final line break, and the token
    /// estimate is that file's count.
    #[test]
    fn a_unit_file_is_its_content_and_a_line_break() {
        assert_eq!(unit_file("Never push to main."), "Never push to main.\n");
        let m = migrate("## Rules\n\nNever push to main.\n", &opts()).unwrap();
        assert_eq!(m.units[0].token_estimate, crate::tokens::count("## Rules\n\nNever push to main.\n"));
    }

    /// §21.6.3 step 1: an H1 that comes after the first split starts a unit of its own; it
    /// is not the document's title (only an H1 before any split is).
    #[test]
    fn an_h1_after_the_first_split_starts_a_unit() {
        let m = migrate("## Setup\n\nInstall it.\n\n# Part two\n\nMore text here.\n", &opts()).unwrap();
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["setup", "part-two"]);
        assert_eq!(m.units[0].content, "## Setup\n\nInstall it.");
    }

    /// With a split regex the document's H1 before the first split still names the text
    /// before it; any other heading there makes that text a unit of its own.
    #[test]
    fn with_a_split_regex_the_title_names_the_preamble() {
        let step = |md: &str| migrate(md, &MigrateOptions { split_regex: Some("^STEP ".into()), ..opts() }).unwrap();
        let m = step("# Deploy Guide\n\nRead this first.\n\nSTEP one\nfirst\n");
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["deploy-guide", "step-one"]);
        // an H1 below the first split is not the title
        let m = step("Read this first.\n\nSTEP one\nfirst\n\n# Appendix\n\nmore\n");
        assert_eq!(m.units[0].name, "overview");
        // the title alone is no unit; the title and an H2 the regex does not split at are
        let m = step("# Guide\n\nSTEP one\nfirst\n");
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["step-one"]);
        let m = step("# Guide\n\n## Notes\n\nSTEP one\nfirst\n");
        assert_eq!(m.units.iter().map(|u| (u.name.as_str(), u.content.as_str())).collect::<Vec<_>>(), [("guide", "# Guide\n\n## Notes"), ("step-one", "STEP one\nfirst")]);
    }

    /// A split regex never splits inside a code block, but does on the lines around it, an
    /// indented one right after its closing fence included.
    #[test]
    fn a_split_regex_splits_around_a_code_block_not_inside() {
        let md = "Intro\nSTEP one\nfirst\n```\nSTEP inside a fence\n```\n  STEP two\nsecond\n";
        let m = migrate(md, &MigrateOptions { split_regex: Some(r"^\s*STEP ".into()), ..opts() }).unwrap();
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["overview", "step-one", "step-two"]);
        assert_eq!(m.units[1].content, "STEP one\nfirst\n```\nSTEP inside a fence\n```");
    }

    /// Headings with no text of their own in a row are all carried to the unit after them,
    /// and the warning names them joined by commas.
    #[test]
    fn headings_without_text_in_a_row_are_named_together() {
        let m = migrate("## Policies\n\n### Outages\n\n#### P1\n\nPage the on-call engineer.\n", &MigrateOptions { split_regex: Some("^#+ ".into()), ..opts() }).unwrap();
        assert_eq!(m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["p1"]);
        assert!(m.warnings.iter().any(|w| w.starts_with("heading \"Policies, Outages\" has no text of its own; it was kept at the top of unit \"p1\"")), "{:?}", m.warnings);
    }

    /// The module's contract: each unit has a cl100k token estimate, and a unit over 600
    /// tokens is said to be worth splitting further; one of 600 or fewer is not.
    #[test]
    fn a_unit_over_600_tokens_is_said_to_be_worth_splitting() {
        let md = format!("## Long\n\n{}\n\n## Short\n\nNever push to main.\n", "deploy the service carefully ".repeat(200));
        let m = migrate(&md, &opts()).unwrap();
        let long = &m.units[0];
        assert!(long.token_estimate > 600, "{}", long.token_estimate);
        let said: Vec<&String> = m.warnings.iter().filter(|w| w.contains("consider splitting it further")).collect();
        assert_eq!(said, [&format!("unit \"long\" is {} tokens; consider splitting it further", long.token_estimate)]);

        // exactly 600 tokens is not over
        let exact = (1..2000)
            .map(|n| format!("## Exact\n\n{}", vec!["go"; n].join(" ")))
            .find(|md| crate::tokens::count(&unit_file(md)) == 600)
            .expect("a unit of exactly 600 tokens");
        let m = migrate(&exact, &opts()).unwrap();
        assert_eq!(m.units[0].token_estimate, 600);
        assert!(!m.warnings.iter().any(|w| w.contains("consider splitting")), "{:?}", m.warnings);
        // §21.6.3 step 4: the drafted entries carry each unit's estimate
        let m = migrate(&md, &opts()).unwrap();
        let estimates: Vec<Option<u64>> = m.manifest.entries.iter().map(|e| e.token_estimate).collect();
        assert_eq!(estimates, m.units.iter().map(|u| Some(u.token_estimate as u64)).collect::<Vec<_>>());
    }

    /// `front_matter_end`: front matter opens with a YAML key (no space in it, then `: `);
    /// a leading `---` before prose with a colon is markdown. The body starts right after
    /// the closing `---` line.
    #[test]
    fn front_matter_needs_a_yaml_key_and_ends_after_its_closing_line() {
        let md = "---\ntitle: Deploy\nowner: ops\n---\n## A\n\ntext\n";
        assert_eq!(&md[front_matter_end(md).unwrap()..], "## A\n\ntext\n");
        let at_end = "---\ntitle: Deploy\n---";
        assert_eq!(front_matter_end(at_end), Some(at_end.len()));
        // two rules with nothing between, or a first line that is not a key (a heading, an
        // indented or blank line), open no front matter
        for md in ["---\nNote that: the deploy window is short.\n---\n", "---\nurl:https://example.com\n---\n", "---\n---\n## A\n", "---\n# Deploy\ntitle: x\n---\n", "---\n\ntitle: x\n---\n", "---\n  title: x\n---\n"] {
            assert_eq!(front_matter_end(md), None, "{md:?}");
        }
    }

    /// A split line's plain text (`plain`) drops emphasis and link marks without leaving a
    /// space where they were: the unit is headed and its drafted intent worded as an H2 of
    /// the same text would be (`Step 1: Build`, not `Step 1 : Build`).
    #[test]
    fn a_split_lines_emphasis_and_links_leave_no_space() {
        assert_eq!(plain("**Step 1**: Build"), "Step 1: Build");
        assert_eq!(plain("STEP [one](https://example.com)'s part"), "STEP one's part");
        assert_eq!(plain("STEP `a`b *c*d"), "STEP ab cd");
        let split = migrate("Intro.\n\n**Step 1**: Build\n\nRun make.\n", &MigrateOptions { split_regex: Some(r"^\*\*Step".into()), ..opts() }).unwrap();
        let heading = migrate("Intro.\n\n## **Step 1**: Build\n\nRun make.\n", &opts()).unwrap();
        assert_eq!(split.units[1].heading, "Step 1: Build");
        assert_eq!(split.units[1].heading, heading.units[1].heading);
        assert_eq!(split.manifest.entries[1].load_triggers.intents, ["step 1: build"]);
    }

    /// §21.2.1: a manifest "MUST fit within 1000 tokens" and is rejected only over them
    /// (§21.9 `token_count > 1000`): a draft of exactly 1000 tokens is not warned about.
    #[test]
    fn a_draft_of_exactly_the_token_cap_is_not_warned_about() {
        let draft_tokens = |m: &Migration| crate::manifest::validate(&crate::manifest::canonical_json(&m.manifest), &Default::default()).token_count;
        // n sections, `words` more words spread over the last three descriptions (each
        // description stays under 120 characters)
        let doc = |n: usize, words: usize| -> String { (0..n).map(|i| format!("## Topic {i}\n\nThis section explains topic {i}{}.\n\n", " go".repeat(if i + 3 >= n { words / 3 + usize::from(n - 1 - i < words % 3) } else { 0 }))).collect() };
        let n = (1..200).find(|&n| draft_tokens(&migrate(&doc(n, 0), &opts()).unwrap()) > crate::manifest::MANIFEST_TOKEN_CAP).unwrap();
        let exact = (0..75).map(|w| migrate(&doc(n - 1, w), &opts()).unwrap()).find(|m| draft_tokens(m) == crate::manifest::MANIFEST_TOKEN_CAP).expect("a draft of exactly 1000 tokens");
        assert!(!exact.warnings.iter().any(|w| w.contains("token cap")), "{:?}", exact.warnings);
        let over = migrate(&doc(n, 0), &opts()).unwrap();
        assert!(over.warnings.iter().any(|w| w.contains("over the 1000-token cap")), "{:?}", over.warnings);
    }
}
