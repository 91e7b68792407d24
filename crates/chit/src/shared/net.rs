//! What an HTTP server of chit's needs of the network: a listening socket
//! with a deep backlog, and the signal to stop.

/// Connections the kernel may hold for the server before it accepts them
/// (capped by `net.core.somaxconn`): many clients connecting at once are
/// queued, not dropped (a dropped SYN is retried only after a second).
const BACKLOG: u32 = 4096;

/// A listening socket on the first address `addr` resolves to that can be
/// bound, with [`BACKLOG`] (a plain bind's is 128).
pub async fn listen(addr: &str) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let socket = if a.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }?;
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket.bind(a).and_then(|()| socket.listen(BACKLOG)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the address resolves to nothing",
        )
    }))
}

/// Ctrl-C or SIGTERM: stop taking connections, answer the requests in
/// flight (each waits for its batch to be written), then stop.
pub async fn shutdown() {
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// The next connection, with Nagle's delay off, or `None` once `stop`
/// is ready. A connection that could not be accepted (out of file
/// descriptors, or reset before it was) is logged, and the next is
/// awaited 50 ms later.
pub async fn accept<F: std::future::Future<Output = ()>>(
    listener: &tokio::net::TcpListener,
    mut stop: std::pin::Pin<&mut F>,
) -> Option<tokio::net::TcpStream> {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return Some(stream);
                }
                Err(e) => {
                    tracing::warn!(target: "chit::net", error = %e, "a connection was not accepted");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = stop.as_mut() => return None,
        }
    }
}

/// An HTTP answer's body, refused once it passes `max` bytes (a stranger's
/// answer is read no further than what it may be).
pub async fn read_body(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if out.len() + chunk.len() > max {
            return Err(format!("an answer larger than the {max} bytes it may be"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}
