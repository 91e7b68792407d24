//! chit's receipt log: what it accepts ([`policy`]), how it appends
//! ([`Log`], the one sequencer), where it keeps entries ([`store`]: SQLite
//! by default, PostgreSQL to share), what it hands out ([`Bundle`]) and
//! how anyone holds it to its word ([`audit`]).
//!
//! The formats (RFC 9162 trees, C2SP checkpoints, notes, cosignatures and
//! tiles) are [`chit_log`]'s; verdicts on receipts are
//! [`chit_core::check`]'s. This crate only stores and sequences around
//! them, and has no command line. [`open`] and [`create`] are the one
//! place that picks a store's driver from where it is.

#![forbid(unsafe_code)]

pub mod audit;
pub mod binding;
pub mod log;
pub mod migrate;
pub mod policy;
pub mod postgres;
pub mod sqlite;
pub mod store;
pub mod streams;

pub use chit_log::bundle::Bundle;
pub use log::{Log, LogError, Outcome, Submission};
pub use policy::{Admission, Policy, Submitted};
pub use store::{Store, StoreError};

/// The store layout's version, recorded at `chit log init`.
pub const FORMAT: &str = "chit-log/1";

/// A [`store::Meta`] from a store's key/value rows.
pub(crate) fn meta_from_rows(
    location: &str,
    rows: Vec<(String, String)>,
) -> Result<store::Meta, StoreError> {
    let mut map: std::collections::HashMap<String, String> = rows.into_iter().collect();
    match map.get("format").map(String::as_str) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(StoreError::Read(format!(
                "{location} is a log of format {other}; this chit reads {FORMAT}"
            )))
        }
        None => return Err(StoreError::NotALog(location.to_string())),
    }
    let mut take = |k: &str| {
        map.remove(k)
            .ok_or_else(|| StoreError::Read(format!("{location}: the log's {k} is missing")))
    };
    Ok(store::Meta {
        origin: take("origin")?,
        verifier_key: take("verifier_key")?,
        policy: take("policy")?,
        key_file: map.remove("key_file"),
        policy_binding: map.remove("policy_binding"),
    })
}

/// Whether a location names a PostgreSQL store (`postgres://…`,
/// `postgresql://…`); anything else is a SQLite file.
pub fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Opens the store a location names: `postgres://…` or `postgresql://…`
/// (PostgreSQL; `?schema=NAME` keeps the log in its own schema), anything
/// else a SQLite file.
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    if is_postgres(location) {
        Ok(Box::new(crate::postgres::PgStore::connect(location)?))
    } else {
        Ok(Box::new(crate::sqlite::SqliteStore::open(
            std::path::Path::new(location),
        )?))
    }
}

/// A store for a new log where a location names one: a new SQLite file
/// (never over an existing file), or a PostgreSQL schema (`create` then
/// refuses one that holds a log).
pub fn create(location: &str) -> Result<Box<dyn Store>, StoreError> {
    if is_postgres(location) {
        Ok(Box::new(crate::postgres::PgStore::connect(location)?))
    } else {
        Ok(Box::new(crate::sqlite::SqliteStore::create_file(
            std::path::Path::new(location),
        )?))
    }
}
