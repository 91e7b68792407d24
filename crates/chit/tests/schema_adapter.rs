//! chit validates its own zero-copy documents through the `jsonschema`
//! crate's interface for custom JSON representations. This test holds that
//! adapter to the crate's own serde_json path: on every document, both must
//! agree on validity and on where each error is.

use chit_core::schema::{ChitJson, SchemaNode, RUN_RECEIPT};
use chit_core::Limits;
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn both(schema: &Value) -> (jsonschema::Validator, jsonschema::Validator<ChitJson>) {
    let serde = jsonschema::draft202012::new(schema).unwrap();
    let chit = jsonschema::options_for::<ChitJson>()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap();
    (serde, chit)
}

/// Validity and the multiset of (instance path, schema path) of every error.
fn outcome_serde(v: &jsonschema::Validator, doc: &Value) -> (bool, BTreeSet<String>) {
    let errs = v
        .iter_errors(doc)
        .map(|e| format!("{} {}", e.instance_path(), e.schema_path()))
        .collect();
    (v.is_valid(doc), errs)
}

fn outcome_chit(v: &jsonschema::Validator<ChitJson>, text: &str) -> (bool, BTreeSet<String>) {
    let doc = chit_core::json::parse(text.as_bytes(), &Limits::default()).unwrap();
    let root = SchemaNode::Val(doc.root());
    let errs = v
        .iter_errors(root)
        .map(|e| format!("{} {}", e.instance_path(), e.schema_path()))
        .collect();
    (v.is_valid(root), errs)
}

#[test]
fn edge_cases_agree() {
    let schema = json!({
        "type": "object",
        "properties": {
            "digits": {"type": "string", "pattern": "^\\d{2}$"},
            "int": {"type": "integer", "minimum": 0},
            "short": {"type": "string", "maxLength": 2, "minLength": 1},
            "one": {"const": 1},
            "pick": {"enum": [0, "a", null, [1], {"k": 2}]},
            "set": {"type": "array", "uniqueItems": true},
            "either": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/pair"}]},
            "names": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
            "ratio": {"type": "number", "exclusiveMaximum": 1, "multipleOf": 0.25}
        },
        "required": ["int"],
        "additionalProperties": false,
        "$defs": {"pair": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}
    });
    let (serde, chit) = both(&schema);
    let cases = [
        r#"{"int": 0}"#,
        r#"{"int": -0}"#,
        r#"{"int": 1.0}"#,
        r#"{"int": 1e300}"#,
        r#"{"int": 1.5}"#,
        r#"{"int": -1}"#,
        r#"{"int": 0, "digits": "12"}"#,
        r#"{"int": 0, "digits": "１２"}"#,
        r#"{"int": 0, "digits": "1a"}"#,
        r#"{"int": 0, "short": "😂😂"}"#,
        r#"{"int": 0, "short": "😂😂😂"}"#,
        r#"{"int": 0, "short": ""}"#,
        r#"{"int": 0, "one": 1.0}"#,
        r#"{"int": 0, "one": 1e0}"#,
        r#"{"int": 0, "one": "1"}"#,
        r#"{"int": 0, "pick": -0}"#,
        r#"{"int": 0, "pick": {"k": 2.0}}"#,
        r#"{"int": 0, "pick": [1, 1]}"#,
        r#"{"int": 0, "set": [1, 1.0]}"#,
        r#"{"int": 0, "set": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}"#,
        r#"{"int": 0, "set": [1, "1", [1], {"1": 1}]}"#,
        r#"{"int": 0, "either": null}"#,
        r#"{"int": 0, "either": [1, 2]}"#,
        r#"{"int": 0, "either": [1, 2.5]}"#,
        r#"{"int": 0, "either": [1]}"#,
        r#"{"int": 0, "names": {"ok": 1, "Not": 2, "é": 3}}"#,
        r#"{"int": 0, "ratio": 0.75}"#,
        r#"{"int": 0, "ratio": 1}"#,
        r#"{"int": 0, "ratio": 0.3}"#,
        r#"{"int": 0, "extra": 1, "\u00e9": 2}"#,
        r#"{}"#,
        r#"[]"#,
        r#""int""#,
    ];
    for text in cases {
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            outcome_chit(&chit, text),
            outcome_serde(&serde, &value),
            "{text}"
        );
    }
}

#[test]
fn the_run_receipt_schema_agrees_over_the_parity_corpus() {
    let schema: Value = serde_json::from_str(RUN_RECEIPT.text).unwrap();
    let (serde, chit) = both(&schema);
    let mut invalid = 0;
    for case in chit_corpus::cases(2026, 8000) {
        let doc = chit_core::json::parse(case.text.as_bytes(), &Limits::default()).unwrap();
        // The value serde_json reads, numbers as chit reads them (doubles).
        let value = doc.to_value();
        let ours = outcome_chit(&chit, &case.text);
        assert_eq!(ours, outcome_serde(&serde, &value), "{}", case.text);
        invalid += usize::from(!ours.0);
    }
    assert!(invalid > 1000, "only {invalid} schema-invalid cases");
}
