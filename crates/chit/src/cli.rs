//! The command line: what each command takes, and its help text.

use chit_core::{Kind, Limits};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const ABOUT: &str =
    "Check receipts of AI work: exactly, fast, and for the person who did not write them.";

const LONG_ABOUT: &str = "\
chit checks receipts of AI work: records of which models took part in a run, \
what they ran, how it exited and what nobody verified. It reads every file \
strictly, checks it against its format's schema and every rule of its \
specification, and reports each broken rule by its id.

Receipt kinds:
  run-receipt    Run receipts, version 0.1 (receiptVersion \"0.1\"): rules
                 S1-S5, V1-V5, T1-T5, G1, C1-C5, M1-M3, D1-D2.
  verification.packet.v1, verification.recompute.v1
                 Treeship's workload packets (P1-P8) and recompute results (R1-R4).
  treeship/session-receipt/v1
                 Treeship's session packages (a *.treeship folder): Merkle root,
                 inclusion proofs, files, and the signed session record; with
                 Treeship's store records, index.json, chains and receipt exports.
  numeric.lineage
                 Whether an LLM endpoint's temperature-0 tokens change with batch
                 occupancy: L1-L12, and L13-L15 with --transcript.
  numeric.lineage.bound.v1
                 A committed divergence bound (chit lineage bound): B1-B2. A receipt
                 log proves it was logged before the receipt measured against it.
  lattice.executor_packet.v1
                 Lattice's context packets, in Lattice's canonical JSON: X1-X5, and
                 X6 (epoch rebinds) across the packets given together.
  zerker.reason.authorization.v1
                 Zerker Reason certificates and bundles: A1-A3; with the request
                 (--request or a bundle) A5 and A7-A9, recomputed as Reason does;
                 A6 with --call; --require-authorized. 'chit reason' is a drop-in
                 for Reason's own CLI.

Signed receipts are DSSE envelopes carrying a Treeship receipt statement,
byte-compatible with Treeship. 'chit verify --trust FILE' checks the
signature, the art id, the statement and then the payload under its kind.
An envelope whose payload chit cannot check (another payload type, a kind
it does not know) is reported SIGNED: signature and art id good, payload
not read. A Reason certificate given without its request is UNCHECKED: its
own rules hold, but its digests, reasoning and proofs were not recomputed.
Neither is valid unless --allow-unchecked is given.

Receipt logs: 'chit log' keeps receipts in an append-only Merkle log (RFC 9162;
C2SP signed checkpoints, witness cosignatures and tiles) in SQLite or
PostgreSQL, and audits any log; 'chit serve' puts one on HTTP; 'chit verify
--log-key KEY BUNDLE' proves offline that a receipt is valid and was logged.

Exit status:
  0  every input is valid (warnings allowed; SIGNED and UNCHECKED too with
     --allow-unchecked)
  1  some input is not valid, or SIGNED or UNCHECKED without --allow-unchecked
  2  some input could not be read, or the command line is wrong
  141  standard output was closed by its reader (chit ... | head): chit stops quietly";

const AFTER_HELP: &str = "\
Examples:
  chit verify receipt.json               check one receipt
  chit verify receipts/                  every *.json below a folder, all cores
  chit verify --json receipts/ > out.jsonl
  chit verify --lines stream.jsonl       one receipt a line
  chit verify --format markdown r.json   a pull-request comment
  chit log append --store l.db r.json    verify it, then append it to a log
  chit serve --demo                      a receipt log of the examples, on HTTP
  chit digest receipt.json               the digest it should carry
  chit seal receipt.json                 check it, then write its digest in
  chit canon doc.json | sha256sum        RFC 8785 canonical bytes
  chit verify --trust T.toml --allow-unchecked ~/.treeship/artifacts/
                                         a whole Treeship store

Run 'chit help <command>' for the details of a command.";

#[derive(Parser, Debug)]
#[command(
    name = "chit",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// When to colour output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub color: ColorWhen,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check receipts against their format's schema and rules.
    #[command(long_about = VERIFY_LONG, after_help = VERIFY_AFTER)]
    Verify(VerifyArgs),
    /// Print a receipt's digest: the one it should carry, whatever it carries now.
    #[command(
        long_about = "Print the digest a receipt should carry: SHA-256 over its canonical \
form (RFC 8785) without its own top-level digest field, written sha256:<hex>. The receipt's \
rules are not checked; use 'chit verify' for that."
    )]
    Digest(DigestArgs),
    /// Check a receipt, then write it back with its digest set.
    #[command(
        long_about = "Check a receipt and write it back with its digest set. A receipt that \
breaks any rule other than D1 (a stale digest, which sealing mends) is refused, naming the \
rules, and left as it was. The file is replaced atomically: a crash leaves either the old \
file or the new one, never half of either. Keys keep their order; the file is written \
with two-space indentation, as JSON.stringify(receipt, null, 2) writes it."
    )]
    Seal(SealArgs),
    /// Make a new Ed25519 signing key (or an ML-DSA-44 witness key).
    #[command(
        long_about = "Write a new Ed25519 private key to FILE (PKCS#8 PEM, readable by you only; \
an existing file is never overwritten) and print its public key as did:key:z6Mk... and in \
Treeship's ed25519:<base64url> form. The private key is never printed. With --algorithm \
ml-dsa-44, write an ML-DSA-44 witness key instead (PKCS#8 PEM, the seed form of RFC 9881) for \
'chit witness serve --key FILE --name NAME': its verifier key depends on the witness's name, \
and the witness prints it when it starts."
    )]
    Keygen(KeygenArgs),
    /// Show the public forms of a key.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Sign a payload as a Treeship receipt (a DSSE envelope).
    #[command(
        long_about = "Wrap PAYLOAD (a JSON file, or '-') in a Treeship receipt statement \
(type, timestamp, system, subject, kind, payload) and sign it into a DSSE envelope with the \
key in --key. A payload of a kind chit knows is checked first, and an invalid one is refused, \
naming the rules; a payload of another kind is signed as given, with a warning. The envelope \
is written to --out, or to standard output."
    )]
    Sign(SignArgs),
    /// Work with verification packets.
    #[command(subcommand)]
    Packets(PacketsCommand),
    /// Measure an LLM endpoint's numeric lineage, and open what it commits to.
    #[command(subcommand)]
    Lineage(LineageCommand),
    /// Print a document's canonical JSON bytes (RFC 8785, or Lattice's profile).
    #[command(
        long_about = "Print a JSON document's canonical bytes under RFC 8785: keys sorted by \
UTF-16 code unit, no whitespace, numbers as ECMAScript writes them, strings as JSON.stringify \
writes them. The document is read strictly first (no duplicate keys, no lone surrogates). \
With --profile lattice, Lattice's profile instead: lone surrogates are kept as \\udxxx \
escapes, -0 is refused, and Lattice's limits apply. \
The bytes are written as they are, with no newline added, so they can be piped into a hash; \
on a terminal a newline is added for readability."
    )]
    Canon(CanonArgs),
    /// Zerker Reason's own commands, as a drop-in: Reason's output and exit statuses.
    #[command(long_about = REASON_LONG, after_help = REASON_AFTER)]
    Reason(ReasonArgs),
    /// Serve a receipt log and the verifier over HTTP.
    #[command(long_about = SERVE_LONG)]
    Serve(ServeArgs),
    /// Keep receipts in an append-only, provable log (SQLite or PostgreSQL).
    #[command(subcommand, long_about = LOG_LONG, after_help = LOG_AFTER)]
    Log(LogCommand),
    /// Witness logs: cosign their checkpoints after proving them consistent.
    #[command(subcommand)]
    Witness(WitnessCommand),
}

#[derive(Subcommand, Debug)]
pub enum WitnessCommand {
    /// Serve a C2SP tlog-witness: POST /add-checkpoint.
    #[command(long_about = WITNESS_LONG, after_help = WITNESS_AFTER)]
    Serve(WitnessServeArgs),
}

const WITNESS_LONG: &str = "\
Serve a transparency-log witness over HTTP, as C2SP tlog-witness defines it. A log POSTs \
/add-checkpoint with the size of the last checkpoint this witness cosigned for it, a \
consistency proof from there, and its new signed checkpoint; the witness checks the log's \
signature against the log keys of --policy (a C2SP tlog-policy file: its log lines say which \
logs this witness witnesses), proves the new checkpoint consistent with the last one it \
cosigned, stores it in --store, and answers its cosignature. Refusals: 400 malformed, 404 a \
log the policy does not list, 403 not signed by the log's key, 409 the old size is not the \
latest cosigned one (the body, text/x.tlog.size, says which), 422 not consistent. The check \
and the store of one log's new checkpoint are atomic: of two submissions from one old size, \
one is cosigned. GET /<sha256 of the origin, hex>/checkpoint serves the latest checkpoint \
cosigned for a log. An Ed25519 key (chit keygen) cosigns as cosignature/v1; an ML-DSA-44 key \
(chit keygen --algorithm ml-dsa-44) signs the subtree/v1 message. The witness prints its \
verifier key when it starts: the key a policy's witness line names.";

const WITNESS_AFTER: &str = "\
Examples:
  chit keygen --out witness.pem
  chit witness serve --key witness.pem --name witness.example.org/w1 \\
      --store witness.db --policy logs.policy --listen 127.0.0.1:7380";

#[derive(Args, Debug)]
pub struct WitnessServeArgs {
    /// The witness's private key: Ed25519 or ML-DSA-44, PKCS#8 PEM (chit keygen).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The witness's name, the name of its verifier key (e.g. witness.example.org/w1).
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// The witness's state: the latest checkpoint cosigned for each log (a SQLite file, made when missing).
    #[arg(long, value_name = "FILE")]
    pub store: PathBuf,
    /// The logs to witness: a C2SP tlog-policy file (its log lines).
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Where to listen (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7380")]
    pub listen: String,
    /// Seconds a client has to send a request's headers.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = at_least(1u64))]
    pub header_timeout: u64,
    /// Seconds a whole request may take, its body included (408 after that).
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = at_least(1u64))]
    pub request_timeout: u64,
    /// Warnings and errors only (by default one JSON line a request on standard error).
    #[arg(long)]
    pub quiet: bool,
}

const LOG_LONG: &str = "\
An append-only Merkle log of receipts that speaks the transparency-log formats: RFC 9162 \
trees and proofs, C2SP signed checkpoints (tlog-checkpoint in a signed-note, Ed25519), \
witness cosignatures (tlog-cosignature) and static tiles (tlog-tiles). An entry is a \
receipt's exact bytes (at most 65,535), accepted only when 'chit verify' under the log's \
policy (fixed at init) calls it valid; a packet that would break its stream (P1, P2, P4) \
is refused, a gap (P3) is allowed and reported by audit.

STORE is a log folder (made by init; nothing to set up; its public/ folder is the log's read \
side, which any static web server can serve), a SQLite file (a name ending in .db, .sqlite or \
.sqlite3) or a PostgreSQL URL, postgres://USER@HOST:PORT/DATABASE?schema=NAME, for a log several processes share (one \
sequences at a time). Every append is durable before chit prints its index.";

const SERVE_LONG: &str = "\
Serve the log in STORE (made by 'chit log init', or made here with --key when STORE does \
not exist yet) over HTTP: POST /v1/entries appends a receipt (or JSON Lines of them, Content-Type application/jsonl) once it is valid under the \
log's policy, answering 201 with its index, leaf hash, inclusion proof and checkpoint (200 \
when it was already logged, 422 with the findings when it is not valid; JSON Lines get one \
such answer a line, streamed, its 'line' the receipt's line in the body); POST /v1/verify \
gives the verdict and appends nothing; GET /v1/entries/{INDEX|sha256:HEX} gives the entry's \
log bundle; GET /checkpoint and /tile/... are C2SP tlog-tiles; GET /v1/consistency?from=&to=, \
/healthz (what the server can do now: status ok or degraded, writes, reason; 503 when it \
should take writes and cannot) and /metrics (Prometheus); GET / is a page for people (search, \
each receipt drawn by its kind, a file checked without appending it). Reads are public; \
writes need a bearer token from --tokens (a TOML file of [[token]] tables: name, sha256 of \
the token, optional kinds and rate; refused at start if others may write it). One thread \
sequences: submissions from all requests are appended in batches, each durable before it is \
answered. What a client can make the server hold is bounded: --max-lines receipts a JSON \
Lines request, --max-in-flight bytes of bodies at once (503 with Retry-After past it), heads \
of 64 KiB and 100 fields (431). Every refusal is JSON. Logs are JSON lines on standard error. \
SIGTERM or Ctrl-C stops taking connections and answers every request in flight.";

const LOG_AFTER: &str = "\
Examples:
  chit keygen --out log.pem
  chit log init --store receipts.db --key log.pem --origin example.com/receipts
  chit log append --store receipts.db --key log.pem receipts/
  chit log bundle --store receipts.db 0 > r0.bundle.json
  chit verify --log-key 'example.com/receipts+1a2b3c4d+AW...' r0.bundle.json
  chit log audit receipts.db --log-key log.vkey";

#[derive(Subcommand, Debug)]
pub enum LogCommand {
    /// Create a log: its store, key, origin and policy.
    #[command(
        long_about = "Create a log in STORE (a new or empty folder, made a log folder; a new SQLite file where its \
name ends in .db, .sqlite or .sqlite3; or an empty PostgreSQL schema), \
signed by the Ed25519 key in --key (chit keygen) under the name --origin, and fix its policy: \
what 'chit log append' accepts. Prints the log's public key in the verifier-key form \
(ORIGIN+KEYID+BASE64) that --log-key takes. An existing log or file is never replaced.",
        after_help = LOG_AFTER
    )]
    Init(LogInitArgs),
    /// Verify receipts and append the valid ones.
    #[command(
        long_about = "Check each INPUT as 'chit verify' does under the log's policy; refuse the \
invalid ones with their findings and append the rest, in batches, each one durable before its \
indexes are printed. A receipt already in the log is answered with its existing index. \
Exit 0 when every input is in the log, 1 when some were refused, 2 when some were unreadable."
    )]
    Append(LogAppendArgs),
    /// Print an entry's exact bytes (by index or sha256:HEX).
    Get(LogGetArgs),
    /// Print the latest signed checkpoint, exactly as signed.
    Checkpoint(LogStoreArg),
    /// Print the log's origin, public key, size and policy.
    Info(LogStoreArg),
    /// Print an inclusion proof (JSON).
    Prove(LogProveArgs),
    /// Print a consistency proof between two sizes (JSON).
    Consistency(LogConsistencyArgs),
    /// Print a C2SP tlog-proof of one entry, for chit verify --proof.
    #[command(
        long_about = "Print a C2SP tlog-proof (c2sp.org/tlog-proof@v1; save it as FILE.tlog-proof) \
for the entry at INDEX: its index, its inclusion proof and a signed checkpoint with the \
witnesses' cosignatures, the entry's leaf being the RFC 9162 hash of its exact bytes. From a \
STORE, the checkpoint is the latest whose cosignatures meet --policy's quorum (else the latest, \
with what cosignatures it has); from a served log's URL, the checkpoint it serves. 'chit verify \
--policy POLICY --proof FILE.tlog-proof RECEIPT' then proves offline that the receipt is valid \
and was logged.",
        after_help = "Examples:\n  chit log proof --store receipts.db 7 > r7.tlog-proof\n  chit log proof 7 https://log.example/ > r7.tlog-proof\n  chit verify --policy log.policy --proof r7.tlog-proof r7.json"
    )]
    Proof(LogProofArgs),
    /// Print a log bundle: an entry, its inclusion proof and the signed checkpoint.
    #[command(
        long_about = "Print a log bundle for each INDEX (one: an object; several: a JSON list): \
the entry's exact bytes (base64), its inclusion proof and the latest signed checkpoint with \
its cosignatures. 'chit verify --log-key KEY BUNDLE' then proves offline that the receipt is \
valid and was logged."
    )]
    Bundle(LogBundleArgs),
    /// Write the log as static tlog-tiles files any web server can serve.
    ExportTiles(LogExportArgs),
    /// Recompute a log from its entries and prove it consistent with what was seen before.
    #[command(long_about = AUDIT_LONG, visible_alias = "verify")]
    Audit(LogAuditArgs),
    /// Follow a served log as a monitor: prove each checkpoint, print the new entries.
    #[command(long_about = WATCH_LONG, after_help = WATCH_AFTER)]
    Watch(LogWatchArgs),
    /// Cosign the latest checkpoint as a witness, after proving it consistent.
    #[command(
        long_about = "Act as a witness: open the log's latest checkpoint with --log-key, prove it \
consistent with the last checkpoint this witness cosigned (kept in --state), and add a C2SP \
tlog-cosignature (the time, and an Ed25519 signature by --key under --name) to the log's \
checkpoint, so bundles carry it. Prints the witness's verifier key, for --witness."
    )]
    Witness(LogWitnessArgs),
    /// Bind a log's policy to it with the log's key (a log made before policies were bound).
    #[command(
        long_about = "A log made by this chit binds its policy at init: the log's key signs the \
policy's SHA-256, and 'chit log audit', 'chit serve' and 'chit log append' refuse a policy that \
no longer matches. A log made before has no binding: the audit reports it, and a server warns. \
Check the policy first ('chit log info' prints what it accepts): binding it is the operator's \
word that it is the policy set at init. A log that has a binding keeps it; a binding that does \
not match is never replaced."
    )]
    BindPolicy(LogBindArgs),
    /// Copy a log into a new store, checkpoint by checkpoint, proving each.
    #[command(
        long_about = "Copy the log OLD holds into NEW (a new log folder or SQLite file, or a \
PostgreSQL schema that holds no log), without the log's private key: the entries each checkpoint of OLD covers are \
checked again under the log's policy and appended to NEW (their labels, packet rows and indexes \
made as an append makes them), and NEW keeps OLD's checkpoint for that size as it was signed and \
cosigned, once it verifies under the log key and signs the tree the entries give. NEW then holds \
the same tree, checkpoints, policy and binding in this chit's layout; OLD is only read. The log \
key is --log-key, else the one OLD names (trusted on first use). A copy that fails leaves \
nothing behind in a folder or file; a PostgreSQL schema is left as it is, to be dropped."
    )]
    Migrate(LogMigrateArgs),
}

const AUDIT_LONG: &str = "\
Audit SOURCE (a log's store, or a folder 'chit log export-tiles' wrote): open its latest \
checkpoint with the log's key, read and hash every entry, recompute every hash tile and the \
root, check every checkpoint the store keeps, and prove the checkpoint seen last time (kept in \
--state) a prefix of this one. An entry changed, deleted or inserted behind the log's back is \
named by its index; a rewritten history or a split view is reported with both signed \
checkpoints as evidence. A store's policy must be the one the log's key bound, and an index it \
keeps apart from its entries (SQLite's content index) must map every address to its entry. \
Packet stream gaps (P3) still open are listed. With --reverify every entry is also checked again \
under the log's policy, and its search label, its rows in the art-id, kind and stream indexes and \
its packet row held to it.

Without --log-key, the key is the one the state file saw before, else the store's own (trust \
on first use: give --log-key to pin it). Exit 0: consistent; 1: a problem found; 2: unreadable.";

/// `chit serve --help`'s heading for the options that only make a new log.
const NEW_LOG: &str =
    "A new log (STORE a folder or file that does not exist yet; for an existing log they must match it)";

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The log: a log folder, a SQLite file (.db) or
    /// postgres://USER@HOST/DB?schema=NAME. A store that does not exist yet
    /// is made a new log (with --key,
    /// and --origin and the policy options below, as chit log init takes
    /// them); an existing file is never replaced, and those options must
    /// then say what its log is.
    #[arg(long, value_name = "STORE", required_unless_present = "demo", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub store: Option<String>,
    /// Serve a new log in a temporary folder, the shipped examples already
    /// in it (its key, store and a write token are made there and printed).
    #[arg(long, conflicts_with_all = ["store", "key", "tokens", "origin", "trust", "threshold", "accept_unsigned", "allow_unchecked"])]
    pub demo: bool,
    /// The log's private key (default: the key file named at chit log init;
    /// needed to make a new log).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Where to listen (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Who may write: a TOML file of [[token]] tables (name, sha256, kinds).
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Seconds a client has to send a request's headers (a slow client is
    /// cut off, not waited on).
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = at_least(1u64))]
    pub header_timeout: u64,
    /// Warnings and errors only. By default the log on standard error (JSON
    /// lines, from `tracing`) also has one line a request (target
    /// chit::access: method, path, status, ms, token name) and one a batch
    /// written.
    #[arg(long)]
    pub quiet: bool,
    /// Seconds a whole request may take, its body and its answer included
    /// (408 after that).
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = at_least(1u64))]
    pub request_timeout: u64,
    /// Receipts one JSON Lines request may carry; each past it is answered
    /// "refused" in place and not appended (so is each past what its
    /// token's rate allows).
    #[arg(long, value_name = "N", default_value_t = crate::serve::MAX_LINES, value_parser = at_least(1usize))]
    pub max_lines: usize,
    /// Bytes of request bodies the server holds at once, across every
    /// connection, a /v1/verify body counted with what its check may take
    /// (9 times its size and more: by default /v1/verify takes documents
    /// of up to about 4.9 MB, 413 past that). A request that would pass it
    /// is answered 503 with Retry-After: before its body is read when its
    /// length is announced, else as soon as it passes. The default holds
    /// one JSON Lines body of the largest size (64 MiB) and 16 MiB beside;
    /// at least 1 MiB.
    #[arg(long, value_name = "BYTES", default_value_t = crate::serve::IN_FLIGHT, value_parser = at_least(1usize << 20))]
    pub max_in_flight: usize,
    /// Ask witnesses to cosign each new checkpoint: a C2SP tlog-policy file
    /// whose witness lines carry their URLs (submission prefixes). GET
    /// /checkpoint then serves the newest checkpoint whose cosignatures meet
    /// its quorum; the cosignatures are kept with their checkpoints.
    #[arg(long, value_name = "FILE")]
    pub witness_policy: Option<PathBuf>,
    /// Seconds a witness has to answer one checkpoint.
    #[arg(long, value_name = "SECS", default_value_t = 5, value_parser = at_least(1u64))]
    pub witness_timeout: u64,
    /// Milliseconds at least between two checkpoints sent to the witnesses
    /// (a busy log makes many a second; each costs every witness a
    /// signature and a sync).
    #[arg(long, value_name = "MS", default_value_t = 250)]
    pub witness_interval: u64,
    // Last: the heading below holds every option after it.
    /// A new log's name (default: chit.localhost/ and the file's name
    /// without its extension, characters a name cannot hold made '-'): its
    /// checkpoints' origin and its key's name.
    #[arg(long, value_name = "NAME", help_heading = NEW_LOG)]
    pub origin: Option<String>,
    #[command(flatten, next_help_heading = NEW_LOG)]
    pub policy: PolicyArgs,
}

#[derive(Args, Debug)]
pub struct LogStoreArg {
    /// The log: a log folder, a SQLite file (.db) or postgres://USER@HOST/DB?schema=NAME.
    #[arg(long, value_name = "STORE")]
    pub store: String,
}

#[derive(Args, Debug)]
pub struct LogMigrateArgs {
    /// The log's store now (a log folder, a SQLite file or postgres://...).
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The new store (a new log folder or SQLite file, or a PostgreSQL schema holding no log).
    #[arg(value_name = "NEW")]
    pub new: String,
    /// The log's verifier key (ORIGIN+KEYID+BASE64) or a file holding it.
    #[arg(long, value_name = "KEY")]
    pub log_key: Option<String>,
}

#[derive(Args, Debug)]
pub struct LogBindArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    /// The log's private key (default: the file named at init).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LogInitArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    /// The log's Ed25519 private key (PKCS#8 PEM, from chit keygen).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The log's name: its checkpoints' origin and its key's name (a schema-less URL, e.g. example.com/receipts).
    #[arg(long, value_name = "NAME")]
    pub origin: String,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// What a new log accepts: fixed when the log is made (`chit log init`,
/// or `chit serve` on a store that does not exist yet).
#[derive(Args, Debug, Clone, Default)]
pub struct PolicyArgs {
    /// Accept only receipts signed by the keys this trust file lists (see chit verify --trust).
    #[arg(long, value_name = "FILE")]
    pub trust: Option<PathBuf>,
    /// Distinct trusted keys each receipt needs (default 1).
    #[arg(long, value_name = "N", value_parser = at_least(1u32))]
    pub threshold: Option<u32>,
    /// With --trust, also accept documents no key signed, checked by their own rules.
    #[arg(long, requires = "trust")]
    pub accept_unsigned: bool,
    /// Accept signed receipts whose payload chit cannot check (SIGNED) and UNCHECKED ones.
    #[arg(long)]
    pub allow_unchecked: bool,
}

impl PolicyArgs {
    /// Whether any of these was given (`--threshold 1` included: said, it
    /// must hold).
    pub fn given(&self) -> bool {
        self.trust.is_some()
            || self.threshold.is_some()
            || self.accept_unsigned
            || self.allow_unchecked
    }
}

#[derive(Args, Debug)]
pub struct LogAppendArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    /// The log's private key (default: the file named at init).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Read JSON Lines: every non-empty line is one receipt (its bytes without the line feed).
    #[arg(long)]
    pub lines: bool,
    /// One JSON object per input: {"input", "status", "index", "sha256", "findings"}.
    #[arg(long)]
    pub json: bool,
    /// Submissions per tree update (one durable commit and one signed checkpoint each).
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub batch: u32,
    /// Files, folders, or '-' for standard input.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LogGetArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    /// An index, or sha256:HEX (the entry's content address).
    #[arg(value_name = "INDEX|sha256:HEX")]
    pub which: String,
    /// Print {"index", "sha256", "integrated_at", "entry" (base64)} instead of the bytes.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LogProveArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    #[arg(value_name = "INDEX")]
    pub index: u64,
    /// The tree size to prove against (default: the latest checkpoint's).
    #[arg(long, value_name = "N")]
    pub size: Option<u64>,
}

#[derive(Args, Debug)]
pub struct LogConsistencyArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    #[arg(value_name = "OLD")]
    pub old: u64,
    #[arg(value_name = "NEW")]
    pub new: u64,
}

#[derive(Args, Debug)]
pub struct LogProofArgs {
    /// The entry's index.
    #[arg(value_name = "INDEX")]
    pub index: u64,
    /// A served log (chit serve, or any C2SP tlog-tiles server): its URL.
    #[arg(
        value_name = "URL",
        required_unless_present = "store",
        conflicts_with = "store"
    )]
    pub url: Option<String>,
    /// The log: a log folder, a SQLite file (.db) or postgres://USER@HOST/DB?schema=NAME.
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
    /// Prove under the latest checkpoint that meets this C2SP tlog-policy's quorum.
    #[arg(long, value_name = "FILE", requires = "store")]
    pub policy: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LogBundleArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    #[arg(value_name = "INDEX", required = true)]
    pub indexes: Vec<u64>,
}

#[derive(Args, Debug)]
pub struct LogExportArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    /// A new or empty folder, or one this log was exported to before (updated).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct WitnessArgs {
    /// A witness's verifier key (NAME+KEYID+BASE64) or a file holding it;
    /// repeatable (shorthand for a policy's witness lines).
    #[arg(long = "witness", value_name = "KEY")]
    pub witnesses: Vec<String>,
    /// Cosignatures required from the witnesses given (shorthand for a
    /// policy's quorum: a group of this threshold over them).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub min_witnesses: usize,
}

#[derive(Args, Debug)]
pub struct LogAuditArgs {
    /// A log's store (a log folder, a SQLite file or a postgres:// URL), a
    /// URL where a log's tiles are served, or a folder of tiles.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The log's verifier key (ORIGIN+KEYID+BASE64) or a file holding it.
    #[arg(long, value_name = "KEY")]
    pub log_key: Option<String>,
    /// The witnesses and quorum the latest checkpoint is held to, and the
    /// log's key when --log-key is not given: a C2SP tlog-policy file
    /// (--witness and --min-witnesses are its shorthand).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["witnesses", "min_witnesses"])]
    pub policy: Option<PathBuf>,
    /// Where the last checkpoint seen is kept (default: in chit's state folder, by origin).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    #[command(flatten)]
    pub witness: WitnessArgs,
    /// Check every entry again under the log's policy (a store only).
    #[arg(long)]
    pub reverify: bool,
    /// One JSON object: the checkpoint, figures and problems.
    #[arg(long)]
    pub json: bool,
}

const WATCH_LONG: &str = "\
Follow a log as a monitor does: read the checkpoint it serves at URL (chit serve, or any C2SP \
tlog-tiles log; a folder of tiles too), hold it to --policy (signed by a log the policy lists, \
its witnesses' cosignatures meeting the quorum), prove it consistent with the last checkpoint \
seen of the same log, and print each new entry as a JSON line. What was seen is kept in --state \
by the log's origin and key, not by URL: the same log at another address, or a fork of it served \
elsewhere, is held to the same history. A larger tree must extend the one seen (by a proof from \
its hash tiles, else by its entries from the first; and its new entries, appended to the tree \
seen, give its root); the same size, the same root; an older one is proven a prefix of the one \
seen from where that was served.

Each line printed is one JSON object with a \"type\": \"entry\" (origin, index, sha256, bytes; and \
kind, stream, art_id, status and refused where the entry was checked: with --match or \
--reverify), or \"problem\" (step, message, and evidence: the signed checkpoint seen before, or \
null, and the one shown now). Without --follow, one look, then exit (for cron); with it, a look every \
--interval (going on after a log it could not read) until Ctrl-C or SIGTERM, which stop it \
between two bundles with its progress saved. A run stopped halfway resumes where it stopped.

Exit 0: every checkpoint proven (and, with --reverify, every new entry valid); 1: a checkpoint \
not signed or cosigned as the policy says, two checkpoints that cannot both be true, entries that \
do not give the checkpoint's root, or an entry refused under --reverify; 2: the log or the state \
could not be read, an older view could not be proven a prefix, or a single look was stopped.";

const WATCH_AFTER: &str = "Examples:
  chit log watch https://log.example/ --policy log.policy --state watch.json
  chit log watch https://log.example/ --policy log.policy --state watch.json --follow \\
      --match kind=run-receipt --match signer=did:key:z6Mk...
  chit log watch https://log.example/ --policy log.policy --state watch.json --reverify --trust keys.toml";

#[derive(Args, Debug)]
pub struct LogWatchArgs {
    /// Where the log is served (http:// or https://), or a folder of tiles.
    #[arg(value_name = "URL")]
    pub source: String,
    /// The trust policy every checkpoint is held to: a C2SP tlog-policy
    /// file (the log's key, its witnesses and their quorum).
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Where what was seen of each log is kept (made on first use).
    #[arg(long, value_name = "FILE")]
    pub state: PathBuf,
    /// Print only the entries that match one of these: kind=KIND,
    /// stream=STREAM_ID, or signer=KEY (did:key:... or ed25519:...: an
    /// envelope with a signature that verifies under it). Repeatable.
    #[arg(long = "match", value_name = "FIELD=VALUE")]
    pub matches: Vec<String>,
    /// Check each new entry again as chit log append would under the
    /// --trust, --threshold, --accept-unsigned and --allow-unchecked given;
    /// exit 1 if any is refused.
    #[arg(long)]
    pub reverify: bool,
    #[command(flatten)]
    pub check: PolicyArgs,
    /// Keep following the log, a look every --interval.
    #[arg(long)]
    pub follow: bool,
    /// Seconds between looks with --follow.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0, value_parser = positive_seconds)]
    pub interval: f64,
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err("a number of seconds above 0, at most 86400".into()),
    }
}

#[derive(Args, Debug)]
pub struct LogWitnessArgs {
    #[command(flatten)]
    pub store: LogStoreArg,
    /// The witness's Ed25519 private key (PKCS#8 PEM, from chit keygen).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The witness's name (its verifier key's name), e.g. witness.example.org.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// The log's verifier key (ORIGIN+KEYID+BASE64) or a file holding it.
    #[arg(long, value_name = "KEY")]
    pub log_key: String,
    /// Where the last checkpoint cosigned is kept.
    #[arg(long, value_name = "FILE")]
    pub state: PathBuf,
}

const REASON_LONG: &str = "\
Zerker Reason's verifier and authorizer, as a drop-in for Reason's own CLI: the same \
commands, the same output (--format json prints Reason's objects) and Reason's exit \
statuses, so a pipeline can call 'chit reason' where it called 'reason'. The reasoning is \
chit's own code: the request is validated, the program rebuilt from it and re-run, every \
digest recomputed in Reason's encoding, every proof replayed.

Output with --format json:
  verified: {\"schema\": \"zerker.reason.authorization-verification.v1\", \"status\": \"verified\",
             \"authorization_status\": STATUS, \"request_digest\": D, \"reasoning_result_digest\": D}
  error:    {\"error\": TEXT, \"schema\": \"zerker.reason.error.v1\", \"status\": \"error\"}
The error text starts with the rule chit found broken (A5, A7, A8, A9, schema), or \
with 'cannot read' for input that is not JSON.

Exit status (Reason's, in this command only; elsewhere chit's own apply):
  0  verified (whatever the status), or with --require-authorized: authorized
  1  error: the input is unreadable or the certificate does not verify
  2  with --require-authorized: verified, insufficient_evidence
  3  with --require-authorized: verified, denied
  4  with --require-authorized: verified, conflicted
'authorize' exits as Reason's does: 0 authorized, 2, 3, 4 as above, 1 error.
For chit's own report (rule ids, every failure, exit 1 for any invalid certificate), \
use 'chit verify BUNDLE' or 'chit verify --request REQUEST CERTIFICATE'.";

const REASON_AFTER: &str = "\
Examples:
  chit reason --format json verify-authorization-bundle bundle.json --require-authorized
  cat bundle.json | chit reason verify-authorization-bundle -
  chit reason verify-authorization request.json certificate.json
  chit reason authorize request.json --certificate-out certificate.json";

#[derive(Args, Debug)]
pub struct ReasonArgs {
    /// Output form: text for people, json for Reason's objects.
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub format: ReasonFormat,

    #[command(subcommand)]
    pub command: ReasonCommand,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReasonFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum ReasonCommand {
    /// Verify a request and its certificate given in one bundle.
    VerifyAuthorizationBundle {
        /// A zerker.reason.authorization-bundle.v1 file, or '-'.
        #[arg(value_name = "BUNDLE")]
        input: PathBuf,
        /// Exit with the authorization status (0 authorized, 2, 3, 4) once verified.
        #[arg(long)]
        require_authorized: bool,
    },
    /// Verify a certificate against its original request.
    VerifyAuthorization {
        /// The zerker.reason.action.v1 request, or '-'.
        #[arg(value_name = "REQUEST")]
        request: PathBuf,
        /// The zerker.reason.authorization.v1 certificate.
        #[arg(value_name = "CERTIFICATE")]
        certificate: PathBuf,
    },
    /// Reason over a request and write its certificate.
    Authorize {
        /// The zerker.reason.action.v1 request, or '-'.
        #[arg(value_name = "REQUEST")]
        input: PathBuf,
        /// Write the certificate here (refused if it exists, unless --force).
        #[arg(long, value_name = "FILE")]
        certificate_out: Option<PathBuf>,
        /// Write the request and certificate as one bundle here.
        #[arg(long, value_name = "FILE")]
        bundle_out: Option<PathBuf>,
        /// Replace the output files if they exist.
        #[arg(long)]
        force: bool,
    },
}

const VERIFY_LONG: &str = "\
Check receipts against their format's schema and every rule of its specification.

Each INPUT is a file, a folder (every *.json file below it; links are followed only \
where they stay inside the folder, and loops are survived) or '-' for standard input. \
The kind of each receipt is told from the document; --kind names it instead.

Output, one block per input:
  VALID path
  INVALID path
    error G1: grade is failed; the totals earn verified
    warning D2: no digest, so a copy cannot be told from an edited one
  SIGNED path
    warning kind: payload of kind agent_card.v1 not checked: chit does not know this kind
  UNREADABLE path
    error read: line 3, column 7: duplicate key \"grade\"

What Treeship writes is read too: a stored artifact record (.treeship/artifacts/art_*.json) \
as its envelope, each of its fields held against it; the store's index.json against the \
records beside it; 'treeship receipt export' output under the trust file (the key it carries \
is only the signer's claim); and a session package (a *.treeship folder) as one input: \
its Merkle root, inclusion proofs and files, and across inputs its signed session record. \
Artifacts that name a parent need it among the inputs (a broken chain is named). \
Verifiable Intent credentials (SD-JWT text files) are read too: each layer alone, and \
across inputs its signature under the key of the layer above it.

SIGNED means the signature and the art id are good but chit did not check \
the payload (another payload type, or a kind chit does not know). It is not \
valid: exit status 1, unless --allow-unchecked lets it pass; either way it \
is shown as SIGNED and counted apart in the summary. UNCHECKED, the same \
way, means the document's own rules hold but chit could not recompute what \
it claims for want of an input: a Reason certificate without its request \
(give --request, or a bundle).

With --json, one JSON object per input, one per line (JSON Lines):
  {\"file\": PATH, \"line\": N (with --lines only), \"artifact_id\": ART (signed
   inputs only), \"kind\": KIND or null, \"valid\": BOOL,
   \"status\": \"valid\" | \"signed\" | \"unchecked\" | \"invalid\" | \"unreadable\",
   \"errors\": [FINDING...], \"warnings\": [FINDING...]}
  FINDING = {\"rule\": ID, \"message\": TEXT, \"path\": JSON-POINTER}
Rule ids are the specification's (S1, G1, D1, ...), plus \"schema\" for a schema \
violation, \"read\" for input that could not be read, \"kind\" for a document of \
no known kind, and chit's own for envelopes and what Treeship writes (signature, \
trust, record, chain, ...). After the inputs, one object per check across them: \
{\"stream\"|\"recompute\"|\"rebind\"|\"chain\"|\"index\"|\"session\"|\"lineage\"|\"intent\": \
NAME, \"valid\", \"status\", \"errors\", \"warnings\"}. This form is stable: fields may be added, never renamed or \
removed.";

const VERIFY_AFTER: &str = "\
Examples:
  chit verify receipt.json
  chit verify --quiet receipts/          only what is not valid, then a summary
  cat receipt.json | chit verify -
  chit verify --json --lines stream.jsonl | jq 'select(.valid | not)'
  chit verify --trust T.toml --allow-unchecked ~/.treeship/artifacts/ ~/.treeship/sessions/";

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Files, folders, or '-' for standard input.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Write one JSON object per input (JSON Lines); the same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Output form.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,

    /// Report only the inputs that are not valid (SIGNED ones too, unless
    /// --allow-unchecked lets them pass), then the summary.
    #[arg(short, long)]
    pub quiet: bool,

    /// Read JSON Lines: every non-empty line of each input is one receipt.
    #[arg(long)]
    pub lines: bool,

    /// Check every input as this kind instead of telling it from the document.
    #[arg(long, value_name = "KIND", value_parser = Kind::parse)]
    pub kind: Option<Kind>,

    /// The keys whose signatures count: a TOML file of [[key]] tables, each with
    /// name, public_key (did:key:... or ed25519:...), an optional kinds = [...]
    /// (what it may sign) and an optional did (the did:web or did:hive a
    /// numeric.lineage receipt's key_id names it by). Only the keys it lists
    /// are trusted, for every kind (a numeric.lineage receipt's own signer
    /// too), and every input must then be signed: a bare document fails, and
    /// counts toward no stream.
    #[arg(long, value_name = "FILE")]
    pub trust: Option<PathBuf>,

    /// Distinct trusted keys each input needs (one key signing twice counts once;
    /// a numeric.lineage receipt's own signer counts with its envelope's).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = at_least(1u32))]
    pub threshold: u32,

    /// With --trust, hold a document that no key signed at all (no
    /// envelope, no signature of its own) to its own rules instead of
    /// failing it for want of a signer: what a log made with
    /// `chit log init --accept-unsigned` accepts. A document that carries a
    /// signature is held to the trust file all the same.
    #[arg(long, requires = "trust")]
    pub accept_unsigned: bool,

    /// A numeric lineage gateway's transcript: check the receipt's
    /// commitments, figures and divergence against it too (L13-L15).
    /// --max-size bounds it, in all and each line.
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,

    /// A Zerker Reason request (zerker.reason.action.v1): each certificate
    /// must certify exactly its mission and action (A5), and is recomputed
    /// from it (A7-A9).
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,

    /// The concrete call {tool, arguments} an enforcement point is about to
    /// make: each certificate must certify exactly it (A6).
    #[arg(long, value_name = "FILE")]
    pub call: Option<PathBuf>,

    /// Exit 0 only for authorized Reason certificates recomputed from their
    /// request (a bundle, or --request): a certificate alone, any other
    /// status, and any input that is not a certificate, is reported, named,
    /// as an error (so under --request and --call).
    #[arg(long)]
    pub require_authorized: bool,

    /// Let signed inputs whose payload chit cannot check pass: envelopes of
    /// another payload type (Treeship's actions, approvals, handoffs,
    /// decisions, ...) or of a receipt kind chit does not know. Their
    /// signature, art id and statement are checked, and they are still
    /// reported as SIGNED and counted apart in the summary; without this
    /// option they make the exit status 1. The same for UNCHECKED inputs: a
    /// Reason certificate given without its request.
    #[arg(long)]
    pub allow_unchecked: bool,

    /// Packets each stream must hold: fewer means its tail was cut off (P8).
    #[arg(long, value_name = "N")]
    pub expect_count: Option<usize>,

    /// Every input is a log bundle (chit log bundle): prove it was logged by
    /// the log with this verifier key (ORIGIN+KEYID+BASE64, or a file
    /// holding it), then check its entry. An input that is not a bundle
    /// fails. A file of several bundles (a lineage bound and its receipt)
    /// also proves their order. Shorthand for a policy with one log line.
    #[arg(long, value_name = "KEY", conflicts_with = "policy")]
    pub log_key: Option<String>,

    #[command(flatten)]
    pub witness: WitnessArgs,

    /// The trust policy logged receipts are proven under: a C2SP tlog-policy
    /// file (log lines, witness lines, groups, one quorum line). With it,
    /// every input is a log bundle, unless --proof is given.
    /// --log-key, --witness and --min-witnesses are its shorthand.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["witnesses", "min_witnesses"])]
    pub policy: Option<PathBuf>,

    /// A C2SP tlog-proof (chit log proof INDEX > FILE.tlog-proof) that the
    /// INPUT in its place was logged: its exact bytes are the entry at the
    /// proof's index, under a checkpoint that meets the policy's quorum.
    /// Repeat it, one for each INPUT, in order. Each input is checked as it
    /// is, then held to its proof; a numeric lineage receipt and its bound
    /// given together also have their order proven (lineage-order).
    #[arg(long, value_name = "FILE")]
    pub proof: Vec<PathBuf>,

    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Where to write the private key (refused if it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The key's algorithm: ed25519 signs receipts, logs and cosignatures;
    /// ml-dsa-44 is a witness key only.
    #[arg(long, value_enum, value_name = "ALG", default_value_t = KeyAlgorithm::Ed25519)]
    pub algorithm: KeyAlgorithm,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAlgorithm {
    /// Ed25519 (the default).
    Ed25519,
    /// ML-DSA-44 (FIPS 204), a witness key for ML-DSA-44 cosignatures.
    #[value(name = "ml-dsa-44")]
    MlDsa44,
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Print the public forms of the private key in FILE.
    Show {
        /// A private key written by 'chit keygen' (PKCS#8 PEM).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum PacketsCommand {
    /// Re-run a packet's workload and sign the result (verification.recompute.v1).
    #[command(
        long_about = "Re-run the workload of a signed verification.packet.v1 and sign what was found. \
chit checks INPUT against the packet's input_digest, runs COMMAND with INPUT on its standard input, \
digests what it writes with the packet's algorithm and decides the verdict under the packet's \
reproducibility claim: bit_exact compares digests; bounded asks --distance-cmd for a distance (it \
reads the recomputed output on standard input and prints one number) and compares it with \
--max-distance, and is inconclusive without them; none is inconclusive, with a note. The result is \
signed with --key, its subject the packet's art id, and written to --out or standard output.",
        after_help = "Example:\n  chit packets recompute --key me.pem --packet pkt-2.envelope.json --input in.bin -- ./model --greedy"
    )]
    Recompute(RecomputeArgs),
}

#[derive(Args, Debug)]
pub struct RecomputeArgs {
    /// The key to sign the result with (PKCS#8 PEM).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,

    /// The packet, as a signed envelope.
    #[arg(long, value_name = "ENVELOPE")]
    pub packet: PathBuf,

    /// The packet's input, as the workload reads it.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,

    /// Check the packet's signature under these keys first (see 'chit help verify').
    #[arg(long, value_name = "FILE")]
    pub trust: Option<PathBuf>,

    /// For a bounded claim: a shell command that reads the recomputed output
    /// on standard input and prints its distance from the packet's output.
    #[arg(long, value_name = "CMD", requires = "max_distance")]
    pub distance_cmd: Option<String>,

    /// For a bounded claim: the largest distance that counts as a match.
    #[arg(long, value_name = "X")]
    pub max_distance: Option<f64>,

    /// Where to write the signed result (standard output by default).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Replace FILE if it exists (without it an existing --out is refused).
    /// A link is followed, a device or FIFO is written into, a file with
    /// several hard links is refused.
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub limits: LimitArgs,

    /// The workload: a program and its arguments, after '--'.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum LineageCommand {
    /// Commit a divergence bound before measuring.
    #[command(
        long_about = "Write a divergence bound to FILE with its committed_at (now, UTC, \
whole seconds) and its digest (SHA-256 of the canonical bound fields). A measurement may use \
a bound only after the moment it was committed; append the digest to a transparency log now \
to prove that order to a third party. An existing FILE is never overwritten."
    )]
    Bound(BoundArgs),
    /// Measure an endpoint at induced batch occupancy levels and sign the receipt.
    #[command(long_about = MEASURE_LONG, after_help = MEASURE_AFTER)]
    Measure(Box<MeasureArgs>),
    /// Print what an auditor needs to open a measurement's commitments.
    #[command(
        long_about = "Print, from a gateway's transcript, the salt and each committed \
identity (gateway, endpoint, reroute target) with its commitment and the exact canonical \
bytes hashed to make it, so an auditor can open the receipt's commitments by hand: \
sha256(preimage) equals the commitment."
    )]
    Open(OpenArgs),
}

const MEASURE_LONG: &str = "\
Send the request set to an LLM endpoint at each level of induced concurrency, record the \
token ids it returns, and sign a numeric.lineage receipt.

At a level of concurrency c, c-1 filler requests (other prompts, not measured) are kept \
decoding, and each measured request is sent once they all are, so it joins a full batch. \
Every request is streamed; a request counts as in flight from its first token to its last, \
so an endpoint that serialises requests shows 1 whatever is sent, and the receipt is then \
indeterminate. The bound must have been committed before the run starts.

The transcript (--transcript) is written as the run goes: the salt, the endpoint, the \
request set and every measured sequence. It is private; the receipt is what is published. \
If the run stops early (the endpoint fails, a timeout, Ctrl-C or SIGTERM), the transcript is \
kept and marked incomplete and no receipt is signed. Each response is bounded by what it asked \
for: an endpoint that sends more tokens than a request's max_tokens, or an event or a response \
of more bytes than that many tokens need, stops the run.

APIs: openai (vLLM's /v1/completions with return_token_ids), llamacpp (llama.cpp's native \
/completion with return_tokens; prompt caching is turned off for every request) and sglang \
(SGLang's native /generate and its output_ids; its OpenAI API returns no token ids). Without \
--api, /props, /get_model_info and /v1/models tell them apart.

Chat requests ({\"messages\": [...]} lines) are committed as asked. vLLM decodes them on \
/v1/chat/completions; llama.cpp's /apply-template and SGLang's /v1/tokenize render them with \
the server's own template first (the transcript records what they rendered beside the set), \
and they are decoded natively. A set is all prompts or all chats.

Exit status: 0 a receipt was signed (whatever its class), 2 the run failed or the input \
could not be read, 130 interrupted.";

const MEASURE_AFTER: &str = "\
Example:
  chit lineage bound --max-differing-positions 0 --min-first-divergent-index 0 \\
      --max-distinct-sequences 1 --repetitions 3 --out bound.json
  chit lineage measure --endpoint http://127.0.0.1:8000/v1 --model my-model \\
      --requests prompts.jsonl --levels 1,8,32 --repetitions 3 --bound bound.json \\
      --key gateway.pem --out receipt.json --transcript transcript.jsonl
  chit verify receipt.json --transcript transcript.jsonl

prompts.jsonl holds one request a line: {\"prompt\": \"...\", \"max_tokens\": 16}, or a chat:
{\"messages\": [{\"role\": \"user\", \"content\": \"...\"}], \"max_tokens\": 16}
(max_tokens is optional, --max-tokens by default).";

#[derive(Args, Debug)]
pub struct BoundArgs {
    /// Most positions that may differ between the baseline and a level.
    #[arg(long, value_name = "N")]
    pub max_differing_positions: u64,
    /// Earliest position at which a difference is tolerated.
    #[arg(long, value_name = "N")]
    pub min_first_divergent_index: u64,
    /// Most distinct sequence vectors a level may show over its repetitions.
    #[arg(long = "max-distinct-sequences", value_name = "N", value_parser = at_least(1u64))]
    pub max_distinct_sequences: u64,
    /// Repetitions every level must have.
    #[arg(long, value_name = "N", value_parser = at_least(2u64))]
    pub repetitions: u64,
    /// Where to write the bound (never overwritten).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Append the bound to this receipt log as it is committed (a log folder,
    /// a SQLite file or a postgres:// URL, made by chit log init): what proves to a third
    /// party that it came before the measurement.
    #[arg(long, value_name = "STORE")]
    pub log: Option<String>,
    /// The log's private key (default: the key file named at chit log init).
    #[arg(long, value_name = "FILE", requires = "log")]
    pub log_signing_key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct MeasureArgs {
    /// The endpoint's URL, e.g. http://127.0.0.1:8000/v1 (committed, never published).
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// The model name to ask for (published in the receipt).
    #[arg(long, value_name = "NAME")]
    pub model: String,
    /// The request set: JSON Lines, one {"prompt": ..., "max_tokens": N} or
    /// {"messages": [{"role", "content"}, ...], "max_tokens": N} a line.
    #[arg(long, value_name = "FILE")]
    pub requests: PathBuf,
    /// Levels of induced concurrency, increasing, at least two: e.g. 1,8,32.
    #[arg(long, value_name = "C,C,...", value_delimiter = ',', required = true)]
    pub levels: Vec<u64>,
    /// Repetitions of the whole set at each level.
    #[arg(long, value_name = "R", value_parser = at_least(1u64))]
    pub repetitions: u64,
    /// The committed bound ('chit lineage bound').
    #[arg(long, value_name = "FILE")]
    pub bound: PathBuf,
    /// The gateway's signing key (PKCS#8 PEM, 'chit keygen').
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// What the endpoint declares about its numerics (JSON; see docs/lineage.md).
    #[arg(long, value_name = "FILE")]
    pub numerics: Option<PathBuf>,
    /// A reroute target the operator declares batch invariant (used if coupled).
    #[arg(long, value_name = "URL")]
    pub reroute: Option<String>,
    /// Where to write the signed receipt (never overwritten).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Where to write the transcript (never overwritten).
    #[arg(long, value_name = "FILE")]
    pub transcript: PathBuf,
    /// The endpoint's API: openai (vLLM), llamacpp or sglang; detected if not given.
    #[arg(long, value_name = "API", value_parser = ["openai", "vllm", "sglang", "llamacpp"])]
    pub api: Option<String>,
    /// max_tokens for requests that do not say.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_tokens: u64,
    /// The lineage id to record (default: lineage-<unix time>).
    #[arg(long, value_name = "ID")]
    pub lineage_id: Option<String>,
    /// The gateway's name, committed in the receipt (default: chit-gateway@<host>).
    #[arg(long, value_name = "NAME")]
    pub gateway_name: Option<String>,
    /// Seconds one measured request may take in all, from sending it to its
    /// last token (the whole request, not each token); also the longest wait
    /// for any request's next bytes.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub timeout: u64,
    /// Seconds to wait for a level's fillers to be decoding.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub fill_timeout: u64,
    /// Tokens a filler request asks for (it is restarted when it ends).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub filler_max_tokens: u64,
    /// A receipt log that must already hold the bound (chit lineage bound
    /// --log): the run does not start otherwise, the checkpoint covering the
    /// bound is recorded in the transcript, and the receipt is appended to
    /// the log after the last request.
    #[arg(long, value_name = "STORE")]
    pub log: Option<String>,
    /// The log's private key (default: the key file named at chit log init).
    #[arg(long, value_name = "FILE", requires = "log")]
    pub log_signing_key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct OpenArgs {
    /// The gateway's transcript.
    #[arg(long, value_name = "FILE")]
    pub transcript: PathBuf,
    /// Write one JSON object instead.
    #[arg(long)]
    pub json: bool,

    /// Bounds on the transcript: --max-size bounds it in all and each line.
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args, Debug)]
pub struct SignArgs {
    /// The payload, a JSON file or '-'.
    #[arg(value_name = "PAYLOAD")]
    pub payload: PathBuf,

    /// The private key to sign with (PKCS#8 PEM, as 'chit keygen' writes).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,

    /// The statement's kind (run-receipt, or any other kind name).
    #[arg(long, value_name = "KIND")]
    pub kind: String,

    /// The art id of the receipt this one is about (the statement's subject).
    #[arg(long, value_name = "ART_ID")]
    pub subject: Option<String>,

    /// The system that makes the statement, a URI.
    #[arg(long, value_name = "URI", default_value = "chit://sign")]
    pub system: String,

    /// Where to write the envelope (standard output by default).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Replace FILE if it exists (without it an existing --out is refused).
    /// A link is followed, a device or FIFO is written into, a file with
    /// several hard links is refused.
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args, Debug)]
pub struct DigestArgs {
    /// The receipt, or '-' for standard input.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,

    /// Take the receipt as this kind instead of telling it from the document.
    #[arg(long, value_name = "KIND", value_parser = Kind::parse)]
    pub kind: Option<Kind>,

    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args, Debug)]
pub struct SealArgs {
    /// The receipt to seal; it is replaced unless --out is given.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,

    /// Write the sealed receipt here instead ('-' for standard output).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Replace the --out FILE if it exists (without it an existing --out is
    /// refused; sealing FILE over itself needs no --force). A link is
    /// followed, a device or FIFO is written into, a file with several hard
    /// links or that you could not write in place is refused.
    #[arg(long)]
    pub force: bool,

    /// Take the receipt as this kind instead of telling it from the document.
    #[arg(long, value_name = "KIND", value_parser = Kind::parse)]
    pub kind: Option<Kind>,

    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args, Debug)]
pub struct CanonArgs {
    /// The document, or '-' (the default) for standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,

    /// Read JSON Lines and write one canonical line per non-empty input line.
    #[arg(long)]
    pub lines: bool,

    /// The canonical form to write.
    #[arg(long, value_name = "PROFILE", default_value = "jcs")]
    pub profile: ProfileArg,

    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Bounds on what chit will read, shared by every command.
#[derive(Args, Debug, Clone, Copy)]
pub struct LimitArgs {
    /// Most nested arrays and objects in a document.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_depth, value_parser = parse_depth)]
    pub max_depth: usize,

    /// Most bytes in one input (a file, standard input, one line of JSON Lines, or a Treeship package
    /// or journal folder, its files together).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_size)]
    pub max_size: usize,

    /// Most keys in one object.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_keys)]
    pub max_keys: usize,
}

impl LimitArgs {
    pub fn limits(&self) -> Limits {
        Limits {
            max_depth: self.max_depth,
            max_size: self.max_size,
            max_keys: self.max_keys,
            ..Limits::default()
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// VALID, SIGNED or INVALID lines with findings, coloured on a terminal.
    Human,
    /// One JSON object per input (JSON Lines).
    Json,
    /// A summary fit for a pull-request comment.
    Markdown,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileArg {
    /// RFC 8785, the JSON Canonicalization Scheme.
    Jcs,
    /// Lattice's profile: as JCS, but -0 refused, lone surrogates kept as
    /// \udxxx escapes, and Lattice's limits (depth 32, 10,000 values, 256
    /// keys, 16 KiB strings, 1 MiB).
    Lattice,
}

fn parse_depth(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    if (1..=Limits::DEPTH_CEILING).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "the depth must be between 1 and {}",
            Limits::DEPTH_CEILING
        ))
    }
}

/// A whole number of at least `min`, refused in words ("at least 2"),
/// not as clap's range of the type ("not in 2..18446744073709551615").
fn at_least<T>(min: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync + 'static,
{
    move |s: &str| match s.trim().parse::<T>() {
        Ok(n) if n >= min => Ok(n),
        Ok(n) => Err(format!("{n} is too few: give at least {min}")),
        Err(_) => Err(format!("'{s}' is not a whole number (give at least {min})")),
    }
}
