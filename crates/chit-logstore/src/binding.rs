//! The log's policy, bound to the log by its key.
//!
//! At `chit log init` the log signs a note naming its origin and the
//! SHA-256 of the policy as stored, kept beside it (`policy_binding`). A
//! policy changed by any byte no longer matches; a binding removed is no
//! binding. The audit's `policy` step and every open with the log's key
//! (a server, an append) check it; a log made before policies were bound
//! is bound once, by its operator, with `chit log bind-policy`.
//!
//! The note's text is three lines, which no checkpoint parser reads as a
//! checkpoint (its second line is not a size):
//!
//! ```text
//! chit-log policy v1
//! <origin>
//! <SHA-256 of the stored policy, lower-case hex>
//! ```

use chit_log::note::{self, NoteSigner, NoteVerifier};

/// The first line of a binding's text.
pub const HEADER: &str = "chit-log policy v1";

/// Why a log's policy is not the one its key bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unbound {
    #[error(
        "the log's policy is not bound to it (a log made before chit bound its policy, or its \
         binding was removed): check the policy (chit log info) and bind it with chit log bind-policy"
    )]
    Missing,
    #[error("the policy's binding is not signed by the log's key ({0})")]
    NotSigned(String),
    #[error(
        "the stored policy is not the one the log signed (changed behind the log's back); \
         audit the log and restore its policy"
    )]
    Changed,
}

/// The text a log signs to bind `policy` (as stored) to `origin`.
pub fn text(origin: &str, policy: &str) -> String {
    let digest = chit_core::digest::sha256_hex(policy.as_bytes());
    format!("{HEADER}\n{origin}\n{digest}\n")
}

/// The signed binding of `policy` to the signer's log.
pub fn sign(signer: &NoteSigner, policy: &str) -> Result<String, note::NoteError> {
    let note = note::sign(&text(signer.name(), policy), &[signer])?;
    Ok(String::from_utf8(note).expect("a note is UTF-8"))
}

/// Whether `binding` is the log key's signature over `policy`.
pub fn check(
    verifier: &NoteVerifier,
    origin: &str,
    policy: &str,
    binding: Option<&str>,
) -> Result<(), Unbound> {
    let binding = binding.ok_or(Unbound::Missing)?;
    let opened = note::open(binding.as_bytes(), &[verifier])
        .map_err(|e| Unbound::NotSigned(e.to_string()))?;
    if opened.text != text(origin, policy) {
        return Err(Unbound::Changed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> NoteSigner {
        NoteSigner::from_seed("example.com/log", &[7; 32]).unwrap()
    }

    #[test]
    fn a_binding_holds_its_policy_and_nothing_else() {
        let k = key();
        let policy = r#"{"threshold":1,"allow_unchecked":false}"#;
        let b = sign(&k, policy).unwrap();
        let v = k.verifier();
        assert_eq!(check(&v, "example.com/log", policy, Some(&b)), Ok(()));
        let changed = policy.replace("false", "true ");
        assert_eq!(
            check(&v, "example.com/log", &changed, Some(&b)),
            Err(Unbound::Changed)
        );
        assert_eq!(
            check(&v, "other.example/log", policy, Some(&b)),
            Err(Unbound::Changed)
        );
        assert_eq!(
            check(&v, "example.com/log", policy, None),
            Err(Unbound::Missing)
        );
        let other = NoteSigner::from_seed("example.com/log", &[8; 32]).unwrap();
        let forged = sign(&other, &changed).unwrap();
        assert!(matches!(
            check(&v, "example.com/log", &changed, Some(&forged)),
            Err(Unbound::NotSigned(_))
        ));
        // Not a checkpoint to a checkpoint reader.
        assert!(chit_log::checkpoint::Checkpoint::parse(&text("example.com/log", policy)).is_err());
    }
}
