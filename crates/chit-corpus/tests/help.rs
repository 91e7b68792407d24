//! `chit-corpus --help` says how to use it and exits 0; a wrong command
//! line exits 2 with the same usage.

use std::process::Command;

#[test]
fn help_prints_the_usage_and_exits_0() {
    for flag in ["--help", "-h"] {
        let o = Command::new(env!("CARGO_BIN_EXE_chit-corpus"))
            .arg(flag)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{flag}");
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("usage: chit-corpus parity"));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_chit-corpus"))
        .arg("nonsense")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("usage: chit-corpus"));
}
