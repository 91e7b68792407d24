//! The eight registered Verifiable Intent constraint types, held against
//! what an L3 fulfils, with the semantics treeship-core 0.32's
//! `check_constraints` gives them (the reference checker's): an amount
//! range, a budget, an agent recurrence's dates, an allowlist of payees or
//! merchants, line items with their caps and match mode; a reference and a
//! recurrence are the network's to count. Under an open mandate an unknown
//! type is a violation.

use serde_json::Value;

/// `fulfillment` against `constraints`: each violation, in words.
pub fn violations(constraints: &[Value], fulfillment: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if !fulfillment.is_object() {
        out.push("fulfillment must be an object".to_owned());
        return out;
    }
    for c in constraints {
        match c.get("type").and_then(Value::as_str) {
            None => out.push("constraint entry missing 'type'".to_owned()),
            Some("mandate.payment.amount_range") => amount(c, fulfillment, &mut out),
            Some("mandate.payment.allowed_payees") => allowlist(
                c,
                fulfillment,
                "payee",
                "mandate.payment.allowed_payees",
                &mut out,
            ),
            Some("mandate.checkout.allowed_merchants") => allowlist(
                c,
                fulfillment,
                "merchant",
                "mandate.checkout.allowed_merchants",
                &mut out,
            ),
            Some("mandate.checkout.line_items") => line_items(c, fulfillment, &mut out),
            Some("mandate.payment.reference" | "mandate.payment.recurrence") => {}
            Some("mandate.payment.budget") => budget(c, fulfillment, &mut out),
            Some("mandate.payment.agent_recurrence") => recurrence(c, fulfillment, &mut out),
            Some(other) => out.push(format!("Unknown constraint type: {other}")),
        }
    }
    out
}

/// A JSON integer that fits an `i64`.
fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

fn is_ref(v: &Value) -> bool {
    v.get("...").is_some()
}

fn amount(c: &Value, f: &Value, out: &mut Vec<String>) {
    let Some(pa) = f.get("payment_amount").filter(|v| v.is_object()) else {
        return out.push("Missing or invalid payment_amount in fulfillment".to_owned());
    };
    let Some(amount) = int(pa.get("amount")) else {
        return out.push("Missing or non-integer amount in fulfillment payment_amount".to_owned());
    };
    let currency = c.get("currency").and_then(Value::as_str).unwrap_or("USD");
    for (bound, below) in [("min", true), ("max", false)] {
        let Some(b) = c.get(bound) else { continue };
        match int(Some(b)) {
            None => return out.push(format!("Constraint {bound} must be an integer")),
            Some(m) if below && amount < m => {
                out.push(format!("Amount below minimum: {amount} < {m} {currency}"))
            }
            Some(m) if !below && amount > m => {
                out.push(format!("Amount exceeds maximum: {amount} > {m} {currency}"))
            }
            Some(_) => {}
        }
    }
    let paid = pa
        .get("currency")
        .and_then(Value::as_str)
        .unwrap_or(currency);
    if paid != currency {
        out.push(format!(
            "Currency mismatch: expected {currency}, got {paid}"
        ));
    }
}

/// The cumulative cap is the network's to keep across payments; one
/// payment above it, or below a per-payment minimum, can be seen here.
fn budget(c: &Value, f: &Value, out: &mut Vec<String>) {
    let amount = f.get("payment_amount").and_then(|pa| int(pa.get("amount")));
    let currency = c.get("currency").and_then(Value::as_str).unwrap_or("USD");
    if let (Some(a), Some(max)) = (amount, int(c.get("max"))) {
        if a > max {
            out.push(format!(
                "Amount exceeds cumulative budget: {a} > {max} {currency}"
            ));
        }
    }
    if let (Some(a), Some(min)) = (amount, int(c.get("min"))) {
        if a < min {
            out.push(format!(
                "Amount below budget minimum: {a} < {min} {currency}"
            ));
        }
    }
}

/// Occurrences are the network's to count; the dates, when the
/// fulfilment carries one, are checked here.
fn recurrence(c: &Value, f: &Value, out: &mut Vec<String>) {
    let (Some(start), Some(end)) = (
        c.get("start_date").and_then(Value::as_str),
        c.get("end_date").and_then(Value::as_str),
    ) else {
        return out.push("agent_recurrence requires start_date and end_date".to_owned());
    };
    if let Some(day) = f.get("date").and_then(Value::as_str) {
        if day < start || day > end {
            out.push(format!(
                "Date {day} outside agent_recurrence window [{start}, {end}]"
            ));
        }
    }
}

fn allowlist(c: &Value, f: &Value, field: &str, name: &str, out: &mut Vec<String>) {
    let Some(target) = f
        .get(field)
        .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
    else {
        return out.push(format!("Missing or invalid {field} in fulfillment"));
    };
    let Some(allowed) = c.get("allowed").and_then(Value::as_array) else {
        return out.push(format!("{name} 'allowed' must be a list"));
    };
    if allowed.is_empty() {
        return out.push(format!(
            "{name} constraint missing required 'allowed' field"
        ));
    }
    let inline: Vec<&Value> = allowed
        .iter()
        .filter(|m| {
            m.is_object() && !is_ref(m) && (m.get("id").is_some() || m.get("name").is_some())
        })
        .collect();
    if inline.is_empty() {
        if !allowed.iter().all(is_ref) {
            out.push(format!("{name} constraint present but no entries resolved"));
        }
        return;
    }
    if !inline.iter().any(|m| super::merchant_matches(m, target)) {
        let text = |k: &str| target.get(k).and_then(Value::as_str).unwrap_or_default();
        out.push(format!(
            "{} {} (id={}) not in allowed list",
            if field == "payee" {
                "Payee"
            } else {
                "Merchant"
            },
            text("name"),
            text("id")
        ));
    }
}

/// An item's key: its `id`, else its `sku`, when not empty.
fn item_key(v: &Value) -> Option<&str> {
    v.get("id")
        .and_then(Value::as_str)
        .or_else(|| v.get("sku").and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

fn line_items(c: &Value, f: &Value, out: &mut Vec<String>) {
    let entries = c
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if entries.is_empty() {
        return out.push("line_items constraint must have at least one item entry".to_owned());
    }
    // The acceptable items in the order first met (the order a violation
    // lists them in), and as a set to look them up.
    let mut allowed: Vec<&str> = Vec::new();
    let mut allowed_set: std::collections::HashSet<&str> = Default::default();
    let mut caps: std::collections::BTreeMap<&str, i64> = Default::default();
    let (mut listed, mut wildcard, mut capped) = (false, false, false);
    let mut total_cap: i64 = 0;
    for entry in entries {
        let Some(e) = entry.as_object() else {
            out.push("line_items item entry must be an object".to_owned());
            continue;
        };
        let acceptable = e.get("acceptable_items").and_then(Value::as_array);
        match acceptable {
            Some(a) if !a.is_empty() => listed = true,
            Some(_) => wildcard = true,
            None => {}
        }
        if e.get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .is_none()
        {
            out.push("line_items item entry missing required 'id' field".to_owned());
            continue;
        }
        if !e.contains_key("acceptable_items") {
            out.push(format!(
                "line_items item '{}' missing required 'acceptable_items' field",
                e["id"]
            ));
            continue;
        }
        let Some(cap) = int(e.get("quantity")) else {
            out.push("line_items item quantity must be an integer".to_owned());
            continue;
        };
        if cap <= 0 {
            out.push("line_items item quantity must be positive".to_owned());
            continue;
        }
        capped = true;
        total_cap = total_cap.saturating_add(cap);
        let Some(acceptable) = acceptable else {
            out.push("line_items acceptable_items must be an array".to_owned());
            continue;
        };
        let mut here: std::collections::BTreeSet<&str> = Default::default();
        for item in acceptable.iter().filter(|i| i.is_object() && !is_ref(i)) {
            if item
                .get("title")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .is_none()
            {
                out.push(format!(
                    "Item {} in acceptable_items missing required 'title'",
                    item.get("id").and_then(Value::as_str).unwrap_or("?")
                ));
            }
            if let Some(k) = item_key(item) {
                here.insert(k);
                if allowed_set.insert(k) {
                    allowed.push(k);
                }
            }
        }
        for k in here {
            let c = caps.entry(k).or_insert(0);
            *c = c.saturating_add(cap);
        }
    }
    if listed && allowed.is_empty() && !wildcard {
        return out.push("line_items constraint present but no item IDs resolved".to_owned());
    }
    let Some(items) = f.get("line_items").and_then(Value::as_array) else {
        return out.push("line_items must be a list".to_owned());
    };
    if items.is_empty() {
        return out.push(
            "Empty line_items does not satisfy line_items constraint with required items"
                .to_owned(),
        );
    }
    let mut total: i64 = 0;
    let mut by_id: std::collections::BTreeMap<&str, i64> = Default::default();
    for item in items {
        let Some(k) = item_key(item) else {
            out.push("Line item missing 'id' field".to_owned());
            continue;
        };
        let q = match item.get("quantity") {
            None => Some(0),
            some => int(some),
        };
        let Some(q) = q else {
            out.push(format!("Invalid quantity for item {k}"));
            continue;
        };
        if q < 0 {
            out.push(format!("Negative quantity for item {k}: {q}"));
            continue;
        }
        if !allowed.is_empty() && !allowed_set.contains(k) && !wildcard {
            out.push(format!("Item {k} not in acceptable items: {allowed:?}"));
        }
        total = total.saturating_add(q);
        let n = by_id.entry(k).or_insert(0);
        *n = n.saturating_add(q);
    }
    if capped && total > total_cap {
        out.push(format!("Total quantity {total} exceeds limit {total_cap}"));
    }
    for (k, q) in &by_id {
        if caps.get(k).is_some_and(|cap| q > cap) {
            out.push(format!(
                "Quantity for item {k} exceeds per-item limit {}",
                caps[k]
            ));
        }
    }
    let mode = c
        .get("match_mode")
        .and_then(Value::as_str)
        .unwrap_or("minimum");
    if mode != "minimum" && mode != "exact" {
        return out.push(format!(
            "line_items match_mode must be 'minimum' or 'exact', got '{mode}'"
        ));
    }
    if mode == "exact" {
        let missing: Vec<String> = entries
            .iter()
            .filter_map(|e| {
                let ids: Vec<&str> = e
                    .get("acceptable_items")
                    .and_then(Value::as_array)?
                    .iter()
                    .filter(|i| i.is_object() && !is_ref(i))
                    .filter_map(item_key)
                    .collect();
                let fulfilled = ids.iter().any(|id| by_id.get(id).copied().unwrap_or(0) > 0);
                (!ids.is_empty() && !fulfilled).then(|| {
                    format!(
                        "{}: {ids:?}",
                        e.get("id").and_then(Value::as_str).unwrap_or("?")
                    )
                })
            })
            .collect();
        if !missing.is_empty() {
            out.push(format!(
                "match_mode=exact: fulfillment missing required line item(s): {}",
                missing.join(", ")
            ));
        }
    }
}
