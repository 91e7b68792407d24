//! What the server reads off a connection before hyper does. Every
//! request head is read whole and vetted here ([`vet`]) before a byte of
//! it reaches hyper, so that a head hyper would refuse with an empty
//! answer of its own is refused here first, in JSON, counted and logged as
//! every other answer: a malformed request line or header, HTTP/0.9, a
//! version this server does not speak, too many or too large headers, a
//! `Content-Length` that is not a number, a missing or doubled `Host`
//! (RFC 9112 §3.2), framing that could be read two ways. Nothing is
//! rewritten: what passes goes to hyper byte for byte.
//!
//! To find where the next head starts, each body is followed by its
//! framing (its length, or its chunks) as it passes. A refused head ends
//! the connection: hyper reads the end of the stream, finishes the answers
//! it owes, and the refusal is written as the connection shuts down
//! ([`Vetted`]'s `poll_shutdown`), so it follows them in order.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Most bytes in a request head (its request line and header fields).
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header fields in a request head.
pub const MAX_HEADERS: usize = 100;
/// Most bytes of one chunk's extensions, and of a chunked body's trailer
/// fields in all.
const MAX_CHUNK_LINE: u64 = 4096;
const MAX_TRAILERS: u64 = 16 * 1024;

/// A head refused here: its status, why, and what was read of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
    /// The method and path, where the request line could be read.
    pub method: Option<String>,
    pub path: Option<String>,
}

impl Refusal {
    fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
            method: None,
            path: None,
        }
    }

    /// The whole answer: a JSON body, and the connection closed after it.
    pub fn answer(&self) -> Vec<u8> {
        let body = serde_json::json!({ "error": self.message }).to_string();
        let reason = http::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Refused");
        format!(
            "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\n\
             x-content-type-options: nosniff\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            self.status,
            body.len()
        )
        .into_bytes()
    }
}

/// Who hears of each refusal (the server's metrics and access log).
pub trait Observe: Send + Sync {
    fn refused(&self, r: &Refusal);
}

/// What this layer learnt of a connection that a request's handler may
/// need: why a chunked body was cut short (hyper then sees only its end).
#[derive(Default)]
pub struct FramingNote(Mutex<Option<String>>);

impl FramingNote {
    pub fn framing_error(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn set(&self, why: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }
}

/// How a vetted request's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
}

/// A vetted head: its length, its body's framing, and whether hyper ends
/// the connection after its answer (an `Upgrade` or `CONNECT` request:
/// hyper keeps the connection for an upgrade and answers nothing after
/// it, so nothing after it is vetted or answered here either).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub framing: Framing,
    pub last: bool,
}

/// Where a request head ends and how its body is framed, or why it is
/// refused. `head` is one whole head: it ends with its blank line.
pub fn vet(head: &[u8], max_body: u64) -> Result<Head, Refusal> {
    vet_start(head, max_body)
        .unwrap_or_else(|| Err(Refusal::new(400, "the request's head has no end")))
}

/// [`vet`] of the head `bytes` start with, if they hold one whole (None
/// when they end before it does; a refusal as soon as what they hold is
/// wrong).
fn vet_start(bytes: &[u8], max_body: u64) -> Option<Result<Head, Refusal>> {
    // Not zeroed first (as hyper's are not): httparse writes what it reads.
    let mut fields =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(bytes, &mut fields) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return None,
        Err(e) => return Some(Err(parse_error(e, bytes))),
    };
    Some(vet_fields(&req, len, max_body))
}

/// What a parsed head of `len` bytes says: its framing, or its refusal.
fn vet_fields(req: &httparse::Request<'_, '_>, len: usize, max_body: u64) -> Result<Head, Refusal> {
    let method = req.method.unwrap_or_default();
    let path = req.path.unwrap_or_default();
    let at = |mut r: Refusal| {
        r.method = Some(method.to_string());
        r.path = Some(path.split('?').next().unwrap_or_default().to_string());
        r
    };
    if http::Method::from_bytes(method.as_bytes()).is_err() {
        return Err(at(Refusal::new(400, "the request's method is not one")));
    }
    if !plain_path(path) && http::Uri::try_from(path).is_err() {
        return Err(at(Refusal::new(
            400,
            "the request's target is not a URI: send a path such as /v1/entries",
        )));
    }
    let http11 = req.version == Some(1);
    let mut last = method == "CONNECT";
    let mut hosts = 0;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    for f in req.headers.iter() {
        if f.name.eq_ignore_ascii_case("host") {
            hosts += 1;
            if hosts > 1 {
                return Err(at(Refusal::new(
                    400,
                    "more than one Host header (RFC 9112 §3.2): send one",
                )));
            }
            if !f.value.is_empty()
                && !plain_host(f.value)
                && http::uri::Authority::try_from(f.value).is_err()
            {
                return Err(at(Refusal::new(
                    400,
                    "the Host header is not a host[:port] (RFC 9112 §3.2)",
                )));
            }
        } else if f.name.eq_ignore_ascii_case("content-length") {
            let n = digits(f.value).ok_or_else(|| {
                at(Refusal::new(
                    400,
                    "Content-Length is not a number of bytes (digits only)",
                ))
            })?;
            if length.is_some_and(|m| m != n) {
                return Err(at(Refusal::new(
                    400,
                    "two Content-Length headers that disagree: send one",
                )));
            }
            length = Some(n);
        } else if f.name.eq_ignore_ascii_case("upgrade") {
            last = true;
        } else if f.name.eq_ignore_ascii_case("transfer-encoding") {
            if !http11 {
                return Err(at(Refusal::new(
                    400,
                    "Transfer-Encoding in an HTTP/1.0 request: send HTTP/1.1, or a Content-Length",
                )));
            }
            // ASCII whitespace only: hyper takes no other around it.
            let chunked_only = f.value.trim_ascii().eq_ignore_ascii_case(b"chunked");
            if chunked || !chunked_only {
                return Err(at(Refusal::new(
                    400,
                    "Transfer-Encoding other than one \"chunked\": send the body plain, \
                     chunked or with its Content-Length",
                )));
            }
            chunked = true;
        }
    }
    if http11 && hosts == 0 {
        return Err(at(Refusal::new(
            400,
            "an HTTP/1.1 request needs a Host header (RFC 9112 §3.2)",
        )));
    }
    let framing = match (length, chunked) {
        (Some(_), true) => {
            return Err(at(Refusal::new(
                400,
                "both Content-Length and Transfer-Encoding: send one (RFC 9112 §6.3)",
            )))
        }
        (_, true) => Framing::Chunked,
        (Some(n), false) if n > max_body => {
            return Err(at(Refusal::new(
                413,
                format!("a body of at most {max_body} bytes (the most any route takes)"),
            )))
        }
        (n, false) => Framing::Length(n.unwrap_or(0)),
    };
    Ok(Head { len, framing, last })
}

/// The bytes of a plain path: letters, digits and the usual marks.
const PATH_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let marks = b"/-._~?=&%:+,;@!$*'()";
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric();
        i += 1;
    }
    let mut m = 0;
    while m < marks.len() {
        t[marks[m] as usize] = true;
        m += 1;
    }
    t
};

/// Whether `path` is an origin-form target of bytes every URI reader
/// takes (a path and query of letters, digits and the usual marks): the
/// common case, vetted without building a `Uri`.
fn plain_path(path: &str) -> bool {
    path.starts_with('/') && path.len() < 8192 && path.bytes().all(|b| PATH_BYTES[usize::from(b)])
}

/// Whether a Host value is a plain name or IPv4 address with an optional
/// port (letters, digits, `-._~`, then `:` and a port number): the common
/// case, vetted without building an `Authority` (every such value is
/// one).
fn plain_host(v: &[u8]) -> bool {
    let (host, port) = match memchr::memchr(b':', v) {
        Some(i) => (&v[..i], Some(&v[i + 1..])),
        None => (v, None),
    };
    let name = |b: &u8| b.is_ascii_alphanumeric() || b"-._~".contains(b);
    !host.is_empty()
        && host.iter().all(name)
        && port.is_none_or(|p| {
            (1..=5).contains(&p.len())
                && p.iter().all(u8::is_ascii_digit)
                && std::str::from_utf8(p).is_ok_and(|p| p.parse::<u16>().is_ok())
        })
}

/// 1*DIGIT as a u64 (RFC 9110 §8.6), or None.
fn digits(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// What a head httparse refuses is answered.
fn parse_error(e: httparse::Error, head: &[u8]) -> Refusal {
    use httparse::Error as E;
    // The request line's words.
    let first = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let words: Vec<&[u8]> = first.split(|&b| b == b' ').collect();
    let request_line = || Refusal::new(400, "a malformed request line: send METHOD PATH HTTP/1.1");
    match e {
        E::TooManyHeaders => Refusal::new(
            431,
            format!("more than {MAX_HEADERS} header fields: send fewer"),
        ),
        E::Token | E::Version if words.len() == 2 && !words[1].is_empty() => Refusal::new(
            400,
            "an HTTP/0.9 request (no version): this server speaks HTTP/1.1",
        ),
        E::Version => match words.get(2) {
            Some(v) if words.len() == 3 && v.starts_with(b"HTTP/") => Refusal::new(
                505,
                format!(
                    "{} is not served: send HTTP/1.1 (or HTTP/1.0)",
                    String::from_utf8_lossy(v)
                ),
            ),
            _ => request_line(),
        },
        E::Token => request_line(),
        E::HeaderName => Refusal::new(400, "a malformed header field name"),
        E::HeaderValue => Refusal::new(400, "a header field's value holds a byte a value may not"),
        E::NewLine | E::Status => Refusal::new(400, "a line of the head does not end in CRLF"),
    }
}

/// Where a connection is: which bytes to come are a head, and how much of
/// a body is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Length(u64),
    Chunk(Chunk),
    /// Refused, cut off or at its end: hyper reads the end of the stream.
    Closed,
}

/// Where a chunked body is (RFC 9112 §7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// A chunk size's first digit.
    SizeStart,
    Size(u64),
    /// Whitespace after the size.
    SizeSpace(u64),
    /// A chunk extension, its bytes so far.
    Ext(u64, u64),
    SizeLf(u64),
    Data(u64),
    DataCr,
    DataLf,
    /// A line of the trailer section starts; the trailers' bytes so far.
    LineStart(u64),
    Trailer(u64),
    TrailerLf(u64),
    EndLf,
}

/// Progress through a head not yet whole: what of it has been scanned.
#[derive(Debug, Default, Clone, Copy)]
struct HeadScan {
    /// Where the line being read starts.
    line: usize,
    /// How far newlines have been looked for.
    scanned: usize,
    /// Where the request line ends, once it is whole.
    first: Option<usize>,
    /// Whether it was vetted alone (the head not yet whole).
    first_vetted: bool,
}

/// A connection's bytes as they go to hyper: heads vetted, bodies
/// followed. See the module's comment.
pub struct Vetted<IO> {
    io: IO,
    /// Bytes read and not yet given to hyper: `staged[..released]` may go.
    staged: Vec<u8>,
    released: usize,
    phase: Phase,
    scan: HeadScan,
    max_body: u64,
    /// Whether the request being read ends the connection.
    last: bool,
    /// A refused head, answered once hyper asks for the request it was
    /// (it reads no further after an answer that closes the connection,
    /// and then this one is neither written nor counted); the answer, and
    /// how much of it is written.
    refused: Option<Refusal>,
    answer: Option<(Vec<u8>, usize)>,
    observer: Arc<dyn Observe>,
    note: Arc<FramingNote>,
    /// How long a client may read nothing of what is written to it, and
    /// since when it has not (a client that stops reading is cut off, as
    /// one that sends slowly is).
    write_limit: std::time::Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// What [`Vetted::walk`] found in new bytes: how many may go to hyper;
/// whether the connection ends after them (refused or cut off).
struct Walked {
    release: usize,
    ends: bool,
}

impl<IO> Vetted<IO> {
    pub fn new(
        io: IO,
        max_body: u64,
        write_limit: std::time::Duration,
        observer: Arc<dyn Observe>,
        note: Arc<FramingNote>,
    ) -> Self {
        Vetted {
            io,
            staged: Vec::new(),
            released: 0,
            phase: Phase::Head,
            scan: HeadScan::default(),
            max_body,
            last: false,
            refused: None,
            answer: None,
            observer,
            note,
            write_limit,
            stalled: None,
        }
    }

    /// A write that could not go on: Pending, or an error once the client
    /// has read nothing for `write_limit`.
    fn stall<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.write_limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing of its answer in time",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// What a write gave: a stall is timed, anything else ends one.
    fn timed<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => self.stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }

    /// Where a request's body ends: at the next head, or at the end of
    /// the connection after an upgrade request (hyper serves nothing after
    /// it).
    fn after_body(&self) -> Phase {
        if self.last {
            Phase::Closed
        } else {
            Phase::Head
        }
    }

    fn refuse(&mut self, r: Refusal) -> Walked {
        self.refused = Some(r);
        self.phase = Phase::Closed;
        Walked {
            release: 0,
            ends: true,
        }
    }

    /// Follows `data`, the bytes after those already walked (a head not yet
    /// whole is given again from its start, with what came after it).
    fn walk(&mut self, data: &[u8]) -> Walked {
        let mut i = 0;
        while i < data.len() {
            match self.phase {
                Phase::Head => match self.head(&data[i..]) {
                    None => {
                        return Walked {
                            release: i,
                            ends: false,
                        }
                    }
                    Some(Err(r)) => {
                        let w = self.refuse(r);
                        return Walked { release: i, ..w };
                    }
                    Some(Ok(head)) => {
                        i += head.len;
                        self.scan = HeadScan::default();
                        self.last = head.last;
                        self.phase = match head.framing {
                            Framing::Length(0) => self.after_body(),
                            Framing::Length(n) => Phase::Length(n),
                            Framing::Chunked => Phase::Chunk(Chunk::SizeStart),
                        };
                    }
                },
                Phase::Length(left) => {
                    let take = left.min((data.len() - i) as u64);
                    i += take as usize;
                    self.phase = if take == left {
                        self.after_body()
                    } else {
                        Phase::Length(left - take)
                    };
                }
                Phase::Chunk(Chunk::Data(left)) => {
                    let take = left.min((data.len() - i) as u64);
                    i += take as usize;
                    self.phase = Phase::Chunk(if take == left {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(left - take)
                    });
                }
                Phase::Chunk(c) => match chunk_step(c, data[i]) {
                    Ok(next) => {
                        i += 1;
                        self.phase = match next {
                            Some(c) => Phase::Chunk(c),
                            None => self.after_body(),
                        };
                    }
                    Err(why) => {
                        // What came before goes on; hyper then reads the
                        // end of the stream mid-body, and the handler says
                        // why (from the note).
                        self.note
                            .set(format!("the chunked body is malformed: {why}"));
                        self.phase = Phase::Closed;
                        return Walked {
                            release: i,
                            ends: true,
                        };
                    }
                },
                Phase::Closed => {
                    return Walked {
                        release: i,
                        ends: true,
                    }
                }
            }
        }
        Walked {
            release: i,
            ends: false,
        }
    }

    /// A head from its start in `h`: None while it is not whole (and
    /// within [`MAX_HEAD`]); else what it is, or its refusal.
    /// The request line is vetted as soon as it is whole, so HTTP/0.9 or a
    /// bad method is answered without waiting for a blank line.
    fn head(&mut self, h: &[u8]) -> Option<Result<Head, Refusal>> {
        // Most heads come whole in one read: vetted at once, where httparse
        // finds their end within MAX_HEAD bytes. A head not whole yet, or
        // one after empty lines, goes the long way.
        if self.scan.scanned == 0 && !matches!(h.first(), Some(b'\r' | b'\n')) {
            if let Some(vetted) = vet_start(&h[..h.len().min(MAX_HEAD)], self.max_body) {
                return Some(vetted);
            }
        }
        while let Some(off) = memchr::memchr(b'\n', &h[self.scan.scanned..]) {
            let nl = self.scan.scanned + off;
            let line = &h[self.scan.line..nl];
            let empty = line.is_empty() || line == b"\r";
            self.scan.scanned = nl + 1;
            self.scan.line = nl + 1;
            if nl + 1 > MAX_HEAD {
                break;
            }
            if self.scan.first.is_none() {
                // Empty lines before a request line are skipped (RFC 9112
                // §2.2), by hyper too.
                if !empty {
                    self.scan.first = Some(nl + 1);
                }
                continue;
            }
            if empty {
                return Some(vet(&h[..nl + 1], self.max_body));
            }
        }
        self.scan.scanned = h.len();
        if h.len() > MAX_HEAD {
            return Some(Err(Refusal::new(
                431,
                format!("a request head of more than {MAX_HEAD} bytes: send smaller headers"),
            )));
        }
        // Not whole yet: its request line alone, once, so that HTTP/0.9 or
        // a bad method is answered without waiting for a blank line.
        if let (Some(end), false) = (self.scan.first, self.scan.first_vetted) {
            self.scan.first_vetted = true;
            let mut none = [];
            match httparse::Request::new(&mut none).parse(&h[..end]) {
                // No room for a header: the line itself read.
                Ok(_) | Err(httparse::Error::TooManyHeaders) => {}
                Err(e) => return Some(Err(parse_error(e, &h[..end]))),
            }
        }
        None
    }
}

/// One byte of a chunked body's framing: the state after it (None: the
/// body ended), or why it does not belong.
fn chunk_step(c: Chunk, b: u8) -> Result<Option<Chunk>, &'static str> {
    use Chunk::*;
    let hex = |b: u8| (b as char).to_digit(16).map(u64::from);
    let grow = |n: u64, d: u64| {
        n.checked_mul(16)
            .and_then(|n| n.checked_add(d))
            .ok_or("a chunk size past 2^64")
    };
    Ok(Some(match (c, b) {
        (SizeStart, b) => Size(hex(b).ok_or("a chunk size is not hexadecimal")?),
        (Size(n), b'\r') | (SizeSpace(n), b'\r') | (Ext(n, _), b'\r') => SizeLf(n),
        (Size(n), b' ' | b'\t') | (SizeSpace(n), b' ' | b'\t') => SizeSpace(n),
        (Size(n), b';') | (SizeSpace(n), b';') => Ext(n, 0),
        (Size(n), b) => Size(grow(n, hex(b).ok_or("a chunk size is not hexadecimal")?)?),
        (SizeSpace(_), _) => return Err("a chunk size is followed by something else"),
        (Ext(_, _), b'\n') => return Err("a chunk extension holds a bare LF"),
        (Ext(n, len), _) => {
            if len >= MAX_CHUNK_LINE {
                return Err("a chunk extension is too long");
            }
            Ext(n, len + 1)
        }
        (SizeLf(0), b'\n') => LineStart(0),
        (SizeLf(n), b'\n') => Data(n),
        (SizeLf(_), _) => return Err("a chunk size line does not end in CRLF"),
        (Data(_), _) => unreachable!("chunk data is skipped by its length"),
        (DataCr, b'\r') => DataLf,
        (DataLf, b'\n') => SizeStart,
        (DataCr | DataLf, _) => return Err("a chunk's data does not end in CRLF"),
        (LineStart(_), b'\r') => EndLf,
        (LineStart(n), b) | (Trailer(n), b) => {
            if b == b'\n' {
                return Err("a trailer field holds a bare LF");
            }
            if n >= MAX_TRAILERS {
                return Err("the trailer fields are too long");
            }
            if b == b'\r' {
                TrailerLf(n + 1)
            } else {
                Trailer(n + 1)
            }
        }
        (TrailerLf(n), b'\n') => LineStart(n + 1),
        (TrailerLf(_), _) => return Err("a trailer field does not end in CRLF"),
        (EndLf, b'\n') => return Ok(None),
        (EndLf, _) => return Err("the chunked body does not end in CRLF"),
    }))
}

impl<IO: AsyncRead + Unpin> AsyncRead for Vetted<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.released > 0 {
                let n = this.released.min(out.remaining());
                out.put_slice(&this.staged[..n]);
                this.staged.drain(..n);
                this.released -= n;
                return Poll::Ready(Ok(()));
            }
            if this.phase == Phase::Closed {
                // hyper asks for the next request: a refusal of it is due.
                if let Some(r) = this.refused.take() {
                    this.observer.refused(&r);
                    this.answer = Some((r.answer(), 0));
                }
                this.staged.clear();
                return Poll::Ready(Ok(()));
            }
            if this.staged.is_empty() {
                // Read straight into hyper's buffer; what must wait (a
                // head not yet whole) moves aside.
                let before = out.filled().len();
                ready!(Pin::new(&mut this.io).poll_read(cx, out))?;
                let new = &out.filled()[before..];
                if new.is_empty() {
                    this.phase = Phase::Closed;
                    return Poll::Ready(Ok(()));
                }
                let w = this.walk(new);
                if w.release < new.len() {
                    if !w.ends {
                        this.staged.extend_from_slice(&new[w.release..]);
                    }
                    out.set_filled(before + w.release);
                }
                if w.release > 0 {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            // A head not yet whole: more of it, then walked from its start.
            let start = this.staged.len();
            this.staged.resize(start + 8192, 0);
            let mut buf = ReadBuf::new(&mut this.staged[start..]);
            let polled = Pin::new(&mut this.io).poll_read(cx, &mut buf);
            let n = buf.filled().len();
            this.staged.truncate(start + n);
            ready!(polled)?;
            if n == 0 {
                // The client left mid-head: nothing of it goes on.
                this.phase = Phase::Closed;
                continue;
            }
            let staged = std::mem::take(&mut this.staged);
            let w = this.walk(&staged);
            this.staged = staged;
            if w.ends {
                this.staged.truncate(w.release);
            }
            this.released = w.release;
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Vetted<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.timed(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.timed(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.timed(cx, r)
    }

    /// hyper shuts the connection down once it has written every answer it
    /// owes: a refusal goes out here, after them.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while let Some((bytes, at)) = &mut this.answer {
            if *at < bytes.len() {
                let r = Pin::new(&mut this.io).poll_write(cx, &bytes[*at..]);
                let n = ready!(this.timed(cx, r))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                if let Some((_, at)) = &mut this.answer {
                    *at += n;
                }
            } else {
                let r = Pin::new(&mut this.io).poll_flush(cx);
                ready!(this.timed(cx, r))?;
                this.answer = None;
            }
        }
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[derive(Default)]
    struct Count(Mutex<Vec<Refusal>>);
    impl Observe for Count {
        fn refused(&self, r: &Refusal) {
            self.0.lock().unwrap().push(r.clone());
        }
    }

    /// What hyper would read of `input` sent in pieces of `step` bytes,
    /// what is written at shutdown, the refusals observed and the note.
    fn through(input: &[u8], step: usize) -> (Vec<u8>, Vec<u8>, Vec<Refusal>, Option<String>) {
        read_through(input, step, 7)
    }

    /// As [`through`], hyper reading `read` bytes at most at a time (a
    /// head whole in its first read is vetted there).
    fn read_through(
        input: &[u8],
        step: usize,
        read: usize,
    ) -> (Vec<u8>, Vec<u8>, Vec<Refusal>, Option<String>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let (mut client, server) = tokio::io::duplex(1 << 20);
            let seen = Arc::new(Count::default());
            let note = Arc::new(FramingNote::default());
            let limit = std::time::Duration::from_secs(5);
            let mut v = Vetted::new(server, 1000, limit, seen.clone(), note.clone());
            let data = input.to_vec();
            let writer = tokio::spawn(async move {
                for piece in data.chunks(step.max(1)) {
                    if client.write_all(piece).await.is_err() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                let _ = client.shutdown().await;
                let mut back = Vec::new();
                let _ = client.read_to_end(&mut back).await;
                back
            });
            let mut got = Vec::new();
            let mut buf = vec![0u8; read];
            loop {
                let n = v.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            v.shutdown().await.unwrap();
            drop(v);
            let back = writer.await.unwrap();
            let refusals = seen.0.lock().unwrap().clone();
            (got, back, refusals, note.framing_error())
        })
    }

    const GET: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

    /// Valid requests pass byte for byte, in any pieces: fixed and chunked
    /// bodies (with extensions and trailers), pipelined, leading CRLFs.
    #[test]
    fn valid_requests_pass_unchanged_in_any_pieces() {
        let mut all = Vec::new();
        all.extend_from_slice(GET);
        all.extend_from_slice(
            b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{\"a\":",
        );
        all.extend_from_slice(b"\r\n");
        all.extend_from_slice(
            b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
              3;x=y\r\nabc\r\n10 \r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n",
        );
        all.extend_from_slice(b"GET / HTTP/1.0\r\n\r\n");
        for step in [1, 2, 3, 7, 64, 100_000] {
            for read in [7, 1 << 17] {
                let (got, back, refused, note) = read_through(&all, step, read);
                assert_eq!(got, all, "step {step}, read {read}");
                assert!(back.is_empty() && refused.is_empty() && note.is_none());
            }
        }
    }

    /// A refused head after valid requests: those pass, the refusal is
    /// the answer written at shutdown, in JSON, and nothing after it goes on.
    #[test]
    fn a_bad_head_is_refused_in_json_after_what_came_before() {
        for (bad, status, says) in [
            (&b"GET /\r\n\r\n"[..], 400, "HTTP/0.9"),
            (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "HTTP/2.0"),
            (b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "request line"),
            (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "Content-Length"),
            (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "disagree"),
            (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", 413, "at most 1000"),
            (b"GET / HTTP/1.1\r\n\r\n", 400, "Host"),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host"),
            (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "chunked"),
            (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400, "both"),
            (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"),
            (b"GET / HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n", 400, "header field name"),
        ] {
            let mut input = GET.to_vec();
            input.extend_from_slice(bad);
            input.extend_from_slice(GET);
            for (step, read) in [(1, 7), (5, 7), (100_000, 7), (100_000, 1 << 17)] {
                let (got, back, refused, _) = read_through(&input, step, read);
                assert_eq!(got, GET, "{}", String::from_utf8_lossy(bad));
                let back = String::from_utf8(back).unwrap();
                assert!(back.starts_with(&format!("HTTP/1.1 {status} ")), "{back}");
                assert!(back.contains("connection: close\r\n"), "{back}");
                let body = back.split("\r\n\r\n").nth(1).unwrap();
                let v: serde_json::Value = serde_json::from_str(body).unwrap();
                assert!(v["error"].as_str().unwrap().contains(says), "{back}");
                assert_eq!(refused.len(), 1);
                assert_eq!(refused[0].status, status);
            }
        }
    }

    /// Too many headers, or a head too large (with no end in sight), are
    /// 431 before hyper's own limits are reached.
    #[test]
    fn large_heads_are_431() {
        let mut many = b"GET / HTTP/1.1\r\nHost: x\r\n".to_vec();
        for i in 0..MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        let (read, back, _, _) = through(&many, 4096);
        assert!(read.is_empty());
        assert!(back.starts_with(b"HTTP/1.1 431 "));
        let mut large = b"GET / HTTP/1.1\r\nHost: x\r\nX: ".to_vec();
        large.resize(MAX_HEAD + 10, b'a');
        let (read, back, _, _) = through(&large, 1000);
        assert!(read.is_empty());
        assert!(String::from_utf8_lossy(&back).contains("more than 65536 bytes"));
    }

    /// Every Host value taken without building an Authority is one; the
    /// others are left to it.
    #[test]
    fn a_plain_host_is_an_authority() {
        let plain = [
            &b"x"[..],
            b"127.0.0.1:8080",
            b"example.com",
            b"a-b.c_d~e:1",
            b"h:65535",
        ];
        for v in plain {
            assert!(plain_host(v), "{}", String::from_utf8_lossy(v));
            assert!(http::uri::Authority::try_from(v).is_ok());
        }
        let not_plain = [
            &b""[..],
            b":80",
            b"x:",
            b"x:65536",
            b"x:123456",
            b"x:8a",
            b"x:1:2",
            b"[::1]:80",
            b"user@host",
            b"a b",
            b"h\xff",
        ];
        for v in not_plain {
            assert!(!plain_host(v), "{}", String::from_utf8_lossy(v));
        }
        // Byte by byte: a value of one name byte and a port is plain only
        // where the Authority reader takes it too.
        for b in 0..=255u8 {
            for v in [vec![b], vec![b'a', b, b'b'], vec![b, b':', b'8']] {
                if plain_host(&v) {
                    assert!(http::uri::Authority::try_from(&v[..]).is_ok(), "{v:?}");
                }
            }
        }
    }

    /// A head of MAX_HEAD bytes, blank line included, passes; one byte
    /// more is 431; the same whether it comes whole in one read or in
    /// pieces.
    #[test]
    fn the_head_limit_is_one_limit_however_the_head_arrives() {
        let head = |len: usize| {
            let mut h = b"GET / HTTP/1.1\r\nHost: x\r\nX: ".to_vec();
            h.resize(len - 4, b'a');
            h.extend_from_slice(b"\r\n\r\n");
            h
        };
        for (step, read) in [(1000, 7), (4096, 7), (100_000, 7), (100_000, 1 << 17)] {
            let at = head(MAX_HEAD);
            let (got, back, refused, _) = read_through(&at, step, read);
            assert_eq!(got, at, "step {step}, read {read}");
            assert!(back.is_empty() && refused.is_empty(), "step {step}");
            for over in [MAX_HEAD + 1, MAX_HEAD + 3] {
                let (got, back, _, _) = read_through(&head(over), step, read);
                assert!(got.is_empty(), "{over} bytes, step {step}, read {read}");
                assert!(back.starts_with(b"HTTP/1.1 431 "), "{over} bytes");
            }
        }
    }

    /// A chunked body whose framing is wrong is cut short where it goes
    /// wrong, with the reason in the note (no answer of this layer's: the
    /// handler answers).
    #[test]
    fn bad_chunks_cut_the_body_short_with_a_reason() {
        for (chunks, why) in [
            (&b"zz\r\n"[..], "not hexadecimal"),
            (b"3\r\nabcX", "does not end in CRLF"),
            (b"3;a\nb\r\n", "bare LF"),
            (b"11111111111111111\r\n", "2^64"),
        ] {
            let head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
            let mut input = head.to_vec();
            input.extend_from_slice(chunks);
            input.extend_from_slice(GET);
            let (read, back, refused, note) = through(&input, 3);
            assert!(read.starts_with(head) && read.len() < input.len() - GET.len());
            assert!(back.is_empty() && refused.is_empty());
            assert!(note.unwrap().contains(why));
        }
    }
}
