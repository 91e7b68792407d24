//! Lattice executor packets: sealed packets for the benchmark and the
//! broken cases for the Lattice parity test.

use crate::Rng;

/// A sealed `lattice.executor_packet.v1`, its canonical bytes without the
/// trailing LF (one JSON Lines line). Packet `i` of todo `i / 2` at epoch
/// `i % 2`: every second packet is a content-preserving rebind of the one
/// before. Scopes vary in size and carry non-ASCII text, astral
/// characters and, in one packet in eight, a lone surrogate.
pub fn lattice_packet(i: u64) -> Vec<u8> {
    use chit_core::lattice::Value;
    let s = |t: &str| Value::Str(t.encode_utf16().collect());
    let k = |t: &str| t.encode_utf16().collect::<Vec<u16>>();
    let todo = i / 2;
    let epoch = i % 2;
    let mut paths: Vec<Value> = (0..(todo % 5 + 1))
        .map(|n| s(&format!("src/module_{todo}/file_{n}.rs")))
        .collect();
    if todo % 8 == 3 {
        paths.push(Value::Str(vec![0x73, 0x72, 0x63, 0x2F, 0xD800]));
    }
    let scope = Value::Obj(vec![
        (k("paths"), Value::Arr(paths)),
        (k("note"), s("ｱ: keep the public API; 😀 tests first")),
        (
            k("limits"),
            Value::Obj(vec![
                (k("max_files"), Value::Num((todo % 40 + 1) as f64)),
                (k("ratio"), Value::Num((todo % 1000) as f64 / 8.0)),
            ]),
        ),
    ]);
    let sha: String = (0..40)
        .map(|n| b"0123456789abcdef"[((todo.wrapping_mul(31) + n) % 16) as usize] as char)
        .collect();
    let v = Value::Obj(vec![
        (k("schema"), s(chit_core::kinds::executor_packet::KIND)),
        (k("packet_id"), s(&format!("pkt-{i}"))),
        (k("todo_id"), s(&format!("todo-{todo}"))),
        (k("task_ref"), s(&format!("task-{}", todo % 97))),
        (k("scope"), scope),
        (k("base_sha"), s(&sha)),
        (k("plan_ref"), s(&format!("plan-{epoch}"))),
        (k("plan_epoch"), Value::Num(epoch as f64)),
        (
            k("verifier_refs"),
            Value::Arr(vec![s("cargo test"), s("cargo clippy")]),
        ),
        (k("forbidden_operations"), Value::Arr(vec![])),
    ]);
    let mut bytes = chit_core::kinds::executor_packet::seal(&v).expect("a generated packet seals");
    bytes.pop();
    bytes
}

/// One generated Lattice case: the packet text (possibly broken) and the
/// mutation applied.
pub struct LatticeCase {
    pub mutation: &'static str,
    pub text: String,
}

/// `n` Lattice cases from `seed`: sealed packets, and packets broken in
/// one way each (bytes, digests, -0, escapes, key order, duplicate keys,
/// schema violations under correct digests, trailing newlines, truncation).
pub fn lattice_cases(seed: u64, n: usize) -> Vec<LatticeCase> {
    use chit_core::kinds::executor_packet as xp;
    use chit_core::lattice::{self, Value};
    let mut rng = Rng::new(seed);
    let reseal =
        |v: &Value| -> String { String::from_utf8(xp::seal(v).expect("seals")).expect("utf-8") };
    let set = |v: &Value, key: &str, new: Value| -> Value {
        let Value::Obj(m) = v else { return v.clone() };
        let mut m = m.clone();
        match m.iter_mut().find(|(k, _)| lattice::key_is(k, key)) {
            Some(slot) => slot.1 = new,
            None => m.push((key.encode_utf16().collect(), new)),
        }
        Value::Obj(m)
    };
    let s = |t: &str| Value::Str(t.encode_utf16().collect());
    (0..n)
        .map(|i| {
            let base = String::from_utf8(lattice_packet(rng.below(1_000_000))).expect("utf-8");
            let v = lattice::parse(base.as_bytes()).expect("generated packets parse");
            let (mutation, text) = match rng.below(18) {
                0 | 1 => ("none", base.clone()),
                2 => ("trailing-lf", format!("{base}\n")),
                3 => ("two-lf", format!("{base}\n\n")),
                4 => ("space", base.replacen(':', ": ", 1)),
                5 => {
                    let at = base.find("\"packet_digest\":\"").expect("sealed") + 17;
                    let mut t = base.clone().into_bytes();
                    t[at] = if t[at] == b'0' { b'1' } else { b'0' };
                    ("packet-digest", String::from_utf8(t).expect("ascii"))
                }
                6 => (
                    "task-ref",
                    base.replacen("\"task_ref\":\"task-", "\"task_ref\":\"task-x", 1),
                ),
                7 => (
                    "minus-zero",
                    reseal(&set(&v, "scope", Value::Obj(vec![]))).replacen(
                        "\"scope\":{}",
                        "\"scope\":{\"z\":-0}",
                        1,
                    ),
                ),
                8 => (
                    "upper-escape",
                    reseal(&set(
                        &v,
                        "scope",
                        Value::Obj(vec![(
                            "p".encode_utf16().collect(),
                            Value::Str(vec![0xDABC]),
                        )]),
                    ))
                    .replace("\\udabc", "\\uDABC"),
                ),
                9 => (
                    "lone-surrogate",
                    reseal(&set(
                        &v,
                        "scope",
                        Value::Obj(vec![(
                            "p".encode_utf16().collect(),
                            Value::Str(vec![0x61, 0xDC01, 0x62]),
                        )]),
                    )),
                ),
                10 => {
                    // base_sha moved after forbidden_operations: same content, not canonical order.
                    let start = base.find("\"base_sha\":").expect("sealed");
                    let end = start + base[start..].find(',').expect("more members") + 1;
                    let member = base[start..end].to_owned();
                    let rest = format!("{}{}", &base[..start], &base[end..]);
                    (
                        "key-order",
                        rest.replacen(
                            "\"forbidden_operations\":[],",
                            &format!("\"forbidden_operations\":[],{member}"),
                            1,
                        ),
                    )
                }
                11 => (
                    "duplicate-key",
                    base.replacen("\"base_sha\":", "\"task_ref\":\"t\",\"base_sha\":", 1),
                ),
                12 => (
                    "forbidden-ops",
                    reseal(&set(
                        &v,
                        "forbidden_operations",
                        Value::Arr(vec![s("rm -rf")]),
                    )),
                ),
                13 => (
                    "epoch-fraction",
                    reseal(&set(&v, "plan_epoch", Value::Num(1.5))),
                ),
                14 => ("extra-key", reseal(&set(&v, "extra", Value::Bool(true)))),
                15 => ("bad-id", reseal(&set(&v, "packet_id", s("pkt 1")))),
                16 => (
                    "big-numbers",
                    reseal(&set(
                        &v,
                        "scope",
                        Value::Obj(vec![(
                            "n".encode_utf16().collect(),
                            Value::Arr(vec![
                                Value::Num(1e21),
                                Value::Num(1.5e300),
                                Value::Num(5e-324),
                                Value::Num(0.1),
                            ]),
                        )]),
                    )),
                ),
                _ => {
                    let mut cut = base.len() / 2;
                    while !base.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    ("truncated", base[..cut].to_owned())
                }
            };
            let _ = i;
            LatticeCase { mutation, text }
        })
        .collect()
}
