//! Raw TCP modes. Echo: every byte read is written back; on the client's half-close the
//! pending data is already written, so we shut our write side down and close. Sink: read and
//! discard until EOF, never write (for exercising a proxy's server-side timeouts).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::Counter;

const BUF_SIZE: usize = 16 * 1024;

/// Echoes the connection until the client half-closes, then closes.
pub(crate) async fn echo(mut stream: TcpStream, ctr: &Counter) {
    let mut buf = vec![0u8; BUF_SIZE];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => {
                let _ = stream.shutdown().await;
                return;
            }
            Ok(n) => {
                ctr.bytes(n);
                if stream.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// Discards everything the client sends; closes on EOF or error.
pub(crate) async fn sink(mut stream: TcpStream, ctr: &Counter) {
    let mut buf = vec![0u8; BUF_SIZE];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            return;
        }
        ctr.bytes(n);
    }
}
