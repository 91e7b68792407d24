//! chit's receipt log: what it accepts ([`policy`]), how it appends
//! ([`Log`], the one sequencer), where it keeps entries ([`store`]: SQLite
//! by default, PostgreSQL to share), what it hands out ([`Bundle`]) and
//! how anyone holds it to its word ([`audit`]).
//!
//! The formats (RFC 9162 trees, C2SP checkpoints, notes, cosignatures and
//! tiles) are [`chit_log`]'s; verdicts on receipts are
//! [`chit_core::check()`]'s. This crate only stores and sequences around
//! them, and has no command line. [`open`] and [`create`] are the one
//! place that picks a store's driver from where it is.

#![forbid(unsafe_code)]

pub mod audit;
pub mod binding;
pub mod folder;
pub mod log;
pub mod migrate;
pub mod monitor;
pub mod policy;
pub mod postgres;
pub mod sqlite;
pub mod store;
pub mod streams;
pub mod witness;

pub use chit_log::bundle::Bundle;
pub use log::{EntryName, Log, LogError, Outcome, Submission};
pub use policy::{Admission, Policy, Submitted};
pub use store::{Index, Store, StoreError, Tree};

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

/// Whether a new log at this path is one SQLite file (a name ending in
/// `.db`, `.sqlite` or `.sqlite3`) rather than a log folder.
pub fn is_single_file(location: &str) -> bool {
    std::path::Path::new(location)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "db" | "sqlite" | "sqlite3"))
}

/// Opens the store a location names: `postgres://…` or `postgresql://…`
/// (PostgreSQL; `?schema=NAME` keeps the log in its own schema), a folder
/// (a log folder, [`folder`]), anything else a SQLite file.
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    let path = std::path::Path::new(location);
    if is_postgres(location) {
        Ok(Box::new(crate::postgres::PgStore::connect(location)?))
    } else if path.is_dir() {
        Ok(Box::new(crate::folder::FolderStore::open(path)?))
    } else if let Some(folder) = crate::folder::folder_of_index(path) {
        // Its entries are in the folder's files, and its writers take the
        // folder's lock: the database alone is not the log.
        Err(StoreError::Read(format!(
            "{} is the index of the log folder {}; give the folder",
            path.display(),
            folder.display()
        )))
    } else {
        Ok(Box::new(crate::sqlite::SqliteStore::open(path)?))
    }
}

/// A store for a new log where a location names one: a PostgreSQL schema
/// (`create` then refuses one that holds a log), a new SQLite file where
/// the name ends in `.db`, `.sqlite` or `.sqlite3` (never over an existing
/// file), else a new log folder (a new or an empty folder).
pub fn create(location: &str) -> Result<Box<dyn Store>, StoreError> {
    let path = std::path::Path::new(location);
    if is_postgres(location) {
        Ok(Box::new(crate::postgres::PgStore::connect(location)?))
    } else if is_single_file(location) {
        Ok(Box::new(crate::sqlite::SqliteStore::create_file(path)?))
    } else {
        Ok(Box::new(crate::folder::FolderStore::create_dir(path)?))
    }
}

/// Removes what [`create`] made at a location whose log could not be
/// finished (a file and its companions, or a folder's contents and the
/// folder if it is then empty), once its store is dropped; a PostgreSQL
/// schema is left (the caller says so).
pub fn remove_created(location: &str) {
    let path = std::path::Path::new(location);
    if is_postgres(location) {
    } else if is_single_file(location) {
        crate::sqlite::SqliteStore::remove_created(path);
    } else {
        crate::folder::FolderStore::remove_created(path);
    }
}
