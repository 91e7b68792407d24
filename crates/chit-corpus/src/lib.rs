//! Generated run receipts, for chit's parity test against the reference
//! verifier and for its benchmarks.
//!
//! [`cases`] is a fixed sequence for a given seed: random receipts that
//! satisfy every rule, then mutations that break rules one, two or three at
//! a time, written out with random key orders, whitespace, string escapes
//! and number spellings (`1.0`, `1e3`, `-0`, `4312e-4`). A few cases are
//! built to land on a documented difference from the reference verifier;
//! they carry its tag.
//!
//! Modules (everything public is re-exported here):
//!
//! - `rng`: [`Rng`], the seeded generator every module draws from.
//! - `receipt`: run receipts ([`consistent`], [`receipt`], [`seal`]) and
//!   the case sequence ([`cases`], [`Case`], [`DIFFS`]).
//! - `mutate`: [`mutate`], one random break of a receipt.
//! - `spell`: [`spell`], JSON text with random spellings.
//! - `stream`: [`signed_packet`], signed DSSE envelopes of a packet stream.
//! - `lattice`: Lattice executor packets and cases ([`lattice_packet`],
//!   [`lattice_cases`], [`LatticeCase`]).
//! - `lineage`: synthetic `numeric.lineage` runs ([`lineage_run`]).
//! - `overhead`: gateway overhead from a transcript and the fixture's
//!   timings ([`overhead`], [`Overhead`], [`quantile`]).

#![forbid(unsafe_code)]

mod lattice;
mod lineage;
mod mutate;
mod overhead;
mod receipt;
mod rng;
mod spell;
mod stream;

pub use lattice::{lattice_cases, lattice_packet, LatticeCase};
pub use lineage::lineage_run;
pub use mutate::mutate;
pub use overhead::{overhead, quantile, Overhead};
pub use receipt::{cases, consistent, receipt, seal, Case, DIFFS};
pub use rng::Rng;
pub use spell::spell;
pub use stream::signed_packet;
