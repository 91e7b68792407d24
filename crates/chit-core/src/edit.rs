//! Editing a document's text in place, so that what chit writes back keeps
//! every byte the user wrote (formatting, key order, number spellings) but
//! the one member it sets.

use std::ops::Range;

/// One member of the top-level object, by byte spans in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    pub key_span: Range<usize>,
    pub value_span: Range<usize>,
}

/// The members of the top-level object of `text`, a document that
/// [`crate::json::parse`] accepted. `None` if the top level is not an object.
pub fn top_level_members(text: &[u8]) -> Option<Vec<Member>> {
    let s = text;
    let mut i = if s.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    i = skip_ws(s, i);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(s, i + 1);
    let mut members = Vec::new();
    if s.get(i) == Some(&b'}') {
        return Some(members);
    }
    loop {
        let key_start = i;
        let key_end = string_end(s, i)?;
        let key: String = serde_json::from_slice(&s[key_start..key_end]).ok()?;
        i = skip_ws(s, key_end);
        if s.get(i) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(s, i + 1);
        let value_end = value_end(s, value_start)?;
        members.push(Member {
            key,
            key_span: key_start..key_end,
            value_span: value_start..value_end,
        });
        i = skip_ws(s, value_end);
        match s.get(i) {
            Some(b',') => i = skip_ws(s, i + 1),
            Some(b'}') => return Some(members),
            _ => return None,
        }
    }
}

/// `text` with the top-level member `key` set to `value_json` (JSON text):
/// its value replaced where the member exists, otherwise a member appended
/// after the last one in the same style (the separator and colon spacing of
/// the last member are copied). `None` if the top level is not an object.
pub fn set_top_level_member(text: &[u8], key: &str, value_json: &str) -> Option<Vec<u8>> {
    let members = top_level_members(text)?;
    let mut out = Vec::with_capacity(text.len() + key.len() + value_json.len() + 16);
    if let Some(m) = members.iter().find(|m| m.key == key) {
        out.extend_from_slice(&text[..m.value_span.start]);
        out.extend_from_slice(value_json.as_bytes());
        out.extend_from_slice(&text[m.value_span.end..]);
        return Some(out);
    }
    let mut quoted = Vec::new();
    crate::canon::write_string(key, &mut quoted);
    match members.as_slice() {
        [] => {
            let open = text.iter().position(|&b| b == b'{')?;
            out.extend_from_slice(&text[..=open]);
            out.extend_from_slice(&quoted);
            out.push(b':');
            out.extend_from_slice(value_json.as_bytes());
            out.extend_from_slice(&text[open + 1..]);
        }
        [.., last] => {
            // The bytes between the previous member and the last one (", \n  ")
            // and between the last key and its value (": ").
            let sep: &[u8] = match members.len() {
                1 => b",",
                n => &text[members[n - 2].value_span.end..last.key_span.start],
            };
            let colon = &text[last.key_span.end..last.value_span.start];
            out.extend_from_slice(&text[..last.value_span.end]);
            out.extend_from_slice(sep);
            out.extend_from_slice(&quoted);
            out.extend_from_slice(colon);
            out.extend_from_slice(value_json.as_bytes());
            out.extend_from_slice(&text[last.value_span.end..]);
        }
    }
    Some(out)
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while matches!(s.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// The end of the string starting at `i` (just past its closing quote).
fn string_end(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match s.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// The end of the value starting at `i`. Containers are skipped by counting
/// brackets outside strings, without recursion.
fn value_end(s: &[u8], i: usize) -> Option<usize> {
    match s.get(i)? {
        b'"' => string_end(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match s.get(j)? {
                    b'"' => {
                        j = string_end(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(&b) = s.get(j) {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                    break;
                }
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str, v: &str) -> String {
        String::from_utf8(set_top_level_member(text.as_bytes(), "digest", v).unwrap()).unwrap()
    }

    #[test]
    fn replaces_in_place() {
        assert_eq!(
            set(
                "{\"a\": [1, {\"digest\": 2}],\n \"digest\" : \"old\", \"z\": 1.0}",
                "\"new\""
            ),
            "{\"a\": [1, {\"digest\": 2}],\n \"digest\" : \"new\", \"z\": 1.0}"
        );
    }

    #[test]
    fn appends_in_the_document_style() {
        assert_eq!(
            set(
                "{\n  \"a\": \"}\\\"\",\n  \"b\": {\"c\": [1]}\n}\n",
                "\"d\""
            ),
            "{\n  \"a\": \"}\\\"\",\n  \"b\": {\"c\": [1]},\n  \"digest\": \"d\"\n}\n"
        );
        assert_eq!(
            set("{\"a\":1,\"b\":2}", "\"d\""),
            "{\"a\":1,\"b\":2,\"digest\":\"d\"}"
        );
        assert_eq!(set("{\"a\":1}", "\"d\""), "{\"a\":1,\"digest\":\"d\"}");
        assert_eq!(set("{ }", "\"d\""), "{\"digest\":\"d\" }");
        assert!(set_top_level_member(b"[1]", "digest", "1").is_none());
    }

    #[test]
    fn the_result_reads_back() {
        let text = "\u{feff}{\"k\\u0065y\": -0, \"s\": \"a,b}\", \"n\": null}";
        let out = set(text, "\"x\"");
        let v = crate::json::parse(out.as_bytes(), &crate::json::Limits::default()).unwrap();
        assert_eq!(v.root().get("digest").and_then(|d| d.as_str()), Some("x"));
        assert_eq!(v.root().get("key").and_then(|d| d.as_f64()), Some(0.0));
    }
}
