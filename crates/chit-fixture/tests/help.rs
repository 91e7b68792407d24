//! `chit-fixture --help` says how to use it and exits 0, without binding a
//! port; a wrong flag exits 2.

use std::process::Command;

#[test]
fn help_prints_the_usage_and_exits_0() {
    for flag in ["--help", "-h"] {
        let o = Command::new(env!("CARGO_BIN_EXE_chit-fixture"))
            .arg(flag)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{flag}");
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("usage: chit-fixture"));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_chit-fixture"))
        .args(["--mode", "sideways"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
