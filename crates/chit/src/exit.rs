//! How a command ends: its exit status, and the one-line message of a
//! command that could not finish.

use std::process::ExitCode;

/// chit's exit statuses, as `chit --help` documents them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// 0: every input is valid (warnings allowed), or the command did its work.
    Ok,
    /// 1: some input is not valid, or chit refused to act on an invalid one.
    Invalid,
    /// 2: some input could not be read, the command line is wrong, or an
    /// I/O error stopped the command.
    Error,
    /// 130: interrupted (Ctrl-C or SIGTERM).
    Interrupted,
    /// 141: standard output was closed by its reader (`chit ... | head`).
    /// chit stops quietly, as ripgrep does, but not with 0: it did not
    /// finish, so it cannot say every input is valid. 141 is what a shell
    /// reports for a program ended by SIGPIPE (128 + 13), so under
    /// `set -o pipefail` chit looks like any other program cut off by a pipe.
    Closed,
    /// `chit reason`'s statuses, which are Reason's own: 0 verified (or
    /// authorized), 1 error, and under `--require-authorized` 2
    /// insufficient evidence, 3 denied, 4 conflicted.
    Reason(u8),
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Invalid => 1,
            Exit::Error => 2,
            Exit::Interrupted => 130,
            Exit::Closed => 141,
            Exit::Reason(code) => code,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

/// A command that could not finish: the status to exit with and what to
/// tell the user (one line, saying what to do next where there is a next).
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
}

impl Failure {
    /// Exit 1: chit refused an input that breaks a rule.
    pub fn invalid(message: impl std::fmt::Display) -> Failure {
        Failure {
            exit: Exit::Invalid,
            message: message.to_string(),
        }
    }

    /// Exit 2: unreadable input, a wrong command line, or an I/O error (a
    /// message, or a typed error told in its words).
    pub fn error(message: impl std::fmt::Display) -> Failure {
        Failure {
            exit: Exit::Error,
            message: message.to_string(),
        }
    }

    /// Standard output could not be written. A reader that closed it
    /// (`| head`) is no error worth a message: chit ends quietly with 141.
    pub fn write(e: std::io::Error) -> Failure {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Failure::closed();
        }
        Failure::error(format!("cannot write output: {e}"))
    }

    /// Standard output was closed by its reader: exit 141, no message.
    pub fn closed() -> Failure {
        Failure {
            exit: Exit::Closed,
            message: String::new(),
        }
    }
}

/// What a command returns.
pub type CmdResult = Result<Exit, Failure>;
