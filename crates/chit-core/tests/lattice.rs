//! lattice.executor_packet.v1 over generated packets: sealed packets are
//! valid, each projected field and each digest is checked, epoch rebinds,
//! -0, lone surrogates, key order, and every limit of the profile.

use chit_core::across::{Facts, Origin};
use chit_core::kinds::executor_packet::{self as xp, RebindFacts};
use chit_core::lattice::{self, Value};

/// A small deterministic generator (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn s(text: &str) -> Value {
    Value::Str(text.encode_utf16().collect())
}

/// Strings that exercise the profile: escapes, non-ASCII, astral
/// characters, keys that sort differently by code point and UTF-16 unit,
/// and lone surrogates.
fn odd_string(rng: &mut Rng) -> Value {
    let mut units: Vec<u16> = "v".encode_utf16().collect();
    for _ in 0..rng.below(6) {
        match rng.below(7) {
            0 => units.extend("\"\\\n\t\u{1}".encode_utf16()),
            1 => units.extend("é ｱ".encode_utf16()),
            2 => units.extend("😀".encode_utf16()),
            3 => units.push(0xD800 + rng.below(0x400) as u16),
            4 => units.push(0xDC00 + rng.below(0x400) as u16),
            5 => units.extend("\u{ff61}".encode_utf16()),
            _ => units.extend(format!("{}", rng.next()).encode_utf16()),
        }
    }
    Value::Str(units)
}

fn scope(rng: &mut Rng, depth: usize) -> Value {
    let n = rng.below(5) as usize;
    let mut members: Vec<(Vec<u16>, Value)> = Vec::new();
    for i in 0..n {
        let key = match rng.below(3) {
            0 => format!("k{i}").encode_utf16().collect(),
            1 => format!("\u{ff61}{i}").encode_utf16().collect(),
            _ => format!("\u{1f600}{i}").encode_utf16().collect(),
        };
        let v = match rng.below(6) {
            0 if depth < 4 => scope(rng, depth + 1),
            1 => Value::Num((rng.next() % 2_000_000) as f64 / 7.0 - 100_000.0),
            2 => Value::Arr((0..rng.below(4)).map(|_| odd_string(rng)).collect()),
            3 => Value::Bool(rng.below(2) == 0),
            4 => Value::Null,
            _ => odd_string(rng),
        };
        members.push((key, v));
    }
    Value::Obj(members)
}

fn packet(rng: &mut Rng, todo: &str, plan_ref: &str, epoch: u64) -> Value {
    let sha: String = (0..40)
        .map(|_| b"0123456789abcdef"[rng.below(16) as usize] as char)
        .collect();
    Value::Obj(vec![
        ("schema".encode_utf16().collect(), s(xp::KIND)),
        (
            "packet_id".encode_utf16().collect(),
            s(&format!("pkt-{}", rng.next() % 100_000)),
        ),
        ("todo_id".encode_utf16().collect(), s(todo)),
        ("task_ref".encode_utf16().collect(), s("task-1")),
        ("scope".encode_utf16().collect(), scope(rng, 0)),
        ("base_sha".encode_utf16().collect(), s(&sha)),
        ("plan_ref".encode_utf16().collect(), s(plan_ref)),
        (
            "plan_epoch".encode_utf16().collect(),
            Value::Num(epoch as f64),
        ),
        (
            "verifier_refs".encode_utf16().collect(),
            Value::Arr(vec![s("cargo test")]),
        ),
        (
            "forbidden_operations".encode_utf16().collect(),
            Value::Arr(vec![]),
        ),
    ])
}

fn sealed(v: &Value) -> Vec<u8> {
    xp::seal(v).unwrap()
}

fn rules(bytes: &[u8]) -> (Vec<&'static str>, Vec<&'static str>) {
    let c = xp::check_bytes(bytes, Origin::new("t", None)).expect("readable");
    (
        c.report.errors.iter().map(|f| f.rule).collect(),
        c.report.warnings.iter().map(|f| f.rule).collect(),
    )
}

/// Replaces one member's value.
fn with(v: &Value, key: &str, new: Value) -> Value {
    let Value::Obj(m) = v else { unreachable!() };
    Value::Obj(
        m.iter()
            .map(|(k, x)| {
                if k.iter().copied().eq(key.encode_utf16()) {
                    (k.clone(), new.clone())
                } else {
                    (k.clone(), x.clone())
                }
            })
            .collect(),
    )
}

#[test]
fn sealed_generated_packets_are_valid_and_only_canonical_bytes_are() {
    let mut rng = Rng(2026);
    for i in 0..2000 {
        let v = packet(&mut rng, &format!("todo-{i}"), "plan-a", 1);
        let bytes = sealed(&v);
        assert_eq!(
            rules(&bytes),
            (vec![], vec![]),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        // Without the trailing LF: still canonical. With two, or pretty: not.
        assert_eq!(rules(&bytes[..bytes.len() - 1]).0, Vec::<&str>::new());
        let mut two = bytes.clone();
        two.push(b'\n');
        assert_eq!(rules(&two).0, vec!["X2"]);
        let mut spaced = bytes.clone();
        spaced.insert(1, b' ');
        assert_eq!(rules(&spaced).0, vec!["X2"]);
    }
}

#[test]
fn each_projected_field_moves_the_context_digest() {
    let mut rng = Rng(7);
    let v = packet(&mut rng, "todo-1", "plan-a", 1);
    let good = lattice::parse(&sealed(&v)).unwrap();
    for (field, new) in [
        ("todo_id", s("todo-2")),
        ("task_ref", s("task-2")),
        (
            "scope",
            Value::Obj(vec![("x".encode_utf16().collect(), Value::Num(1.0))]),
        ),
        ("base_sha", s(&"a".repeat(40))),
        ("verifier_refs", Value::Arr(vec![s("npm test")])),
        ("forbidden_operations", Value::Arr(vec![s("rm")])),
    ] {
        let edited = with(&good, field, new);
        let bytes = lattice::canonical(&edited).unwrap();
        let (e, _) = rules(&bytes);
        assert_eq!(e, vec!["X3", "X4"], "{field}");
    }
    // Plan attribution is outside the projection: only the self-digest moves.
    for (field, new) in [
        ("plan_ref", s("plan-b")),
        ("plan_epoch", Value::Num(9.0)),
        ("packet_id", s("pkt-x")),
    ] {
        let edited = with(&good, field, new);
        let (e, _) = rules(&lattice::canonical(&edited).unwrap());
        assert_eq!(e, vec!["X4"], "{field}");
    }
    // X5 warns on forbidden operations (sealed, so otherwise valid).
    let warned = sealed(&with(
        &good,
        "forbidden_operations",
        Value::Arr(vec![s("rm")]),
    ));
    assert_eq!(rules(&warned), (vec![], vec!["X5"]));
}

fn facts(bytes: &[u8], name: &str) -> RebindFacts {
    xp::check_bytes(bytes, Origin::new(name, None))
        .unwrap()
        .facts
        .and_then(Facts::into_rebind)
        .unwrap()
}

/// `v` moved to another plan at another epoch.
fn rebind(v: &Value, plan: &str, epoch: f64) -> Value {
    with(
        &with(v, "plan_ref", s(plan)),
        "plan_epoch",
        Value::Num(epoch),
    )
}

#[test]
fn epoch_rebinds() {
    let mut rng = Rng(11);
    let v1 = packet(&mut rng, "todo-1", "plan-a", 1);
    let a = sealed(&v1);
    let b = sealed(&rebind(&v1, "plan-b", 2.0));
    let c = sealed(&rebind(&v1, "plan-c", 5.0));
    let out = xp::rebinds(vec![facts(&c, "c"), facts(&a, "a"), facts(&b, "b")]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, "todo-1");
    assert_eq!(out[0].1, 3);
    assert!(out[0].2.valid(), "{:?}", out[0].2);

    let x6 = |items: Vec<RebindFacts>| -> Vec<String> {
        xp::rebinds(items)
            .into_iter()
            .flat_map(|(_, _, r)| r.errors.into_iter().map(|f| f.message))
            .collect()
    };
    // The same epoch twice.
    let same_epoch = sealed(&rebind(&v1, "plan-b", 1.0));
    let e = x6(vec![facts(&a, "a"), facts(&same_epoch, "b")]);
    assert!(e.iter().any(|m| m.contains("plan_epoch 1 twice")), "{e:?}");
    // The same plan.
    let same_plan = sealed(&rebind(&v1, "plan-a", 2.0));
    let e = x6(vec![facts(&a, "a"), facts(&same_plan, "b")]);
    assert!(e.iter().any(|m| m.contains("same plan_ref")), "{e:?}");
    // The content changed: not a rebind.
    for (field, new) in [
        ("scope", Value::Obj(vec![])),
        ("base_sha", s(&"b".repeat(40))),
        ("task_ref", s("task-9")),
    ] {
        let changed = sealed(&rebind(&with(&v1, field, new), "plan-b", 2.0));
        let e = x6(vec![facts(&a, "a"), facts(&changed, "b")]);
        assert!(
            e.iter().any(|m| m.contains("content changed")),
            "{field}: {e:?}"
        );
    }
    // A packet invalid on its own spoils the rebind.
    let bad = lattice::canonical(&with(
        &lattice::parse(&b).unwrap(),
        "packet_digest",
        s(&"0".repeat(64)),
    ))
    .unwrap();
    let e = x6(vec![facts(&a, "a"), facts(&bad, "b")]);
    assert!(
        e.iter().any(|m| m.contains("not valid on its own")),
        "{e:?}"
    );
    // Different todos are not compared.
    let other = sealed(&packet(&mut rng, "todo-2", "plan-a", 1));
    assert!(xp::rebinds(vec![facts(&a, "a"), facts(&other, "o")]).is_empty());
}

#[test]
fn negative_zero_lone_surrogates_and_key_order() {
    let mut rng = Rng(3);
    let v = packet(&mut rng, "todo-1", "plan-a", 1);
    // -0 anywhere: Lattice refuses the packet.
    let minus_zero = with(
        &v,
        "scope",
        Value::Obj(vec![("z".encode_utf16().collect(), Value::Num(-0.0))]),
    );
    assert!(xp::seal(&minus_zero).is_err());
    let text = String::from_utf8(sealed(&with(&v, "scope", Value::Obj(vec![])))).unwrap();
    let text = text.replace("\"scope\":{}", "\"scope\":{\"z\":-0}");
    assert!(rules(text.as_bytes()).0.contains(&"X2"));
    // A lone surrogate is kept, escaped, and the sealed packet is valid.
    let lone = with(
        &v,
        "scope",
        Value::Obj(vec![(
            "p".encode_utf16().collect(),
            Value::Str(vec![0x61, 0xD800]),
        )]),
    );
    let bytes = sealed(&lone);
    assert!(String::from_utf8_lossy(&bytes).contains("\"a\\ud800\""));
    assert_eq!(rules(&bytes), (vec![], vec![]));
    // Written with an upper-case escape, the same packet is not canonical.
    let upper = String::from_utf8(bytes.clone())
        .unwrap()
        .replace("\\ud800", "\\uD800");
    assert_eq!(rules(upper.as_bytes()).0, vec!["X2"]);
    // Keys that sort differently by code point and by UTF-16 unit.
    let keyed = with(
        &v,
        "scope",
        Value::Obj(vec![
            ("\u{ff61}".encode_utf16().collect(), Value::Num(1.0)),
            ("\u{1f600}".encode_utf16().collect(), Value::Num(2.0)),
        ]),
    );
    let bytes = sealed(&keyed);
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("{\"\u{1f600}\":2,\"\u{ff61}\":1}"), "{text}");
    assert_eq!(rules(&bytes).0, Vec::<&str>::new());
    let code_point_order = text.replace(
        "{\"\u{1f600}\":2,\"\u{ff61}\":1}",
        "{\"\u{ff61}\":1,\"\u{1f600}\":2}",
    );
    assert_eq!(rules(code_point_order.as_bytes()).0, vec!["X2"]);
}

#[test]
fn documents_over_each_limit() {
    let mut rng = Rng(5);
    let v = packet(&mut rng, "todo-1", "plan-a", 1);
    let over = |scope: Value| -> Vec<&'static str> {
        let text = lattice::unicode_json(&with(&v, "scope", scope));
        rules(&text).0
    };
    let mut deep = Value::Null;
    for _ in 0..40 {
        deep = Value::Arr(vec![deep]);
    }
    assert!(over(Value::Obj(vec![("d".encode_utf16().collect(), deep)])).contains(&"X2"));
    let many = Value::Arr(vec![Value::Null; 10_001]);
    assert!(over(Value::Obj(vec![("m".encode_utf16().collect(), many)])).contains(&"X2"));
    let keys = Value::Obj(
        (0..257)
            .map(|i| (format!("k{i}").encode_utf16().collect(), Value::Null))
            .collect(),
    );
    assert!(over(keys).contains(&"X2"));
    let long = Value::Str(vec![0x61; 16_385]);
    assert!(over(Value::Obj(vec![("l".encode_utf16().collect(), long)])).contains(&"X2"));
    let big = Value::Arr((0..70).map(|_| Value::Str(vec![0x61; 16_000])).collect());
    assert!(over(Value::Obj(vec![("b".encode_utf16().collect(), big)])).contains(&"X2"));
    // Just inside every limit: valid once sealed.
    // The scope is level 1 and its member level 2: 30 arrays put the null
    // at level 32.
    let mut ok = Value::Null;
    for _ in 0..30 {
        ok = Value::Arr(vec![ok]);
    }
    assert_eq!(
        rules(&sealed(&with(
            &v,
            "scope",
            Value::Obj(vec![("d".encode_utf16().collect(), ok)])
        )))
        .0,
        Vec::<&str>::new()
    );
    // Unreadable input is a read error, not a verdict.
    assert!(xp::check_bytes(
        b"{\"schema\":\"lattice.executor_packet.v1\",",
        Origin::new("t", None)
    )
    .is_err());
}

/// Lattice's `plan_epoch` is `Number.isSafeInteger` and not negative: 2^53
/// and 1e300 are whole doubles the schema's `integer` takes, but Lattice
/// refuses them, so chit must too (found by a differential run against
/// Lattice's own validator).
#[test]
fn plan_epoch_past_the_safe_integers_is_refused() {
    let mut rng = Rng(53);
    let v = packet(&mut rng, "todo-1", "plan-a", 1);
    for (epoch, ok) in [
        (0.0, true),
        (9_007_199_254_740_991.0, true),
        (9_007_199_254_740_992.0, false),
        (1e21, false),
        (1e300, false),
    ] {
        let bytes = sealed(&with(&v, "plan_epoch", Value::Num(epoch)));
        let (errors, _) = rules(&bytes);
        assert_eq!(errors.is_empty(), ok, "{epoch}: {errors:?}");
        if !ok {
            assert_eq!(errors, vec!["schema"], "{epoch}");
        }
        // No rebind facts for a packet that breaks the schema.
        let checked = xp::check_bytes(&bytes, Origin::new("p.json", None)).unwrap();
        assert_eq!(
            checked
                .facts
                .and_then(Facts::into_rebind)
                .map(|f| (f.valid, f.plan_epoch)),
            ok.then_some((true, Some(epoch as u64))),
            "{epoch}"
        );
    }
}

/// A todo's chain as a log's reader sees it: in X6's order, each packet
/// with the fields X6 names against the one before it, and X6's findings
/// over them all, the same rule as across inputs.
#[test]
fn a_rebind_chain_flags_each_packet_against_the_one_before() {
    let mut rng = Rng(13);
    let v1 = packet(&mut rng, "todo-1", "plan-a", 1);
    let a = sealed(&v1);
    let b = sealed(&rebind(&v1, "plan-b", 2.0));
    // Same plan as b, same epoch too: two fields flagged.
    let c = sealed(&rebind(&v1, "plan-b", 2.0));
    let chain = xp::rebind_chain(vec![facts(&c, "c"), facts(&a, "a"), facts(&b, "b")]);
    let order: Vec<&str> = chain.packets.iter().map(|(f, _)| &*f.source.file).collect();
    assert_eq!(order, ["a", "b", "c"]);
    let flagged: Vec<&Vec<String>> = chain.packets.iter().map(|(_, f)| f).collect();
    assert!(flagged[0].is_empty() && flagged[1].is_empty());
    assert_eq!(*flagged[2], ["/plan_ref", "/plan_epoch"]);
    let across = xp::rebinds(vec![facts(&a, "a"), facts(&b, "b"), facts(&c, "c")]);
    assert_eq!(chain.report, across[0].2);
    // One packet: nothing to compare, no finding.
    let one = xp::rebind_chain(vec![facts(&a, "a")]);
    assert!(one.report.valid() && one.packets[0].1.is_empty());
}
