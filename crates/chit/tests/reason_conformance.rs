//! Zerker Reason's conformance suite (zerkerlabs/reason,
//! `conformance/v1`): every outcome and every committed digest of its
//! manifest, from `chit reason` as a drop-in for
//! `reason --format json verify-authorization-bundle - --require-authorized`,
//! and from `chit verify`'s own verdict.
//!
//! Reason's files carry no licence, so none of them is in this repository:
//! the figures below are the manifest's expected results, and the test
//! runs over a folder of the suite's bundles named by
//! `CHIT_REASON_CONFORMANCE` (the suite's `conformance/v1/inputs`). Without
//! it the test says so and checks nothing; docs/compatibility.md says how to run it.

mod common;
use common::{chit_raw, repo};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One vector: its id, the input's SHA-256, Reason's exit status, and for a
/// verified bundle its authorization status and two digests.
struct Vector {
    id: &'static str,
    input_sha256: &'static str,
    exit: i32,
    verified: Option<(&'static str, &'static str, &'static str)>,
}

const SUITE: [Vector; 15] = [
    Vector {
        id: "authorized",
        input_sha256: "85b104bbe4d5666ab6c70d095513158525ce5ac976d2b0ca368438d77f0cd7d1",
        exit: 0,
        verified: Some((
            "authorized",
            "sha256:ffbb682242b1358c0fe0621bf9395bcc020a6398e3d8c2106a92272a3f77c8d5",
            "sha256:2f721e7e82f1181fde0c1cda96adeb88379db1bc7b09e0c0fe012eef2d7e0bf6",
        )),
    },
    Vector {
        id: "unknown",
        input_sha256: "fffb6f4f08a2649ac2f1a0325fa30f607afb9ca3710029b0ac2728e4b760f821",
        exit: 2,
        verified: Some((
            "insufficient_evidence",
            "sha256:1bb82295919a1832ad3856371987b366cb3c6aa4004f553d95177073f095c5d6",
            "sha256:45e73dca0cdfd78a99a2c43d83f249dc4b5d7ec8ec3decc9144d8493f754c0bf",
        )),
    },
    Vector {
        id: "denied",
        input_sha256: "9fc0733255c48e5edf2fe7d962270514272be7988055ba3763d702833ea8bdce",
        exit: 3,
        verified: Some((
            "denied",
            "sha256:97d8cd39f4c99c3283a03885e5a5084397d008f77e91c52c2ec95fd7f7eac065",
            "sha256:71735a3bc6c5589f78d2a9adab9f567a9bd181c6bbdd7dfdd54c1facead4e3f1",
        )),
    },
    Vector {
        id: "conflict",
        input_sha256: "581af673f775849f3d7f22b042d20532512550c1dc404c359997d6b81ce318e7",
        exit: 4,
        verified: Some((
            "conflicted",
            "sha256:f9c824c4c9ccbcbede26d4ec286a120635be850948050305b8d8a2368b23f326",
            "sha256:7000490b83baa671954aaa2ae8bb0519165888aa16b1154dd80ecfd977bf2cad",
        )),
    },
    Vector {
        id: "expired",
        input_sha256: "ee289bae1e31363d6b9a7314f7faece871fb3c64dab2b84188a909c9392e98c5",
        exit: 2,
        verified: Some((
            "insufficient_evidence",
            "sha256:bcc0033aa48bb13e7218f4c87771263e18e05e40df954a382784f1bd03cc6da9",
            "sha256:42f9bcb61ef0f861d69c7b2f67545a9ae21b301721a57816ddb215c1204b36a7",
        )),
    },
    Vector {
        id: "gateway-bound",
        input_sha256: "b000bf9bdc38fec919ae5e01be75edee107321139fa45d34c051c58a34856bac",
        exit: 0,
        verified: Some((
            "authorized",
            "sha256:1cf5d4761823063f10a9061cf4fbd392e13cc62254741441f61b07e6357ab29e",
            "sha256:a1c4f4573dd4843a2ac801ec12ccbf8081a7ff38987b97aec260e235fabe9e72",
        )),
    },
    Vector {
        id: "rakhshak-bound",
        input_sha256: "f1e696691bd2616b37ee06a89179f36fc21fc1778d152c80a5463bccb82993bc",
        exit: 0,
        verified: Some((
            "authorized",
            "sha256:5714542bc54f785a6786eee6d7c74aa8ab6a580384ddbd0f2ba1fd3c6bae96ac",
            "sha256:848e2d96bd36fbe14448bd5755bceeed171767472e94e35ac29123cdf80a085d",
        )),
    },
    Vector {
        id: "modified-request",
        input_sha256: "3c63e0dd1f4b9ba393973471da703e0623071e64a741b820fcc1b0c7d929fc6c",
        exit: 1,
        verified: None,
    },
    Vector {
        id: "modified-policy",
        input_sha256: "d11054d1728f147a4d7620f1f1c3746b867be96349df69d64e5558935b410f34",
        exit: 1,
        verified: None,
    },
    Vector {
        id: "modified-certificate",
        input_sha256: "af6c956d7f9db9c43f0cae8da32f67e5211e99749d238220040b343bc238e431",
        exit: 1,
        verified: None,
    },
    Vector {
        id: "wrong-schema",
        input_sha256: "c7667bbaec23d5a08fe6c437a3eb14b3ecba21f5df1cca0c4aee9935ae8a1a9b",
        exit: 1,
        verified: None,
    },
    Vector {
        id: "malformed-certificate",
        input_sha256: "bd8298236f780323d5cdfd047c2e342d024d5da5d809823447706595813df91e",
        exit: 1,
        verified: None,
    },
    Vector {
        id: "unknown-member",
        input_sha256: "7bfc6f594a601c01f7f591c753b65f214abecb50b7966d3cfe176a8ce0176cbf",
        exit: 1,
        verified: None,
    },
    Vector {
        id: "duplicate-member",
        input_sha256: "8f488efe0234fc867e27b123e1e1576358d4c8e2eed26ce2c909962d79461ff5",
        exit: 1,
        verified: None,
    },
    Vector {
        id: "malformed-json",
        input_sha256: "a32206bef31013a54836a1fde083adc3fce76c3dab631ff4dc97cf138d95f4c0",
        exit: 1,
        verified: None,
    },
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn reasons_conformance_suite_every_outcome_and_digest() {
    let Some(dir) = std::env::var_os("CHIT_REASON_CONFORMANCE") else {
        eprintln!(
            "skipped: set CHIT_REASON_CONFORMANCE to a folder of Reason's conformance/v1/inputs \
             bundles (zerkerlabs/reason) to run the suite"
        );
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let mut passed = 0;
    for v in &SUITE {
        let path = dir.join(format!("{}.bundle.json", v.id));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            hex(&Sha256::digest(&bytes)),
            v.input_sha256,
            "{}: not the suite's file",
            v.id
        );

        // Reason's own command, swapped for chit's.
        let run = chit_raw(&repo(), &common::REASON_BUNDLE_GATE, Some(&bytes));
        let stdout = String::from_utf8(run.stdout.clone()).unwrap();
        assert_eq!(run.code, v.exit, "{}: exit status; {stdout}", v.id);
        let out: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{}: {e}: {stdout}", v.id));
        match v.verified {
            Some((status, request, reasoning)) => {
                assert_eq!(
                    out["schema"], "zerker.reason.authorization-verification.v1",
                    "{}",
                    v.id
                );
                assert_eq!(out["status"], "verified", "{}", v.id);
                assert_eq!(out["authorization_status"], status, "{}", v.id);
                assert_eq!(out["request_digest"], request, "{}", v.id);
                assert_eq!(out["reasoning_result_digest"], reasoning, "{}", v.id);
            }
            None => {
                assert_eq!(out["schema"], "zerker.reason.error.v1", "{}", v.id);
                assert_eq!(out["status"], "error", "{}", v.id);
                assert!(
                    out["error"].as_str().is_some_and(|e| !e.is_empty()),
                    "{}",
                    v.id
                );
            }
        }

        // chit's own verdict: valid exactly when Reason verifies; under
        // --require-authorized, exactly when it verifies as authorized.
        let path_arg = path.to_str().unwrap();
        let plain = chit_raw(&repo(), &["verify", path_arg], None);
        let gated = chit_raw(&repo(), &["verify", "--require-authorized", path_arg], None);
        assert_eq!(
            plain.code == 0,
            v.verified.is_some(),
            "{}: chit verify",
            v.id
        );
        assert_eq!(
            gated.code == 0,
            matches!(v.verified, Some(("authorized", _, _))),
            "{}: chit verify --require-authorized",
            v.id
        );
        passed += 1;
    }
    eprintln!("Reason conformance: {passed} of {} vectors", SUITE.len());
    assert_eq!(passed, 15);
}
