//! What a trust file and an envelope may claim: the art id a file name
//! carries.

use chit_core::envelope::art_id_in_file_name;
use chit_core::trust::Trust;
use chit_core::{check, Context, Report};
use std::path::Path;

const TREESHIP_KEY: &str = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY";
const PKT0: &str = "pkt-0__art_b06bd32e47eab4c537f21be003e5b852.envelope.json";
const PKT0_ART: &str = "art_b06bd32e47eab4c537f21be003e5b852";

fn treeship(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/treeship")
            .join(name),
    )
    .unwrap()
}

fn trust_of(keys: &[String]) -> String {
    keys.iter()
        .enumerate()
        .map(|(i, k)| format!("[[key]]\nname = \"k{i}\"\npublic_key = \"{k}\"\n"))
        .collect()
}

fn report(bytes: &[u8], ctx: &Context) -> Report {
    check(bytes, ctx).expect("readable").report
}

// Item 10: the art id in a file name.

#[test]
fn the_art_id_is_the_names_last_token_in_any_case() {
    let bytes = treeship(PKT0);
    let trust = Trust::parse(&trust_of(&[TREESHIP_KEY.to_owned()])).unwrap();
    let wrong = "art_0123456789abcdef0123456789abcdef";
    let upper = PKT0_ART.to_ascii_uppercase().replacen("ART_", "art_", 1);
    for (name, fails) in [
        (PKT0.to_owned(), false),
        (format!("{PKT0_ART}.json"), false),
        (format!("start__{PKT0_ART}.json"), false),
        (format!("start__{wrong}.json"), true),
        (format!("pkt__{wrong}.json"), true),
        (format!("{PKT0_ART}__{wrong}.json"), true),
        (format!("{upper}.json"), true),
        (format!("start__{upper}.json"), true),
    ] {
        let ctx = Context {
            trust: Some(&trust),
            expected_art: art_id_in_file_name(&name),
            ..Context::default()
        };
        let r = report(&bytes, &ctx);
        assert_eq!(r.breaks("art"), fails, "{name}: {r:?}");
        assert_eq!(r.valid(), !fails, "{name}: {r:?}");
    }
}
