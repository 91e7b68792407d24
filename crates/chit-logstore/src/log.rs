//! The sequencer: a log over any [`Store`], its policy and its key.
//!
//! Submitting a batch, step by step:
//!
//! 1. `check`: every submission gets the policy's verdict, on all cores;
//! 2. `dedup`: a submission the log holds (by SHA-256 of its bytes), or one
//!    given twice, is answered with its existing index;
//! 3. `streams`: packets are held to P1, P2 and P4 across the log;
//! 4. `tree`: the new leaves' hash tiles and the new root;
//! 5. `sign`: a checkpoint of the new size, signed with the log's key;
//! 6. `commit`: entries, tiles, packets and checkpoint in one durable
//!    transaction, only at the size computed for (else back to 2).
//!
//! Nothing is acknowledged before step 6 returns.

use crate::policy::{Admission, Compiled, Policy, Submitted};
use crate::store::{now_millis, Batch, Meta, NewEntry, Store, StoreError};
use crate::streams::StreamCheck;
use chit_core::report::Status;
use chit_core::Report;
use chit_log::checkpoint::{open_checkpoint, Checkpoint, SignedCheckpoint};
use chit_log::note::{NoteSigner, NoteVerifier};
use chit_log::tiles::{self, Tile, TileKind, TILE_HEIGHT, TILE_WIDTH};
use chit_log::tree::{self, Hash, ProofError};
use chit_log::CosignatureVerifier;
use std::cell::RefCell;
use std::collections::HashMap;

/// Why a log operation failed (never a verdict on a submission: those are
/// [`Outcome`]s).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Key(String),
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    #[error("{0}")]
    Proof(#[from] ProofError),
    #[error("{0}")]
    Checkpoint(String),
    #[error("{0}")]
    Io(String),
    /// The stored policy is not the one the log's key bound.
    #[error("{0}")]
    Unbound(String),
}

/// What became of one submission.
#[derive(Debug)]
pub enum Outcome {
    /// Appended at `index`. `leaf` is its leaf hash in the tree (RFC
    /// 9162), where its inclusion proof starts.
    Appended {
        index: u64,
        sha256: Hash,
        leaf: Hash,
        status: Status,
    },
    /// Already in the log at `index` (the same bytes, so the same leaf).
    Duplicate {
        index: u64,
        sha256: Hash,
        leaf: Hash,
    },
    /// Refused: not valid under the log's policy, or breaking its stream.
    Refused(Report),
    /// Not readable (not JSON, mis-encoded, too large for an entry).
    Unreadable(String),
}

impl Outcome {
    pub fn index(&self) -> Option<u64> {
        match self {
            Outcome::Appended { index, .. } | Outcome::Duplicate { index, .. } => Some(*index),
            _ => None,
        }
    }
}

/// An entry as chit's front ends name one: by its index, or by its
/// content address (`sha256:HEX`, the SHA-256 of its bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryName {
    Index(u64),
    Address(Hash),
}

impl std::str::FromStr for EntryName {
    /// Why the text names no entry, in a line.
    type Err = &'static str;

    fn from_str(text: &str) -> Result<EntryName, &'static str> {
        if let Some(hex) = text.strip_prefix("sha256:") {
            return chit_core::digest::unhex32(hex)
                .map(EntryName::Address)
                .ok_or("sha256: takes 64 hex digits");
        }
        text.parse()
            .map(EntryName::Index)
            .map_err(|_| "give an index (0, 1, …) or sha256:HEX")
    }
}

/// The answer to a batch: each submission's outcome, and the signed
/// checkpoint that covers every entry appended (or found).
#[derive(Debug)]
pub struct Submission {
    pub outcomes: Vec<Outcome>,
    pub size: u64,
    pub checkpoint: Vec<u8>,
    /// The hash tiles the batch wrote, `(tile level, tile index, hashes)`
    /// as stored now (none when nothing was appended): with them,
    /// [`Log::inclusion_proofs_over`] proves the batch's entries without
    /// reading the store's right edge again.
    pub tiles: Vec<(u8, u64, Vec<u8>)>,
}

/// Hash tiles by `(tile level, tile index)`: a tree's right edge.
type Edge = HashMap<(u8, u64), Vec<u8>>;

/// A log: its store, description, policy and (to append) its key.
pub struct Log {
    store: Box<dyn Store>,
    meta: Meta,
    policy: std::sync::Arc<Compiled>,
    verifier: NoteVerifier,
    /// A trust policy of the log's own key alone (no witnesses): what
    /// every bundle and proof it hands out is verified under first.
    own: chit_log::policy::Policy,
    signer: Option<NoteSigner>,
    /// The checkpoint this log last committed, with its size and root: a
    /// stored head with these very bytes is one this log signed, and its
    /// signature is not checked again. Forgotten when the stored tree is
    /// found not to be the one it signs.
    written: Option<(Vec<u8>, u64, Hash)>,
    /// Whether the stored tree is known to give the stored head's root:
    /// checked, or written by this log, and the store has not said since
    /// that anyone else wrote to it ([`Store::changed_elsewhere`]). Until
    /// then a batch reads the tree back and checks it first.
    tree_checked: bool,
    /// Complete subtree hashes read or made from this store (see
    /// [`Subtrees`]).
    subtrees: Subtrees,
    /// The right edge of the tree this log last committed (that checkpoint's
    /// bytes, and the partial tiles): the next batch's edge while the
    /// stored head is still those very bytes (the same tree, so the same
    /// tiles), instead of reading it back.
    edge: Option<(Vec<u8>, Edge)>,
}

/// Complete subtree hashes, by `(level, index)`, kept from one batch (or
/// one proof) to the next: in an append-only log a complete subtree never
/// changes, and without them each batch hashed its tree's right edge again
/// from the partial tiles twice (the stored root, the new root: some 400
/// hashes) and each proof hashed up the tiles under it. Emptied when the
/// store was changed by anyone else (and so could have been edited), when
/// a batch's commit fails (its hashes were of tiles never written), and
/// when it holds [`Subtrees::MOST`].
#[derive(Default)]
struct Subtrees(HashMap<(u8, u64), Hash>);

impl Subtrees {
    const MOST: usize = 1 << 16;

    fn get(&self, level: u8, index: u64) -> Option<Hash> {
        self.0.get(&(level, index)).copied()
    }

    fn insert(&mut self, level: u8, index: u64, h: Hash) {
        if self.0.len() >= Self::MOST {
            self.0.clear();
        }
        self.0.insert((level, index), h);
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// How many times a batch is recomputed when another sequencer commits first.
const RETRIES: usize = 16;

/// The stored head a batch extends: its size, its checkpoint's bytes and
/// its tree's right edge.
struct Head {
    size: u64,
    note: Vec<u8>,
    edge: Edge,
}

/// A batch planned over a head: each submission's outcome, what is to be
/// written, and the new entries' leaf hashes.
struct Planned<'a> {
    outcomes: Vec<Outcome>,
    batch: Batch<'a>,
    leaves: Vec<Hash>,
}

impl Log {
    /// Creates a log in an empty store: its description, policy and the
    /// signed checkpoint of the empty tree.
    pub fn init(
        mut store: Box<dyn Store>,
        signer: NoteSigner,
        policy: &Policy,
        key_file: Option<String>,
    ) -> Result<Log, LogError> {
        let compiled = policy.compile().map_err(LogError::Policy)?;
        let origin = signer.name().to_string();
        let stored = policy.to_json();
        let binding = crate::binding::sign(&signer, &stored)
            .map_err(|e| LogError::Checkpoint(e.to_string()))?;
        let meta = Meta {
            origin: origin.clone(),
            verifier_key: signer.verifier_key(),
            policy: stored,
            key_file,
            policy_binding: Some(binding),
        };
        let first = Checkpoint::new(&origin, 0, tree::EMPTY_ROOT)
            .sign(&signer)
            .map_err(|e| LogError::Checkpoint(e.to_string()))?;
        store.create(&meta, &first)?;
        let verifier = signer.verifier();
        Ok(Log {
            store,
            meta,
            policy: std::sync::Arc::new(compiled),
            own: chit_log::policy::Policy::of_log(verifier.clone()),
            verifier,
            signer: Some(signer),
            written: None,
            edge: None,
            tree_checked: false,
            subtrees: Subtrees::default(),
        })
    }

    /// Creates a log where a location names a new store
    /// ([`crate::create`]: a new log folder or SQLite file, never over
    /// one, or a PostgreSQL schema holding none). What was made here for
    /// a log that could not be made is removed.
    pub fn create(
        location: &str,
        signer: NoteSigner,
        policy: &Policy,
        key_file: Option<String>,
    ) -> Result<Log, LogError> {
        let store = crate::create(location)?;
        Log::init(store, signer, policy, key_file).map_err(|e| {
            if crate::is_postgres(location) {
                return LogError::Io(format!("cannot make a log in {location}: {e}"));
            }
            crate::remove_created(location);
            LogError::Io(format!(
                "cannot make a log in {location} (nothing was left there): {e}"
            ))
        })
    }

    /// Opens the log a store holds (to read; [`Log::with_signer`] to append).
    pub fn open(mut store: Box<dyn Store>) -> Result<Log, LogError> {
        let meta = store.meta()?;
        let policy = Policy::from_json(&meta.policy)
            .and_then(|p| p.compile())
            .map_err(LogError::Policy)?;
        let verifier = NoteVerifier::from_verifier_key(&meta.verifier_key)
            .map_err(|e| LogError::Key(format!("the stored log key: {e}")))?;
        Ok(Log {
            store,
            meta,
            policy: std::sync::Arc::new(policy),
            own: chit_log::policy::Policy::of_log(verifier.clone()),
            verifier,
            signer: None,
            written: None,
            edge: None,
            tree_checked: false,
            subtrees: Subtrees::default(),
        })
    }

    /// Adds the log's private key, to append: it must be the key the log
    /// was made with, and the stored policy the one it bound. A log with no
    /// binding (made before policies were bound, or its binding removed)
    /// is refused: its policy could have been changed by anyone.
    pub fn with_signer(mut self, pem: &str) -> Result<Log, LogError> {
        self.sign_with(pem, false)?;
        Ok(self)
    }

    /// [`Log::with_signer`] on a log already held: refused, it is left
    /// as it was, without a key.
    pub fn add_signer(&mut self, pem: &str) -> Result<(), LogError> {
        self.sign_with(pem, false)
    }

    /// [`Log::with_signer`] for a log that may have no binding yet, to bind
    /// its policy ([`Log::bind_policy`]); a binding that does not match is
    /// still refused.
    pub fn with_signer_to_bind(mut self, pem: &str) -> Result<Log, LogError> {
        self.sign_with(pem, true)?;
        Ok(self)
    }

    fn sign_with(&mut self, pem: &str, unbound_too: bool) -> Result<(), LogError> {
        let signer = NoteSigner::from_pkcs8_pem(&self.meta.origin, pem)
            .map_err(|e| LogError::Key(e.to_string()))?;
        if signer.verifier_key() != self.meta.verifier_key {
            return Err(LogError::Key(format!(
                "this key is not the log's: {} is signed by {}",
                self.meta.origin, self.meta.verifier_key
            )));
        }
        match self.policy_binding() {
            Ok(()) => {}
            Err(crate::binding::Unbound::Missing) if unbound_too => {}
            Err(why) => {
                return Err(LogError::Unbound(format!(
                    "{}: {why}",
                    self.store.location()
                )))
            }
        }
        self.signer = Some(signer);
        Ok(())
    }

    /// Whether the stored policy is the one the log's key bound.
    pub fn policy_binding(&self) -> Result<(), crate::binding::Unbound> {
        crate::binding::check(
            &self.verifier,
            &self.meta.origin,
            &self.meta.policy,
            self.meta.policy_binding.as_deref(),
        )
    }

    /// Binds the stored policy to a log that has no binding (one made
    /// before policies were bound), with the log's key: its operator's
    /// word that the policy is the one set. False where one is there.
    pub fn bind_policy(&mut self) -> Result<bool, LogError> {
        let signer = self
            .signer
            .as_ref()
            .ok_or_else(|| LogError::Key("binding a policy needs the log's key".into()))?;
        let binding = crate::binding::sign(signer, &self.meta.policy)
            .map_err(|e| LogError::Checkpoint(e.to_string()))?;
        let bound = self.store.bind_policy(&binding)?;
        if bound {
            self.meta.policy_binding = Some(binding);
        }
        Ok(bound)
    }

    /// Becomes the log's one sequencer (see [`Store::lease`]).
    pub fn lease(&mut self, wait: std::time::Duration) -> Result<(), LogError> {
        Ok(self.store.lease(wait)?)
    }

    /// Gives the sequencer's lease back (see [`Store::release`]).
    pub fn release(&mut self) -> Result<(), LogError> {
        Ok(self.store.release()?)
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The trust policy of the log's own key alone, no witnesses: what a
    /// reader who holds only the log's verifier key proves its entries by.
    pub fn own_policy(&self) -> &chit_log::policy::Policy {
        &self.own
    }

    pub fn policy(&self) -> &Policy {
        &self.policy.policy
    }

    pub fn verifier(&self) -> &NoteVerifier {
        &self.verifier
    }

    pub fn store(&mut self) -> &mut dyn Store {
        &mut *self.store
    }

    /// The size and signed checkpoint, with the checkpoint's signature and
    /// origin checked and its size held to the store's.
    pub fn head(&mut self) -> Result<(u64, Vec<u8>), LogError> {
        let (size, note) = self.store.head()?;
        let opened = self.open_checkpoint(&note, &[])?;
        if opened.checkpoint.size != size {
            return Err(LogError::Checkpoint(format!(
                "the store's latest checkpoint is for size {}, but it holds {size} entries",
                opened.checkpoint.size
            )));
        }
        Ok((size, note))
    }

    /// Opens a signed checkpoint of this log.
    pub fn open_checkpoint(
        &self,
        note: &[u8],
        witnesses: &[CosignatureVerifier],
    ) -> Result<SignedCheckpoint, LogError> {
        open_checkpoint(note, &self.meta.origin, &self.verifier, witnesses)
            .map_err(|e| LogError::Checkpoint(format!("the log's checkpoint: {e}")))
    }

    /// The policy's verdict on one submission, without appending it.
    pub fn decide(&self, bytes: &[u8]) -> Admission {
        self.policy.decide(bytes)
    }

    /// The policy, to check submissions on another thread while this log
    /// appends the batch before ([`Log::submit_checked`]).
    pub fn checker(&self) -> std::sync::Arc<Compiled> {
        self.policy.clone()
    }

    /// Checks and appends a batch of submissions: see the module
    /// documentation for the steps. Returns once the batch is durable.
    pub fn submit<B: AsRef<[u8]>>(&mut self, inputs: &[B]) -> Result<Submission, LogError> {
        let checked = self
            .policy
            .check_all(inputs.iter().map(|b| b.as_ref().to_vec()).collect());
        self.submit_checked(&checked)
    }

    /// Steps 2-6 for submissions this log's policy checked
    /// ([`Compiled::check_all`] on [`Log::checker`]); their bytes are
    /// written as they are, not copied.
    pub fn submit_checked(&mut self, checked: &[Submitted]) -> Result<Submission, LogError> {
        if self.signer.is_none() {
            return Err(LogError::Key(
                "appending needs the log's private key (--key)".into(),
            ));
        }
        let mut last_conflict = None;
        for _ in 0..RETRIES {
            let head = self.head_to_extend()?;
            let Some(planned) = self.plan(checked, &head)? else {
                // Another sequencer committed in between: read again.
                last_conflict = Some(StoreError::Conflict {
                    expected: head.size,
                    found: head.size + 1,
                });
                continue;
            };
            if planned.batch.entries.is_empty() {
                self.edge = Some((head.note.clone(), head.edge));
                return Ok(Submission {
                    outcomes: planned.outcomes,
                    size: head.size,
                    checkpoint: head.note,
                    tiles: Vec::new(),
                });
            }
            let Planned {
                outcomes,
                mut batch,
                leaves,
            } = planned;
            let root = self.grow_and_sign(&mut batch, &leaves, &head)?;
            match self.store.commit(&batch) {
                Ok(()) => return Ok(self.committed(batch, root, head.edge, outcomes)),
                Err(StoreError::Conflict { expected, found }) => {
                    self.subtrees.clear();
                    last_conflict = Some(StoreError::Conflict { expected, found });
                }
                Err(e) => {
                    self.subtrees.clear();
                    return Err(e.into());
                }
            }
        }
        Err(last_conflict
            .map(LogError::Store)
            .unwrap_or_else(|| LogError::Io("the batch could not be committed".into())))
    }

    /// Step 1 of a batch: the stored head and its tree's right edge, the
    /// stored tree held to the root its checkpoint signs (once, until the
    /// store says someone else wrote to it). Only what this log signed is
    /// extended.
    fn head_to_extend(&mut self) -> Result<Head, LogError> {
        if self.store.changed_elsewhere()? {
            // The stored tree may have changed since this log checked or
            // wrote it: it is read and checked again below.
            self.tree_checked = false;
            self.subtrees.clear();
            self.edge = None;
        }
        let (size, note) = self.store.head()?;
        // The partial tile at each level: the stored tree's right edge,
        // which both its root and the batch's new tiles are made from.
        let edge = match self.edge.take() {
            Some((bytes, kept)) if bytes == note => kept,
            _ => read_right_edge(&mut *self.store, size)?,
        };
        // A head with the very bytes this log last committed is one it
        // signed (its signature is not checked again); its tiles are not
        // read back where the store says no one else has written since.
        let ours = match &self.written {
            Some((bytes, size, root)) if *bytes == note => Some((*size, *root)),
            _ => None,
        };
        if !(self.tree_checked && ours.is_some()) {
            self.subtrees.clear();
            let (signed_size, signed_root) = match ours {
                Some(sr) => sr,
                None => {
                    let signed = open_checkpoint(&note, &self.meta.origin, &self.verifier, &[])
                        .map_err(|e| {
                            LogError::Checkpoint(format!("the log's latest checkpoint: {e}"))
                        })?;
                    (signed.checkpoint.size, signed.checkpoint.root)
                }
            };
            let view: HashMap<(u8, u64), &[u8]> = edge.iter().map(|(k, d)| (*k, &d[..])).collect();
            let src = StoreTiles::new(&mut *self.store, Some(&view), size, &mut self.subtrees);
            let stored_root = tree::root(&src, size);
            if signed_size != size || stored_root.ok() != Some(signed_root) {
                // Never taken on trust again until a commit of its own.
                self.written = None;
                self.tree_checked = false;
                self.subtrees.clear();
                return Err(LogError::Checkpoint(format!(
                    "the tree its tiles hold ({size} entries) is not the one its latest checkpoint signs \
                     (edited behind chit's back?): nothing appended; run chit log audit"
                )));
            }
            self.tree_checked = true;
        }
        Ok(Head { size, note, edge })
    }

    /// Steps 2 and 3 of a batch: each submission's outcome in order, a
    /// duplicate answered with where it is, a packet held to its logged
    /// stream ([`StreamCheck::admit`]), the rest appended; or None where
    /// another sequencer committed since the head was read (the batch is
    /// planned again, so no index is answered that the checkpoint given
    /// does not cover).
    fn plan<'a>(
        &mut self,
        checked: &'a [Submitted],
        head: &Head,
    ) -> Result<Option<Planned<'a>>, LogError> {
        let size = head.size;
        let accepted: Vec<Hash> = checked
            .iter()
            .filter(|c| matches!(c.verdict, Admission::Accept { .. }))
            .map(|c| c.sha256)
            .collect();
        // What the log holds of the batch: its receipts, and the logged
        // packets its streams' rules need (one read).
        let packets: Vec<_> = checked
            .iter()
            .filter_map(|c| match &c.verdict {
                Admission::Accept {
                    packet: Some(p), ..
                } => Some(&**p),
                _ => None,
            })
            .collect();
        let keys = StreamCheck::keys(&packets);
        let (found, rows) = self.store.lookup(&accepted, &keys.at, &keys.named)?;
        if found.iter().flatten().any(|&i| i >= size) {
            return Ok(None);
        }
        let mut known: HashMap<Hash, u64> = accepted
            .iter()
            .zip(found)
            .filter_map(|(h, i)| i.map(|i| (*h, i)))
            .collect();
        let mut streams = StreamCheck::from_rows(rows);
        let mut batch = Batch {
            old_size: size,
            ..Batch::default()
        };
        let at = now_millis();
        let mut leaves: Vec<Hash> = Vec::with_capacity(checked.len());
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(checked.len());
        for c in checked {
            let (status, kind, art_id, packet) = match &c.verdict {
                Admission::Unreadable(why) => {
                    outcomes.push(Outcome::Unreadable(why.clone()));
                    continue;
                }
                Admission::Refuse(r) => {
                    outcomes.push(Outcome::Refused(r.clone()));
                    continue;
                }
                Admission::Accept {
                    status,
                    kind,
                    art_id,
                    packet,
                } => (status, kind, art_id, packet),
            };
            if let Some(&index) = known.get(&c.sha256) {
                outcomes.push(Outcome::Duplicate {
                    index,
                    sha256: c.sha256,
                    leaf: c.leaf,
                });
                continue;
            }
            let index = size + batch.entries.len() as u64;
            let row = match packet {
                Some(p) => match streams.admit(p, index) {
                    Ok(row) => Some(row),
                    Err(r) => {
                        outcomes.push(Outcome::Refused(r));
                        continue;
                    }
                },
                None => None,
            };
            batch.labels.push(crate::store::Label {
                index,
                kind: kind.to_string(),
                art_id: art_id.clone(),
                stream_id: packet.as_ref().map(|p| p.stream_id.to_string()),
            });
            batch.packets.extend(row);
            known.insert(c.sha256, index);
            leaves.push(c.leaf);
            batch.entries.push(NewEntry {
                index,
                sha256: c.sha256,
                data: &c.bytes,
                integrated_at: at,
            });
            outcomes.push(Outcome::Appended {
                index,
                sha256: c.sha256,
                leaf: c.leaf,
                status: *status,
            });
        }
        Ok(Some(Planned {
            outcomes,
            batch,
            leaves,
        }))
    }

    /// Appends `checked` (read from another store holding this log, in
    /// index order) as one batch whose checkpoint is `note`, the one that
    /// store keeps for the batch's new size: a log copied without its
    /// private key, every checkpoint as it was signed and cosigned. Each
    /// entry must be appended (valid under the log's policy, no duplicate,
    /// its packet admitted to its stream), `integrated_at` gives each its
    /// time, and the note must verify under the log's key and sign the
    /// tree the entries give, else nothing is written.
    pub fn replay(
        &mut self,
        checked: &[Submitted],
        integrated_at: &[i64],
        note: &[u8],
    ) -> Result<u64, LogError> {
        let head = self.head_to_extend()?;
        let Some(planned) = self.plan(checked, &head)? else {
            return Err(LogError::Io(
                "another sequencer appended to the copy while it was made".into(),
            ));
        };
        let Planned {
            outcomes,
            mut batch,
            leaves,
        } = planned;
        for (n, outcome) in outcomes.iter().enumerate() {
            let index = head.size + n as u64;
            let why = match outcome {
                Outcome::Appended { .. } => continue,
                Outcome::Duplicate { index: first, .. } => {
                    format!("it repeats entry {first}")
                }
                Outcome::Refused(r) => r
                    .errors
                    .iter()
                    .map(|f| format!("{} {}", f.rule, f.message))
                    .collect::<Vec<_>>()
                    .join("; "),
                Outcome::Unreadable(why) => why.clone(),
            };
            return Err(LogError::Io(format!(
                "entry {index} cannot be appended under the log's policy: {why}"
            )));
        }
        for (e, at) in batch.entries.iter_mut().zip(integrated_at) {
            e.integrated_at = *at;
        }
        let root = self.grow_tree(&mut batch, &leaves, &head)?;
        let new_size = batch.new_size();
        let signed = self.open_checkpoint(note, &[])?;
        if signed.checkpoint.size != new_size || signed.checkpoint.root != root {
            self.subtrees.clear();
            return Err(LogError::Checkpoint(format!(
                "the checkpoint of size {} does not sign the tree the entries give at size \
                 {new_size}",
                signed.checkpoint.size
            )));
        }
        batch.checkpoint = note.to_vec();
        if let Err(e) = self.store.commit(&batch) {
            self.subtrees.clear();
            return Err(e.into());
        }
        self.committed(batch, root, head.edge, outcomes);
        Ok(new_size)
    }

    /// Step 4 of a batch: the tree grown by its leaves (the tiles it
    /// completes or changes), and its new root.
    fn grow_tree(
        &mut self,
        batch: &mut Batch,
        leaves: &[Hash],
        head: &Head,
    ) -> Result<Hash, LogError> {
        let edge: HashMap<(u8, u64), &[u8]> = head.edge.iter().map(|(k, d)| (*k, &d[..])).collect();
        batch.tiles = grow(&mut *self.store, head.size, leaves, Some(&edge))?;
        let new_size = batch.new_size();
        let root = {
            let overlay = overlay(&batch.tiles);
            let src = StoreTiles::new(
                &mut *self.store,
                Some(&overlay),
                new_size,
                &mut self.subtrees,
            );
            tree::root(&src, new_size)
        };
        // A failed commit leaves hashes of tiles never written.
        Ok(root.inspect_err(|_| self.subtrees.clear())?)
    }

    /// Steps 4 and 5 of a batch: the tree grown ([`Log::grow_tree`]) and
    /// the checkpoint of its new root signed.
    fn grow_and_sign(
        &mut self,
        batch: &mut Batch,
        leaves: &[Hash],
        head: &Head,
    ) -> Result<Hash, LogError> {
        let root = self.grow_tree(batch, leaves, head)?;
        let new_size = batch.new_size();
        let signer = self
            .signer
            .as_ref()
            .ok_or_else(|| LogError::Key("appending needs the log's private key (--key)".into()))?;
        batch.checkpoint = Checkpoint::new(&self.meta.origin, new_size, root)
            .sign(signer)
            .map_err(|e| LogError::Checkpoint(e.to_string()))?;
        Ok(root)
    }

    /// Step 6, done: the batch is committed. What this log now knows of
    /// the store (the checkpoint it wrote, the tree's new right edge: the
    /// tiles the batch grew, and the old edge's where a level's partial
    /// tile did not change), and the submission's answer.
    fn committed(
        &mut self,
        batch: Batch,
        root: Hash,
        old_edge: Edge,
        outcomes: Vec<Outcome>,
    ) -> Submission {
        let new_size = batch.new_size();
        self.written = Some((batch.checkpoint.clone(), new_size, root));
        self.tree_checked = true;
        let keep = edge_keys(new_size);
        let mut next = old_edge;
        next.retain(|k, _| keep.contains(k));
        for (level, index, data) in &batch.tiles {
            if keep.contains(&(*level, *index)) {
                next.insert((*level, *index), data.clone());
            }
        }
        self.edge = Some((batch.checkpoint.clone(), next));
        Submission {
            outcomes,
            size: new_size,
            checkpoint: batch.checkpoint,
            tiles: batch.tiles,
        }
    }

    /// A source of the tree of `size` leaves, read from the stored tiles
    /// (and the complete subtree hashes this log already knows).
    pub fn hash_source(&mut self, size: u64) -> StoreTiles<'_> {
        StoreTiles::new(&mut *self.store, None, size, &mut self.subtrees)
    }

    /// The inclusion proof of `index` in the tree of `size` leaves.
    pub fn inclusion_proof(&mut self, index: u64, size: u64) -> Result<Vec<Hash>, LogError> {
        let src = self.hash_source(size);
        Ok(tree::inclusion_proof(&src, index, size)?)
    }

    /// Inclusion proofs of many entries in the tree of `size` leaves, each
    /// subtree hash computed once for all of them (a batch's answers).
    pub fn inclusion_proofs(
        &mut self,
        indexes: &[u64],
        size: u64,
    ) -> Result<Vec<Vec<Hash>>, LogError> {
        self.inclusion_proofs_over(indexes, size, &[])
    }

    /// [`Log::inclusion_proofs`] where `written` holds tiles of the tree of
    /// `size` leaves (a committed batch's [`Submission::tiles`]): those are
    /// not read from the store. The tiles a batch wrote are its tree's
    /// right edge, which its entries' proofs mostly climb.
    pub fn inclusion_proofs_over(
        &mut self,
        indexes: &[u64],
        size: u64,
        written: &[(u8, u64, Vec<u8>)],
    ) -> Result<Vec<Vec<Hash>>, LogError> {
        let overlay = overlay(written);
        let src = StoreTiles::new(&mut *self.store, Some(&overlay), size, &mut self.subtrees);
        indexes
            .iter()
            .map(|&i| Ok(tree::inclusion_proof(&src, i, size)?))
            .collect()
    }

    /// The consistency proof between two sizes.
    pub fn consistency_proof(&mut self, old: u64, new: u64) -> Result<Vec<Hash>, LogError> {
        let src = self.hash_source(new);
        Ok(tree::consistency_proof(&src, old, new)?)
    }

    /// A quick check before the log is served, not an audit: its last
    /// entries (those of the last hash tile) have the content addresses
    /// their rows record, its latest checkpoint verifies under its key, the
    /// tree its tiles hold is the one that checkpoint signs, and those
    /// entries hash to what that tile holds.
    pub fn quick_check(&mut self) -> Result<(), LogError> {
        // The last entries first: one changed is named, not only the root
        // it changes (a log folder's growing tile is its entries' hashes).
        let width = u64::from(TILE_WIDTH);
        let (stored, _) = self.store.head()?;
        let first = stored.saturating_sub(1) / width * width;
        let mut wrong = None;
        self.store.scan(first, stored, &mut |e| {
            if chit_core::digest::sha256(&e.data) != e.sha256 {
                wrong.get_or_insert(e.index);
            }
            Ok(())
        })?;
        if let Some(index) = wrong {
            return Err(changed(index));
        }
        // A batch's own first step: the checkpoint verified and the stored
        // tree held to the root it signs (remembered, so the first batch
        // does not do it again).
        let size = self.head_to_extend()?.size;
        if size == 0 {
            return Ok(());
        }
        let first = (size - 1) / width * width;
        let hashes = self.store.tile(0, first / width)?.unwrap_or_default();
        let mut next = first;
        self.store.scan(first, size, &mut |e| {
            let held = e
                .index
                .checked_sub(first)
                .and_then(|i| hashes.get(i as usize * 32..i as usize * 32 + 32));
            if e.index != next || held != Some(&tree::leaf_hash(&e.data)[..]) {
                wrong.get_or_insert(next);
            }
            next = e.index + 1;
            Ok(())
        })?;
        if next < size {
            wrong.get_or_insert(next);
        }
        match wrong {
            Some(index) => Err(changed(index)),
            None => Ok(()),
        }
    }

    /// The root of the tree of `size` leaves, from the stored tiles.
    pub fn root(&mut self, size: u64) -> Result<Hash, LogError> {
        let src = self.hash_source(size);
        Ok(tree::root(&src, size)?)
    }

    /// The index of the entry `name` names: an index as given (see
    /// [`Log::entry`] for one past the end), a content address looked up
    /// (`None` where no entry has it).
    pub fn locate(&mut self, name: EntryName) -> Result<Option<u64>, LogError> {
        match name {
            EntryName::Index(index) => Ok(Some(index)),
            EntryName::Address(sha256) => {
                Ok(self.store.find(&[sha256])?.first().copied().flatten())
            }
        }
    }

    /// Entry `index` of the tree the newest checkpoint signs:
    /// [`ProofError::IndexOutOfRange`] past its end.
    pub fn entry(&mut self, index: u64) -> Result<crate::store::Entry, LogError> {
        Ok(self.signed_entry(index)?.0)
    }

    /// Entry `index` and the newest checkpoint, `(size, note)`, whose
    /// tree holds it; one the store lacks is a read error that says what
    /// to run.
    fn signed_entry(
        &mut self,
        index: u64,
    ) -> Result<(crate::store::Entry, (u64, Vec<u8>)), LogError> {
        let (size, note) = self.head()?;
        if index >= size {
            return Err(LogError::Proof(ProofError::IndexOutOfRange { index, size }));
        }
        let entry = self.store.entry(index)?.ok_or_else(|| {
            StoreError::Read(format!(
                "entry {index} is missing from the store (run chit log audit)"
            ))
        })?;
        Ok((entry, (size, note)))
    }

    /// A log bundle of one entry: its bytes, its inclusion proof and the
    /// latest signed checkpoint.
    pub fn bundle(&mut self, index: u64) -> Result<chit_log::bundle::Bundle, LogError> {
        let (entry, (size, note)) = self.signed_entry(index)?;
        let proof = self.inclusion_proof(index, size)?;
        let bundle = chit_log::bundle::Bundle {
            origin: self.meta.origin.clone(),
            index,
            entry: entry.data,
            inclusion_proof: proof,
            checkpoint: note,
        };
        // Never hand out what does not verify.
        bundle.verify(&self.own).map_err(|e| {
            LogError::Checkpoint(format!("entry {index}: {e} (run chit log audit)"))
        })?;
        Ok(bundle)
    }

    /// A C2SP tlog-proof of one entry: its index and inclusion proof under
    /// the latest checkpoint whose cosignatures meet `quorum`'s (stored
    /// with their checkpoint as witnesses answered), or, with no such
    /// checkpoint or none asked, under the latest, with what cosignatures
    /// it has. Verified before it is handed out.
    pub fn tlog_proof(
        &mut self,
        index: u64,
        quorum: Option<&chit_log::policy::Policy>,
    ) -> Result<chit_log::proof::TlogProof, LogError> {
        let (entry, mut chosen) = self.signed_entry(index)?;
        if let Some(q) = quorum {
            if !q.open(&chosen.1).is_ok_and(|w| w.quorum) {
                if let Some(c) = self.newest_cosigned(q, index)? {
                    chosen = c;
                }
            }
        }
        let (size, note) = chosen;
        let proof = chit_log::proof::TlogProof {
            extra: None,
            index,
            inclusion_proof: self.inclusion_proof(index, size)?,
            checkpoint: note,
        };
        // Never hand out what does not verify.
        proof
            .verify(&chit_log::tree::leaf_hash(&entry.data), &self.own)
            .map_err(|e| {
                LogError::Checkpoint(format!("entry {index}: {e} (run chit log audit)"))
            })?;
        Ok(proof)
    }

    /// The newest stored checkpoint past size `above` whose cosignatures
    /// (stored with it as witnesses answered) meet `quorum`'s, as
    /// `(size, note)`: the newest first, none at or below `above` opened.
    pub fn newest_cosigned(
        &mut self,
        quorum: &chit_log::policy::Policy,
        above: u64,
    ) -> Result<Option<(u64, Vec<u8>)>, LogError> {
        let kept = self.store.checkpoints()?;
        Ok(kept
            .into_iter()
            .rev()
            .take_while(|(size, _)| *size > above)
            .find(|(_, note)| quorum.open(note).is_ok_and(|w| w.quorum)))
    }
}

/// A batch's tiles (`(tile level, tile index, hashes)`) by `(level,
/// index)`: the overlay [`StoreTiles`] reads before the store.
fn overlay(tiles: &[(u8, u64, Vec<u8>)]) -> HashMap<(u8, u64), &[u8]> {
    tiles.iter().map(|(l, i, d)| ((*l, *i), &d[..])).collect()
}

/// Reads one tile from a store (or a batch's overlay), cut to its width.
fn read_tile(
    store: &mut dyn Store,
    t: &Tile,
    overlay: Option<&HashMap<(u8, u64), &[u8]>>,
) -> Result<Vec<u8>, String> {
    let TileKind::Hashes(level) = t.kind else {
        return Err("not a hash tile".into());
    };
    let want = usize::from(t.width) * 32;
    let mut data = match overlay.and_then(|o| o.get(&(level, t.index))) {
        Some(d) => d[..want.min(d.len())].to_vec(),
        None => store
            .tile(level, t.index)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("tile {} is missing from the store", t.path()))?,
    };
    if data.len() < want {
        return Err(format!(
            "tile {} holds {} hashes, fewer than {}",
            t.path(),
            data.len() / 32,
            t.width
        ));
    }
    data.truncate(want);
    Ok(data)
}

/// The tree of one size, read from a store's hash tiles (and a batch's
/// tiles not yet committed, `overlay`): each tile read and parsed once, and
/// each complete subtree hash it gives kept in the log's `Subtrees`.
pub struct StoreTiles<'a> {
    store: RefCell<&'a mut dyn Store>,
    overlay: Option<&'a HashMap<(u8, u64), &'a [u8]>>,
    size: u64,
    tiles: RefCell<HashMap<(u8, u64), Vec<Hash>>>,
    subtrees: RefCell<&'a mut Subtrees>,
}

impl<'a> StoreTiles<'a> {
    fn new(
        store: &'a mut dyn Store,
        overlay: Option<&'a HashMap<(u8, u64), &'a [u8]>>,
        size: u64,
        subtrees: &'a mut Subtrees,
    ) -> Self {
        StoreTiles {
            store: RefCell::new(store),
            overlay,
            size,
            tiles: RefCell::default(),
            subtrees: RefCell::new(subtrees),
        }
    }
}

impl tree::HashSource for StoreTiles<'_> {
    fn size(&self) -> u64 {
        self.size
    }
    fn subtree_hash(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        let (tile, at, count) = tiles::subtree_in_tiles(self.size, level, index)?;
        if let Some(h) = self.subtrees.borrow().get(level, index) {
            return Ok(h);
        }
        let TileKind::Hashes(tile_level) = tile.kind else {
            unreachable!("subtree_in_tiles gives hash tiles")
        };
        let mut cache = self.tiles.borrow_mut();
        let hashes = match cache.entry((tile_level, tile.index)) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let data = read_tile(&mut **self.store.borrow_mut(), &tile, self.overlay)
                    .and_then(|d| tiles::parse_hash_tile(&d, tile.width).map_err(|e| e.to_string()))
                    .map_err(|e| ProofError::Source(format!("{}: {e}", tile.path())))?;
                v.insert(data)
            }
        };
        let nodes = hashes
            .get(at..at + count)
            .ok_or_else(|| ProofError::Source(format!("{}: too few hashes", tile.path())))?;
        let h = tiles::hash_up(nodes);
        self.subtrees.borrow_mut().insert(level, index, h);
        Ok(h)
    }
}

/// The root of a full tile's 256 hashes: the subtree hash one tile level up.
pub fn tile_root(hashes: &[u8]) -> Hash {
    let nodes: Vec<Hash> = hashes
        .chunks_exact(32)
        .map(|c| c.try_into().expect("32 bytes"))
        .collect();
    tiles::hash_up(&nodes)
}

/// The stored tiles of a tree's right edge ([`tiles::right_edge`]), read
/// at once, by `(level, index)`. A tile may be wider than the tree needs
/// (a partial tile grows in place; [`read_tile`] cuts it); one missing
/// from the store is left out, and read (and reported) where it is used.
fn read_right_edge(store: &mut dyn Store, size: u64) -> Result<Edge, LogError> {
    let keys = edge_keys(size);
    let read = store.tiles(&keys)?;
    Ok(keys
        .into_iter()
        .zip(read)
        .filter_map(|(k, t)| t.map(|t| (k, t)))
        .collect())
}

/// `(level, index)` of the hash tiles at the right edge of a tree of
/// `size` leaves ([`tiles::right_edge`]).
fn edge_keys(size: u64) -> Vec<(u8, u64)> {
    tiles::right_edge(size)
        .iter()
        .filter_map(|t| match t.kind {
            TileKind::Hashes(level) => Some((level, t.index)),
            TileKind::Entries => None,
        })
        .collect()
}

/// The hash tiles appending `leaves` to a tree of `old_size` leaves
/// touches, with their new contents: at each tile level, the partial tile
/// at the edge grows, and each tile it fills adds its root one level up.
/// `read` holds tiles already read (the store's right edge).
pub fn grow(
    store: &mut dyn Store,
    old_size: u64,
    leaves: &[Hash],
    read: Option<&HashMap<(u8, u64), &[u8]>>,
) -> Result<Vec<(u8, u64, Vec<u8>)>, LogError> {
    let width = u64::from(TILE_WIDTH);
    let full = usize::from(TILE_WIDTH) * 32;
    let mut out = Vec::new();
    let mut new: Vec<Hash> = leaves.to_vec();
    let mut level = 0u8;
    while !new.is_empty() {
        let before = old_size >> (u32::from(level) * TILE_HEIGHT);
        let mut index = before / width;
        let have = (before % width) as usize;
        let mut cur = if have > 0 {
            let t = Tile {
                kind: TileKind::Hashes(level),
                index,
                width: have as u16,
            };
            read_tile(store, &t, read).map_err(|e| LogError::Store(StoreError::Read(e)))?
        } else {
            Vec::with_capacity(full)
        };
        let mut up = Vec::with_capacity(new.len() / usize::from(TILE_WIDTH) + 1);
        for h in &new {
            cur.extend_from_slice(h);
            if cur.len() == full {
                up.push(tile_root(&cur));
                out.push((
                    level,
                    index,
                    std::mem::replace(&mut cur, Vec::with_capacity(full)),
                ));
                index += 1;
            }
        }
        if !cur.is_empty() {
            out.push((level, index, cur));
        }
        new = up;
        level += 1;
    }
    Ok(out)
}

/// The quick check's finding: entry `index` is not the log's.
fn changed(index: u64) -> LogError {
    LogError::Checkpoint(format!(
        "entry {index} is not the one its tiles hold (changed or removed behind chit's back)"
    ))
}
