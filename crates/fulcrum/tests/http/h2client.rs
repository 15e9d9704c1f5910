//! A small HTTP/2 client for the tests (the `h2` crate from the client's side): requests sent
//! at once on one connection (multiplexed), answers gathered whole. Shared by the `http` and
//! `e2e` targets.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

/// One request.
#[derive(Clone, Debug, Default)]
pub struct H2Req {
    pub method: &'static str,
    pub path: String,
    pub headers: Vec<(&'static str, String)>,
    /// Sent in DATA frames after the HEADERS frame (`None`: the HEADERS frame ends the stream).
    pub body: Option<Vec<u8>>,
    /// Sent in a last HEADERS frame after the body.
    pub trailers: Vec<(&'static str, String)>,
    /// `:scheme` and `:authority` other than `http` and the server's address.
    pub origin: Option<String>,
}

impl H2Req {
    pub fn get(path: &str) -> H2Req {
        H2Req { method: "GET", path: path.to_string(), ..H2Req::default() }
    }

    pub fn post(path: &str, body: &[u8]) -> H2Req {
        H2Req {
            method: "POST",
            path: path.to_string(),
            body: Some(body.to_vec()),
            ..H2Req::default()
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> H2Req {
        self.headers.push((name, value.to_string()));
        self
    }

    pub fn origin(mut self, origin: &str) -> H2Req {
        self.origin = Some(origin.to_string());
        self
    }

    pub fn trailer(mut self, name: &'static str, value: &str) -> H2Req {
        self.trailers.push((name, value.to_string()));
        self
    }

    /// The URI sent to a server whose address is `authority`.
    pub fn uri(&self, authority: &str) -> String {
        match &self.origin {
            Some(o) => format!("{o}{}", self.path),
            None => format!("http://{authority}{}", self.path),
        }
    }
}

/// One answer (header names in lower case, as HTTP/2 has them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct H2Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The final HEADERS frame's fields, if any.
    pub trailers: Vec<(String, String)>,
}

impl H2Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `reqs` over a clear-text connection to `addr` (prior knowledge). A Fulcrum proxy's
/// answers are cross-checked with `explain` (`crosscheck::sent_h2`).
pub fn h2c(addr: SocketAddr, reqs: &[H2Req]) -> Result<Vec<H2Resp>, String> {
    let (src, got) = run(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let src = tcp.local_addr().map_err(|e| e.to_string())?;
        Ok((src, exchange(tcp, &addr.to_string(), reqs).await?))
    })?;
    for (req, resp) in reqs.iter().zip(&got) {
        let same = reqs.iter().filter(|r| (r.method, &r.path) == (req.method, &req.path)).count();
        crate::crosscheck::sent_h2(addr, src, req, (reqs.len(), same == 1), resp);
    }
    Ok(got)
}

/// Runs `f` on a runtime of its own, within 10 s.
pub fn run<T>(f: impl std::future::Future<Output = Result<T, String>>) -> Result<T, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .unwrap_or_else(|_| Err("timed out".into()))
    })
}

/// Sends `reqs` at once over `io` (an HTTP/2 connection once the preface is sent), then reads
/// every answer whole.
pub async fn exchange<T>(io: T, authority: &str, reqs: &[H2Req]) -> Result<Vec<H2Resp>, String>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, conn) = h2::client::handshake(io).await.map_err(|e| e.to_string())?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut pending = Vec::new();
    for r in reqs {
        let mut client = client.clone().ready().await.map_err(|e| e.to_string())?;
        let mut b = http::Request::builder().method(r.method).uri(r.uri(authority));
        for (n, v) in &r.headers {
            b = b.header(*n, v.as_str());
        }
        let req = b.body(()).map_err(|e| e.to_string())?;
        let (resp, mut send) =
            client.send_request(req, r.body.is_none()).map_err(|e| e.to_string())?;
        if let Some(body) = &r.body {
            let end = r.trailers.is_empty();
            send.send_data(Bytes::from(body.clone()), end).map_err(|e| e.to_string())?;
        }
        if !r.trailers.is_empty() {
            let mut map = http::HeaderMap::new();
            for (n, v) in &r.trailers {
                let v = http::HeaderValue::from_str(v).map_err(|e| e.to_string())?;
                map.append(*n, v);
            }
            send.send_trailers(map).map_err(|e| e.to_string())?;
        }
        pending.push(resp);
    }
    // Every answer is read at once: one left unread would hold the connection's window.
    let readers: Vec<_> = pending
        .into_iter()
        .map(|resp| {
            tokio::spawn(async move {
                let resp = resp.await.map_err(|e| e.to_string())?;
                let (parts, mut body) = resp.into_parts();
                let mut data = Vec::new();
                while let Some(chunk) = body.data().await {
                    let chunk = chunk.map_err(|e| e.to_string())?;
                    let _ = body.flow_control().release_capacity(chunk.len());
                    data.extend_from_slice(&chunk);
                }
                let fields = |m: &http::HeaderMap| {
                    m.iter()
                        .map(|(n, v)| {
                            (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into())
                        })
                        .collect::<Vec<(String, String)>>()
                };
                let headers = fields(&parts.headers);
                let trailers = body.trailers().await.map_err(|e| e.to_string())?;
                let trailers = trailers.as_ref().map(fields).unwrap_or_default();
                Ok::<_, String>(H2Resp {
                    status: parts.status.as_u16(),
                    headers,
                    body: data,
                    trailers,
                })
            })
        })
        .collect();
    let mut out = Vec::new();
    for r in readers {
        out.push(r.await.map_err(|e| e.to_string())??);
    }
    drop(client);
    driver.abort();
    Ok(out)
}

/// How many concurrent streams the server at `addr` announces (after one request).
pub fn max_streams(addr: SocketAddr) -> Result<usize, String> {
    run(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let (client, conn) = h2::client::handshake(tcp).await.map_err(|e| e.to_string())?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut c = client.ready().await.map_err(|e| e.to_string())?;
        let req =
            http::Request::get(format!("http://{addr}/")).body(()).map_err(|e| e.to_string())?;
        let (resp, _) = c.send_request(req, true).map_err(|e| e.to_string())?;
        let _ = resp.await.map_err(|e| e.to_string())?;
        let n = c.current_max_send_streams();
        driver.abort();
        Ok(n)
    })
}

/// Rapid reset (CVE-2023-44487): opens `n` streams on one connection, each reset at once.
/// Returns how many could be opened before the server ended the connection.
pub fn rapid_reset(addr: SocketAddr, n: usize) -> Result<usize, String> {
    run(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let (client, conn) = h2::client::handshake(tcp).await.map_err(|e| e.to_string())?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut opened = 0;
        for i in 0..n {
            let Ok(mut c) = client.clone().ready().await else { break };
            let req = http::Request::get(format!("http://{addr}/?s=10&n={i}"))
                .body(())
                .map_err(|e| e.to_string())?;
            let Ok((_, mut send)) = c.send_request(req, false) else { break };
            send.send_reset(h2::Reason::CANCEL);
            opened += 1;
            if i % 64 == 0 {
                tokio::task::yield_now().await;
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), driver).await;
        Ok(opened)
    })
}

/// Opens a tunnel on one stream: an extended CONNECT (RFC 8441) for `protocol` on `target`
/// (a path), or a plain CONNECT to `target` (`host:port`) without it; then sends `data` and
/// reads as many bytes back. Returns the status and what came back.
pub fn tunnel(
    addr: SocketAddr,
    protocol: Option<&'static str>,
    target: &str,
    data: &[u8],
) -> Result<(u16, Vec<u8>), String> {
    let target = target.to_string();
    let data = data.to_vec();
    run(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let (client, conn) = h2::client::handshake(tcp).await.map_err(|e| e.to_string())?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client.ready().await.map_err(|e| e.to_string())?;
        if protocol.is_some() {
            // The server's SETTINGS must have allowed it first.
            for _ in 0..200 {
                if client.is_extended_connect_protocol_enabled() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                client = client.ready().await.map_err(|e| e.to_string())?;
            }
        }
        let uri = match protocol {
            Some(_) => format!("http://{addr}{target}"),
            None => target.clone(),
        };
        let mut req = http::Request::builder()
            .method("CONNECT")
            .uri(uri)
            .header("sec-websocket-version", "13")
            .body(())
            .map_err(|e| e.to_string())?;
        if let Some(p) = protocol {
            req.extensions_mut().insert(h2::ext::Protocol::from_static(p));
        }
        let (resp, mut send) = client.send_request(req, false).map_err(|e| e.to_string())?;
        let resp = resp.await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut back = Vec::new();
        if status == 200 {
            send.send_data(Bytes::from(data.clone()), false).map_err(|e| e.to_string())?;
            while back.len() < data.len() {
                match body.data().await {
                    Some(Ok(chunk)) => {
                        let _ = body.flow_control().release_capacity(chunk.len());
                        back.extend_from_slice(&chunk);
                    }
                    _ => break,
                }
            }
        }
        drop(send);
        driver.abort();
        Ok((status, back))
    })
}
