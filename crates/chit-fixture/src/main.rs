//! `chit-fixture`: run the fixture server from the command line.
//!
//! ```text
//! chit-fixture [--mode coupled|invariant|one-slot] [--api openai|llamacpp|sglang]
//!              [--addr 127.0.0.1:8080] [--step-ms 2] [--model NAME]
//!              [--max-batch N] [--seed N]
//!              [--fail none|http500:N|malformed:N|no-token-ids|stall:N|
//!                      too-many-tokens:N:TOKENS:PER_EVENT|endless-line:N]
//! ```
//!
//! Prints `listening on http://ADDR` as its first stdout line, then serves
//! until killed.

#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use chit_fixture::{Api, Config, Fail, Mode};

const USAGE: &str = "usage: chit-fixture [--mode coupled|invariant|one-slot] \
[--api openai|llamacpp|sglang] [--addr HOST:PORT] [--step-ms MS] [--model NAME] \
[--max-batch N] [--seed N] [--fail none|http500:N|malformed:N|no-token-ids|stall:N|\
too-many-tokens:N:TOKENS:PER_EVENT|endless-line:N]";

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: not a number: {value:?}"))
}

fn parse_fail(value: &str) -> Result<Fail, String> {
    if let Some(rest) = value.strip_prefix("too-many-tokens:") {
        let parts: Vec<&str> = rest.split(':').collect();
        let [after, tokens, per_event] = parts[..] else {
            return Err(format!(
                "--fail: want too-many-tokens:N:TOKENS:PER_EVENT, not {value:?}"
            ));
        };
        return Ok(Fail::TooManyTokens {
            after: number("--fail", after)?,
            tokens: number("--fail", tokens)?,
            per_event: number::<u64>("--fail", per_event)?.max(1),
        });
    }
    let (kind, n) = match value.split_once(':') {
        Some((kind, n)) => (kind, Some(number::<usize>("--fail", n)?)),
        None => (value, None),
    };
    match (kind, n) {
        ("none", None) => Ok(Fail::None),
        ("no-token-ids", None) => Ok(Fail::NoTokenIds),
        ("http500", Some(n)) => Ok(Fail::Http500AfterRequests(n)),
        ("malformed", Some(n)) => Ok(Fail::MalformedAfterRequests(n)),
        ("stall", Some(n)) => Ok(Fail::StallAfterRequests(n)),
        ("endless-line", Some(n)) => Ok(Fail::EndlessLineAfterRequests(n)),
        _ => Err(format!("--fail: unknown value {value:?}")),
    }
}

fn parse(args: &[String]) -> Result<(Config, String), String> {
    let mut config = Config::default();
    let mut addr = "127.0.0.1:8080".to_string();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.to_string());
        }
        let value = args
            .get(i + 1)
            .ok_or_else(|| format!("{flag}: missing value\n{USAGE}"))?;
        match flag {
            "--mode" => {
                config.mode = match value.as_str() {
                    "coupled" => Mode::Coupled,
                    "invariant" => Mode::Invariant,
                    "one-slot" => Mode::OneSlot,
                    _ => return Err(format!("--mode: unknown mode {value:?}")),
                }
            }
            "--api" => {
                config.api = match value.as_str() {
                    "openai" => Api::OpenAi,
                    "llamacpp" => Api::LlamaCpp,
                    "sglang" => Api::SGLang,
                    _ => return Err(format!("--api: unknown api {value:?}")),
                }
            }
            "--addr" => addr = value.clone(),
            "--step-ms" => {
                config.step = Duration::from_secs_f64(number::<f64>(flag, value)? / 1000.0)
            }
            "--model" => config.model = value.clone(),
            "--max-batch" => config.max_batch = number(flag, value)?,
            "--seed" => config.seed = number(flag, value)?,
            "--fail" => config.fail = parse_fail(value)?,
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
        i += 2;
    }
    Ok((config, addr))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let (config, addr) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("chit-fixture: cannot bind {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
    println!("listening on http://{local}");
    let _ = std::io::stdout().flush();
    match chit_fixture::serve(config, listener).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chit-fixture: {e}");
            ExitCode::FAILURE
        }
    }
}
