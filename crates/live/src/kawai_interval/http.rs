//! The experiment's HTTP/1.1 on the wire: what a request asks for and how every response is
//! checked.
//!
//! As in the model (`crates/workload/src/http.rs`), the client draws each request's object size
//! (WebAxe-4's content mix) and whether the accelerator holds it (the hit ratio) and puts both in
//! the URL, as Polygraph's URLs name their objects: `GET /o/<bytes>/<h|m>/<id>`. The accelerator
//! answers a hit itself and fetches a miss from the origin with the same URL. A body is a
//! function of the request's id (`body`), so the client checks that every response is the one it
//! asked for, whole: status 200, `X-Id` equal to its id, `Content-Length` equal to the size asked
//! for, and every byte. Requests are padded to ~300 bytes and response headers to ~250 bytes,
//! the model's `request_bytes` and `response_header_bytes`. Parsing is `httparse`'s.

use std::sync::OnceLock;

/// Bodies repeat with this period (a prime, so that neighbouring ids differ at every offset).
pub const PATTERN_PERIOD: usize = 251;
/// The largest object (WebAxe-4's download class, logn(300 KB, 300 KB), exceeds it with
/// probability ~1e-4 of that class's 0.5 %: sizes are clamped here).
pub const OBJECT_BYTES_MAX: u32 = 4 << 20;
/// A request or response header longer than this is refused.
pub const HEAD_BYTES_MAX: usize = 4096;

fn pattern() -> &'static [u8] {
    static P: OnceLock<Vec<u8>> = OnceLock::new();
    P.get_or_init(|| (0..OBJECT_BYTES_MAX as usize + 2 * PATTERN_PERIOD).map(|i| (i % PATTERN_PERIOD) as u8).collect())
}

/// The body of object `id`, `bytes` long (bytes ≤ OBJECT_BYTES_MAX).
pub fn body(id: u64, bytes: u32) -> &'static [u8] {
    let off = (id % PATTERN_PERIOD as u64) as usize;
    &pattern()[off..off + bytes.min(OBJECT_BYTES_MAX) as usize]
}

/// Is `chunk`, found at `offset` of object `id`'s body, what it should be?
pub fn body_ok(id: u64, offset: usize, chunk: &[u8]) -> bool {
    // A comparison with the pattern (memcmp speed: the clients check every byte they read).
    let start = (id % PATTERN_PERIOD as u64) as usize + offset % PATTERN_PERIOD;
    let len = chunk.len();
    len <= OBJECT_BYTES_MAX as usize && chunk == &pattern()[start..start + len]
}

/// A request as the accelerator and the origin read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub bytes: u32,
    pub hit: bool,
    /// Bytes of the buffer it took.
    pub len: usize,
}

const REQUEST_PAD: usize = 300;
const RESPONSE_PAD: usize = 250;

/// Append a request for object `id` of `bytes`, a hit or not, padded to ~300 bytes.
pub fn write_request(out: &mut Vec<u8>, id: u64, bytes: u32, hit: bool) {
    let start = out.len();
    out.extend_from_slice(
        format!(
            "GET /o/{bytes}/{}/{id} HTTP/1.1\r\nHost: accelerator\r\nUser-Agent: hostsim-live\r\nX-Pad: ",
            if hit { 'h' } else { 'm' }
        )
        .as_bytes(),
    );
    while out.len() - start < REQUEST_PAD - 4 {
        out.push(b'p');
    }
    out.extend_from_slice(b"\r\n\r\n");
}

/// Append the response header for object `id` of `bytes` (its body follows), ~250 bytes.
pub fn write_response_head(out: &mut Vec<u8>, id: u64, bytes: u32) {
    let start = out.len();
    out.extend_from_slice(format!("HTTP/1.1 200 OK\r\nContent-Length: {bytes}\r\nX-Id: {id}\r\nContent-Type: application/octet-stream\r\nServer: hostsim-live\r\nX-Pad: ").as_bytes());
    while out.len() - start < RESPONSE_PAD - 4 {
        out.push(b'p');
    }
    out.extend_from_slice(b"\r\n\r\n");
}

/// The first request in `buf`: Ok(None) until it is complete; Err on anything that is not one
/// of ours (the connection is then closed).
pub fn parse_request(buf: &[u8]) -> Result<Option<Request>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 8];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > HEAD_BYTES_MAX => return Err("request header too long".into()),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad request: {e}")),
    };
    if req.method != Some("GET") {
        return Err(format!("method {:?}", req.method));
    }
    let path = req.path.unwrap_or("");
    let mut p = path.strip_prefix("/o/").ok_or_else(|| format!("path {path}"))?.split('/');
    let bytes: u32 = p
        .next()
        .and_then(|s| s.parse().ok())
        .filter(|&b| b <= OBJECT_BYTES_MAX)
        .ok_or_else(|| format!("path {path}"))?;
    let hit = match p.next() {
        Some("h") => true,
        Some("m") => false,
        _ => return Err(format!("path {path}")),
    };
    let id: u64 = p.next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("path {path}"))?;
    Ok(Some(Request { id, bytes, hit, len }))
}

/// A response header as the client and the accelerator's retrieve thread read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    pub id: u64,
    pub bytes: u32,
    /// Bytes of the header.
    pub len: usize,
}

/// The response header at the start of `buf`: Ok(None) until complete; Err unless it is a 200
/// with a Content-Length and an X-Id.
pub fn parse_response_head(buf: &[u8]) -> Result<Option<ResponseHead>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 8];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > HEAD_BYTES_MAX => return Err("response header too long".into()),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad response: {e}")),
    };
    if resp.code != Some(200) {
        return Err(format!("status {:?}", resp.code));
    }
    let num = |name: &str| -> Option<u64> {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
    };
    let bytes =
        num("content-length").filter(|&b| b <= u64::from(OBJECT_BYTES_MAX)).ok_or("no valid Content-Length")? as u32;
    let id = num("x-id").ok_or("no X-Id")?;
    Ok(Some(ResponseHead { id, bytes, len }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_its_response_round_trip_and_are_checked_byte_by_byte() {
        let mut b = Vec::new();
        write_request(&mut b, 77, 12345, true);
        assert!((290..=310).contains(&b.len()), "{}", b.len());
        assert_eq!(parse_request(&b[..b.len() - 1]).unwrap(), None, "incomplete");
        let r = parse_request(&b).unwrap().unwrap();
        assert_eq!(r, Request { id: 77, bytes: 12345, hit: true, len: b.len() });
        let mut resp = Vec::new();
        write_response_head(&mut resp, 77, 12345);
        let h = resp.len();
        resp.extend_from_slice(body(77, 12345));
        let head = parse_response_head(&resp).unwrap().unwrap();
        assert_eq!(head, ResponseHead { id: 77, bytes: 12345, len: h });
        assert!(body_ok(77, 0, &resp[h..]));
        assert!(body_ok(77, 1000, &resp[h + 1000..h + 2000]));
        assert!(!body_ok(78, 0, &resp[h..h + 10]), "another id's body differs");
        let mut bad = resp[h..h + 100].to_vec();
        bad[50] ^= 1;
        assert!(!body_ok(77, 0, &bad));
    }

    #[test]
    fn anything_else_is_refused() {
        assert!(parse_request(b"POST /o/1/h/1 HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_request(b"GET /x HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_request(b"GET /o/1/q/1 HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_request(&[b'a'; 5000]).is_err());
        assert!(parse_response_head(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").is_err());
        assert!(parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").is_err(), "no X-Id");
    }
}
