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

Signed receipts are DSSE envelopes carrying a Treeship receipt statement,
byte-compatible with Treeship. 'chit verify --trust FILE' checks the
signature, the art id, the statement and then the payload under its kind.

Exit status:
  0  every input is valid (warnings allowed)
  1  some input is not valid
  2  some input could not be read, or the command line is wrong";

const AFTER_HELP: &str = "\
Examples:
  chit verify receipt.json               check one receipt
  chit verify receipts/                  every *.json below a folder, both cores
  chit verify --json receipts/ > out.jsonl
  chit verify --lines stream.jsonl       one receipt a line
  chit verify --format markdown r.json   a pull-request comment
  chit digest receipt.json               the digest it should carry
  chit seal receipt.json                 check it, then write its digest in
  chit canon doc.json | sha256sum        RFC 8785 canonical bytes

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
    /// Make a new Ed25519 signing key.
    #[command(
        long_about = "Write a new Ed25519 private key to FILE (PKCS#8 PEM, readable by you only; \
an existing file is never overwritten) and print its public key as did:key:z6Mk... and in \
Treeship's ed25519:<base64url> form. The private key is never printed."
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
    /// Print a document's canonical JSON bytes (RFC 8785).
    #[command(
        long_about = "Print a JSON document's canonical bytes under RFC 8785: keys sorted by \
UTF-16 code unit, no whitespace, numbers as ECMAScript writes them, strings as JSON.stringify \
writes them. The document is read strictly first (no duplicate keys, no lone surrogates). \
The bytes are written as they are, with no newline added, so they can be piped into a hash; \
on a terminal a newline is added for readability."
    )]
    Canon(CanonArgs),
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
  UNREADABLE path
    error read: line 3, column 7: duplicate key \"grade\"

With --json, one JSON object per input, one per line (JSON Lines):
  {\"file\": PATH, \"line\": N (with --lines only), \"kind\": KIND or null,
   \"valid\": BOOL, \"errors\": [FINDING...], \"warnings\": [FINDING...]}
  FINDING = {\"rule\": ID, \"message\": TEXT, \"path\": JSON-POINTER}
Rule ids are the specification's (S1, G1, D1, ...), plus \"schema\" for a schema \
violation, \"read\" for input that could not be read and \"kind\" for a document of \
no known kind. This form is stable: fields may be added, never renamed or removed.";

const VERIFY_AFTER: &str = "\
Examples:
  chit verify receipt.json
  chit verify --quiet receipts/          only what is not valid, then a summary
  cat receipt.json | chit verify -
  chit verify --json --lines stream.jsonl | jq 'select(.valid | not)'";

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

    /// Report only the inputs that are not valid, then the summary.
    #[arg(short, long)]
    pub quiet: bool,

    /// Read JSON Lines: every non-empty line of each input is one receipt.
    #[arg(long)]
    pub lines: bool,

    /// Check every input as this kind instead of telling it from the document.
    #[arg(long, value_name = "KIND", value_parser = parse_kind)]
    pub kind: Option<Kind>,

    /// The keys whose signatures count: a TOML file of [[key]] tables, each with
    /// name, public_key (did:key:... or ed25519:...) and optional kinds = [...].
    #[arg(long, value_name = "FILE")]
    pub trust: Option<PathBuf>,

    /// Distinct trusted keys an envelope needs (one key signing twice counts once).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub threshold: u32,

    /// Packets each stream must hold: fewer means its tail was cut off (P8).
    #[arg(long, value_name = "N")]
    pub expect_count: Option<usize>,

    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Where to write the private key (refused if it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
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

    /// The workload: a program and its arguments, after '--'.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
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

    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Args, Debug)]
pub struct DigestArgs {
    /// The receipt, or '-' for standard input.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,

    /// Take the receipt as this kind instead of telling it from the document.
    #[arg(long, value_name = "KIND", value_parser = parse_kind)]
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

    /// Take the receipt as this kind instead of telling it from the document.
    #[arg(long, value_name = "KIND", value_parser = parse_kind)]
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

    /// Most bytes in a document (or a line, with --lines).
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
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// VALID/INVALID lines with findings, coloured on a terminal.
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
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    Kind::from_name(s).ok_or_else(|| {
        let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        format!("unknown kind '{s}'; chit knows: {}", known.join(", "))
    })
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
