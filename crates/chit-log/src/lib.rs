//! The formats of chit's receipt log, and nothing else: no storage, no
//! network, no command line.
//!
//! chit keeps receipts in an append-only Merkle log that speaks the formats
//! the transparency-log world already uses (Certificate Transparency, Go's
//! checksum database, Sigstore's Rekor v2 on Tessera), so their clients and
//! witnesses can read it.
//!
//! - [`tree`]: RFC 6962 / RFC 9162 hashing (leaf `SHA-256(0x00 ‖ entry)`,
//!   node `SHA-256(0x01 ‖ left ‖ right)`), the root of any number of
//!   leaves, and inclusion and consistency proofs, made from any
//!   [`tree::HashSource`] and verified exactly by RFC 9162 §2.1.3.2 and
//!   §2.1.4.2. [`tree::append_subtrees`] gives the subtree hashes a batch
//!   of appends completes, for a store to write with the batch.
//! - [`note`]: C2SP `signed-note`: strict parsing,
//!   signing, key ids and verifier keys as Go's `sumdb/note` writes them.
//! - [`checkpoint`]: C2SP `tlog-checkpoint` (origin, size, root, extension
//!   lines), made and checked.
//! - [`cosignature`]: C2SP `tlog-cosignature`, a witness's timestamped
//!   cosignature: `cosignature/v1` (Ed25519) and ML-DSA-44 (`subtree/v1`).
//! - [`policy`]: C2SP `tlog-policy`: the logs, witnesses and quorum a
//!   reader trusts, and a checkpoint checked against them.
//! - [`proof`]: C2SP `tlog-proof`: an entry's index, inclusion proof and
//!   cosigned checkpoint, verified offline under a policy.
//! - [`witness`]: C2SP `tlog-witness`: an `add-checkpoint` request read and
//!   judged (each refusal its HTTP status), for a witness server.
//! - [`bundle`]: chit's log bundle (`chit.log.bundle.v1`): one entry, its
//!   inclusion proof and the signed checkpoint, for a verifier with only
//!   the log's key; read and proven.
//! - [`tiles`]: C2SP `tlog-tiles` paths, hash tiles and entry bundles, and
//!   [`tiles::TileSource`], a tree read from its tiles (a static folder or
//!   a URL), so proofs and roots can be recomputed from what a log serves.
//!
//! # What is proven
//!
//! - An inclusion proof that verifies against a root proves the leaf hash
//!   is at that index in the tree of that size with that root (SHA-256
//!   collision resistance assumed). The leaf hash binds the entry's exact
//!   bytes.
//! - A consistency proof that verifies proves the tree of the older size is
//!   a prefix of the newer: nothing in it was changed or removed.
//! - A signed checkpoint proves only that the log's key holder stated that
//!   root for that size under that origin. Two signed checkpoints of one
//!   origin that no consistency proof joins (or of one size with different
//!   roots) are evidence of a split view.
//! - A checkpoint carries no time. A witness cosignature adds one: the
//!   witness saw the checkpoint no later than its timestamp, by its own
//!   clock, and promises it checked consistency with what it cosigned
//!   before.

#![forbid(unsafe_code)]

//! # Example
//!
//! ```
//! use chit_log::tree::{inclusion_proof, verify_inclusion, leaf_hash, MemoryTree};
//! use chit_log::checkpoint::{open_checkpoint, Checkpoint};
//! use chit_log::note::NoteSigner;
//!
//! let mut tree = MemoryTree::new();
//! for entry in [&b"first receipt"[..], b"second", b"third"] {
//!     tree.push(entry);
//! }
//! let root = tree.root(3).unwrap();
//! let proof = inclusion_proof(&tree, 1, 3).unwrap();
//! verify_inclusion(&leaf_hash(b"second"), 1, 3, &proof, &root).unwrap();
//!
//! let key = NoteSigner::from_seed("log.example/receipts", &[42; 32]).unwrap();
//! let signed = Checkpoint::new("log.example/receipts", 3, root).sign(&key).unwrap();
//! let opened = open_checkpoint(&signed, "log.example/receipts", &key.verifier(), &[]).unwrap();
//! assert_eq!(opened.checkpoint.root, root);
//! ```
//!
//! # Written here, not taken from a crate
//!
//! The formats are small and exactly specified. `tlog_tiles` and
//! `signed_note` (Cloudflare's azul, 0.2) were read: `tlog_tiles` also pulls
//! in `serde_json`, `url` (with its IDNA tree) and a `length_prefixed`
//! helper, and follows Go's stored-hash-index interface rather than a
//! source of subtree hashes. This crate needs only the workspace's existing
//! `sha2`, `ed25519-dalek`, `base64` and `thiserror` (nothing new to build
//! or audit), parses more strictly (canonical base64 and numbers, size and
//! count limits, duplicate signatures by a known key refused) and lets a
//! store serve proofs through [`tree::HashSource`]. Every format is checked
//! against public known answers (see the tests).

pub mod bundle;
pub mod checkpoint;
pub mod cosignature;
mod lines;
pub mod note;
pub mod policy;
pub mod proof;
pub mod tiles;
pub mod tree;
pub mod witness;

pub use checkpoint::{Checkpoint, CosignatureVerifier, Cosigner, SignedCheckpoint};
pub use note::{NoteSigner, NoteVerifier};
pub use tree::{Hash, HashSource, MemoryTree, ProofError};
