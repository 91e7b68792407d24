//! chit: produce, verify and audit receipts of AI work.
//!
//! This file only parses the command line and dispatches: each command is
//! one file under `commands/`, every verdict comes from `chit_core`, and
//! the rest reads inputs (`inputs`), writes files (`files`), renders
//! verdicts (`render`) and writes output (`output`).

#![forbid(unsafe_code)]

mod cli;
mod commands;
mod exit;
mod files;
mod inputs;
mod output;
mod render;
mod serve;
mod shared;
mod witness;

use clap::Parser;
use cli::{
    Cli, ColorWhen, Command, KeyCommand, LineageCommand, LogCommand, PacketsCommand, WitnessCommand,
};
use exit::{Exit, Failure};
use output::Output;
use std::io::Write;
use std::process::ExitCode;

/// Checking is allocation-heavy and runs on every core; mimalloc's per-thread
/// heaps keep the allocator off the critical path.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let choice = match cli.color {
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
        ColorWhen::Auto => anstream::ColorChoice::Auto,
    };
    choice.write_global();
    let colour = anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never;
    let mut out = Output::stdout(colour);
    let result = dispatch(&cli.command, &mut out);
    let flushed = out.flush();
    let exit = match result {
        Ok(exit) => exit,
        Err(Failure { exit, message }) if message.is_empty() => exit,
        Err(Failure { exit, message }) => {
            let mut err = anstream::stderr();
            let style = anstyle::AnsiColor::Red.on_default().bold();
            // A path in the message cannot start a line of its own.
            let message = render::escape(&message);
            let _ = writeln!(err, "{style}chit:{style:#} {message}");
            exit
        }
    };
    if let Err(e) = flushed {
        // A closed pipe (`chit verify ... | head`) is not worth a message,
        // but the command did not finish (see `Exit::Closed`).
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Exit::Closed.into();
        }
        eprintln!("chit: cannot write output: {e}");
        return Exit::Error.into();
    }
    exit.into()
}

fn dispatch(command: &Command, out: &mut Output) -> exit::CmdResult {
    use commands::*;
    match command {
        Command::Verify(a) => verify::run(a, out),
        Command::Digest(a) => digest::run(a, out),
        Command::Seal(a) => seal::run(a, out),
        Command::Canon(a) => canon::run(a, out),
        Command::Keygen(a) => key::keygen(a, out),
        Command::Key(KeyCommand::Show { file }) => key::show(file, out),
        Command::Sign(a) => sign::run(a, out),
        Command::Packets(PacketsCommand::Recompute(a)) => recompute::run(a, out),
        Command::Lineage(LineageCommand::Bound(a)) => lineage::bound(a, out),
        Command::Lineage(LineageCommand::Measure(a)) => lineage::measure(a, out),
        Command::Lineage(LineageCommand::Open(a)) => lineage::open(a, out),
        Command::Reason(a) => reason::run(a, out),
        Command::Log(LogCommand::Watch(a)) => watch::run(a, out),
        Command::Log(c) => log::run(c, out),
        Command::Serve(a) => crate::serve::run(a, out),
        Command::Witness(WitnessCommand::Serve(a)) => crate::witness::run(a, out),
    }
}
