//! HTTP test plumbing: a small blocking client, and a `lid serve` started on a free
//! loopback port with a temporary database (or any host named by `LID_CONTRACT_BASE_URL`).
//!
//! The contract suite needs, from whatever host it runs against: a base URL, two admin
//! keys with `instruction:write` (distinct entity URIs, for co-signatures) and the HS256
//! secret heartbeat triggers are signed with. For `lid serve` this module creates them;
//! another host passes them in `LID_CONTRACT_BASE_URL`, `LID_CONTRACT_ADMIN_KEY`,
//! `LID_CONTRACT_ADMIN2_KEY` and `LID_CONTRACT_TRIGGER_SECRET`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// One HTTP response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): status {} body {:?}", self.status, &self.body[..self.body.len().min(300)]))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// The error code of an error response.
    pub fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_default().to_string()
    }
}

/// A blocking client for one base URL.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(base: &str) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Client { base: base.trim_end_matches('/').to_string(), agent }
    }

    /// `method` `path` with an optional bearer key and body (sent as JSON when given).
    pub fn req(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>) -> Resp {
        self.req_with(method, path, key, body, &[])
    }

    pub fn req_with(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>, headers: &[(&str, &str)]) -> Resp {
        self.try_req_with(method, path, key, body, headers).unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`Client::req_with`], with transport failures (refused, reset) as `Err`. Sent
    /// once more when `wrangler dev` (the worker's local server) answers that it swapped
    /// the worker's runtime during the request: its own 503, which asks for the request
    /// again (it resends only GET and HEAD itself), not the worker's answer.
    pub fn try_req_with(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>, headers: &[(&str, &str)]) -> Result<Resp, String> {
        let r = self.send(method, path, key, body, headers)?;
        if r.status == 503 && r.body.starts_with("Your worker restarted mid-request") {
            eprintln!("wrangler dev restarted the worker during {method} {path}: sent again");
            std::thread::sleep(std::time::Duration::from_secs(1));
            return self.send(method, path, key, body, headers);
        }
        Ok(r)
    }

    fn send(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>, headers: &[(&str, &str)]) -> Result<Resp, String> {
        let url = format!("{}{}", self.base, path);
        let auth = key.map(|k| format!("Bearer {k}"));
        macro_rules! hdrs {
            ($r:expr) => {{
                let mut r = $r;
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                for (k, v) in headers {
                    r = r.header(*k, *v);
                }
                r
            }};
        }
        let res = match method {
            "GET" => hdrs!(self.agent.get(&url)).call(),
            "DELETE" => hdrs!(self.agent.delete(&url)).call(),
            "POST" => hdrs!(self.agent.post(&url)).header("Content-Type", "application/json").send(body.unwrap_or("")),
            "PUT" => hdrs!(self.agent.put(&url)).header("Content-Type", "application/json").send(body.unwrap_or("")),
            m => panic!("unsupported method {m}"),
        };
        let mut r = res.map_err(|e| format!("{method} {url}: {e}"))?;
        let status = r.status().as_u16();
        let headers = r.headers().iter().map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string())).collect();
        let body = r.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| format!("{method} {url}: reading the body: {e}"))?;
        Ok(documented(method, path, Resp { status, headers, body }))
    }

    /// POST a body the host is expected to refuse unread (413), as a client that reads the
    /// response while it is still sending would: the body is written on a thread of its own
    /// whose write errors are ignored, since a server may answer before the body is in and
    /// then close the connection (which breaks the pipe of a client that writes first and
    /// reads after, as `ureq` does; the refusal is already in the socket's receive queue).
    pub fn post_oversized(&self, path: &str, key: Option<&str>, body: String) -> Resp {
        self.post_unread(path, key, body, false)
    }

    /// [`Client::post_oversized`] with the body sent chunked: no length declared, so the
    /// host can only tell its size by reading it.
    pub fn post_oversized_chunked(&self, path: &str, key: Option<&str>, body: String) -> Resp {
        self.post_unread(path, key, format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len()), true)
    }

    fn post_unread(&self, path: &str, key: Option<&str>, body: String, chunked: bool) -> Resp {
        use std::io::{Read, Write};
        let addr = self.base.strip_prefix("http://").unwrap_or_else(|| panic!("a plain http base URL, not {}", self.base));
        let stream = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let framing = if chunked { "Transfer-Encoding: chunked".to_string() } else { format!("Content-Length: {}", body.len()) };
        let mut head = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{framing}\r\nConnection: close\r\n");
        if let Some(k) = key {
            head.push_str(&format!("Authorization: Bearer {k}\r\n"));
        }
        head.push_str("\r\n");
        let mut writer = stream.try_clone().expect("clone the socket");
        let sender = std::thread::spawn(move || {
            let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(body.as_bytes()));
        });
        let mut raw = Vec::new();
        let mut reader = stream;
        let mut buf = [0u8; 8192];
        // read until the server closes (or resets) the connection, keeping what arrived
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&buf[..n]);
        }
        let _ = reader.shutdown(std::net::Shutdown::Both);
        let _ = sender.join();
        let resp = parse_response(&raw, true).unwrap_or_else(|e| panic!("POST {path} (oversized): {e}: {:?}", String::from_utf8_lossy(&raw[..raw.len().min(500)])));
        documented("POST", path, resp)
    }

    /// A request written byte for byte, for what an HTTP library will not send or read:
    /// `headers` as raw lines (each ending in CRLF; a header that is not ASCII), and HEAD,
    /// whose answer has headers only. Read to the end of the connection.
    pub fn raw(&self, method: &str, path: &str, headers: &[u8]) -> Resp {
        use std::io::{Read, Write};
        let addr = self.base.strip_prefix("http://").unwrap_or_else(|| panic!("a plain http base URL, not {}", self.base));
        let mut stream = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n").into_bytes();
        req.extend_from_slice(headers);
        req.extend_from_slice(b"\r\n");
        stream.write_all(&req).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let resp = parse_response(&raw, method != "HEAD").unwrap_or_else(|e| panic!("{method} {path}: {e}: {:?}", String::from_utf8_lossy(&raw[..raw.len().min(500)])));
        documented(method, path, resp)
    }

    pub fn get(&self, path: &str, key: Option<&str>) -> Resp {
        self.req("GET", path, key, None)
    }
    pub fn post(&self, path: &str, key: Option<&str>, body: &Value) -> Resp {
        self.req("POST", path, key, Some(&body.to_string()))
    }
    pub fn put(&self, path: &str, key: Option<&str>, body: &Value) -> Resp {
        self.req("PUT", path, key, Some(&body.to_string()))
    }
}

/// `resp`, once its error code (if it is one of lid's JSON errors) is found with its
/// status in the README's "Error codes" table: every refusal a host gives has a §21.9
/// code or a documented one of ours, and the table says which status goes with it. Every
/// test that talks to a host checks this, against `lid serve` and the worker alike.
fn documented(method: &str, path: &str, resp: Resp) -> Resp {
    if resp.status >= 400 {
        let code = serde_json::from_str::<Value>(&resp.body).ok().and_then(|v| v["error"]["code"].as_str().map(str::to_string));
        if let Some(code) = code {
            assert!(
                error_table().iter().any(|(c, s)| *c == code && *s == resp.status),
                "{method} {path} answered {} `{code}`, which the README's \"Error codes\" table does not list with that status",
                resp.status
            );
        }
    }
    resp
}

/// The README's "Error codes" table as (code, status) pairs: a row's backquoted codes
/// (first cell) with its statuses (second cell), pair by pair when a row lists as many
/// of each (`a`, `b` | 405, 413), else each code with every status.
pub fn error_table() -> &'static [(&'static str, u16)] {
    static TABLE: std::sync::OnceLock<Vec<(&'static str, u16)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let readme: &'static str = include_str!("../../README.md");
        let start = readme.find("\n### Error codes\n").expect("the README has an \"Error codes\" section");
        let mut pairs = Vec::new();
        for row in readme[start..].lines().skip(2).skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = row.split('|').collect();
            let (Some(codes), Some(statuses)) = (cells.get(1), cells.get(2)) else { continue };
            let statuses: Vec<u16> = statuses.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
            let codes: Vec<&'static str> = codes.split('`').skip(1).step_by(2).filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')).collect();
            if codes.len() > 1 && codes.len() == statuses.len() {
                pairs.extend(codes.into_iter().zip(statuses));
                continue;
            }
            for code in codes {
                for s in &statuses {
                    pairs.push((code, *s));
                }
            }
        }
        pairs
    })
}

/// An HTTP/1.1 response read off a socket to its end: the status, the headers and the
/// body (by `Content-Length`, chunked, or to the end; none when `has_body` is false, the
/// answer to a HEAD).
fn parse_response(raw: &[u8], has_body: bool) -> Result<Resp, String> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no complete response head")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|e| format!("response head: {e}"))?;
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).ok_or("no status line")?;
    let headers: Vec<(String, String)> = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
    let mut rest = &raw[end + 4..];
    let find = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let body = if !has_body {
        if !rest.is_empty() {
            return Err(format!("{} bytes of body after a response that has none", rest.len()));
        }
        Vec::new()
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut out = Vec::new();
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n").ok_or("a chunk size line")?;
            let size_text = std::str::from_utf8(&rest[..line_end]).map_err(|e| e.to_string())?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16).map_err(|e| format!("chunk size {size_text:?}: {e}"))?;
            rest = &rest[line_end + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(rest.get(..size).ok_or("a cut-off chunk")?);
            rest = rest.get(size + 2..).unwrap_or_default();
        }
        out
    } else if let Some(n) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        rest.get(..n).ok_or("a cut-off body")?.to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Resp { status, headers, body: String::from_utf8_lossy(&body).into_owned() })
}

/// A `lid serve` process on a temporary database, killed on drop.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub dir: PathBuf,
    pub db: PathBuf,
    pub log: Arc<Mutex<String>>,
    /// The temporary directory the server runs in, when it owns it ([`Server::keeping`]):
    /// removed after the process is killed.
    tmp: Option<TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `lid` binary of this build (`target/<profile>/lid`).
pub fn lid_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join("lid");
    assert!(bin.exists(), "{} is missing: build the workspace first (cargo build --release --workspace)", bin.display());
    bin
}

/// A fresh temporary directory `lid-{tag}-…`, removed with everything in it when dropped;
/// a test that panics keeps it (and names it on stderr) so its files can be read after.
pub struct TempDir(tempfile::TempDir);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!("kept {} (the test failed)", self.0.path().display());
        }
    }
}

/// A fresh temporary directory (see [`TempDir`]).
pub fn temp_dir(tag: &str) -> TempDir {
    TempDir(tempfile::Builder::new().prefix(&format!("lid-{tag}-")).tempdir().expect("temp dir"))
}

/// Run `lid` with `args`; panics with its stderr on failure; returns stdout.
pub fn lid(args: &[&str]) -> String {
    let out = Command::new(lid_bin()).args(args).output().expect("run lid");
    assert!(out.status.success(), "lid {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Create a key in `db` with the CLI; returns the secret.
pub fn create_key(db: &Path, role: &str, agent: Option<&str>, caps: &[&str], entity: &str) -> String {
    let mut args = vec!["keys", "create", "--json", "--db", db.to_str().unwrap_or_default(), "--role", role, "--entity-uri", entity];
    if let Some(a) = agent {
        args.extend(["--agent", a]);
    }
    for c in caps {
        args.extend(["--cap", c]);
    }
    let v: Value = serde_json::from_str(&lid(&args)).expect("keys create --json");
    v["key"].as_str().expect("key").to_string()
}

impl Server {
    /// This server owns `tmp` (the directory it was started in) from now on: the directory
    /// goes when the server does, after its process.
    pub fn keeping(mut self, tmp: TempDir) -> Server {
        self.tmp = Some(tmp);
        self
    }

    /// Start `lid serve` on `db` (in `dir`) with extra args; waits for its address line.
    pub fn start(dir: &Path, db: &Path, secret: &str, extra: &[&str]) -> Server {
        let mut cmd = Command::new(lid_bin());
        cmd.args(["serve", "--db", db.to_str().unwrap_or_default(), "--addr", "127.0.0.1:0", "--exit-with-stdin"])
            .args(extra)
            .stdin(Stdio::piped())
            .env("LID_HEARTBEAT_SECRET", secret)
            .env("LID_CACHE_DIR", dir.join("cache"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn lid serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let base = first.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("lid serve did not start: {first:?}")).to_string();
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(mut g) = log.lock() {
                        g.push_str(&l);
                        g.push('\n');
                    }
                }
            });
        }
        std::thread::spawn(move || for _ in lines.by_ref() {});
        Server { child, base, dir: dir.to_path_buf(), db: db.to_path_buf(), log, tmp: None }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.base)
    }

    pub fn log_text(&self) -> String {
        self.log.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// What the contract suite needs of a host.
pub struct Target {
    pub client: Client,
    pub admin: String,
    pub admin2: String,
    pub secret: String,
    /// Kept alive while the suite runs (when this process started the server).
    pub _server: Option<Server>,
}

/// The host under test: `LID_CONTRACT_BASE_URL` (with its keys), else a fresh `lid serve`
/// in `scratch/lid-contract`, emptied first. (The suite keeps its target in a static,
/// which is never dropped, so a temporary directory would outlive every run; this one is
/// reused by the next.)
pub fn contract_target(scratch: &Path) -> Target {
    if let Ok(base) = std::env::var("LID_CONTRACT_BASE_URL") {
        let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} must be set with LID_CONTRACT_BASE_URL"));
        return Target { client: Client::new(&base), admin: var("LID_CONTRACT_ADMIN_KEY"), admin2: var("LID_CONTRACT_ADMIN2_KEY"), secret: var("LID_CONTRACT_TRIGGER_SECRET"), _server: None };
    }
    let dir = scratch.join("lid-contract");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("contract server directory");
    let db = dir.join("lid.db");
    let caps = ["admin", "read", "instruction:write"];
    let admin = create_key(&db, "admin", None, &caps, "admin:alice");
    let admin2 = create_key(&db, "admin", None, &caps, "admin:bob");
    let secret = "contract-suite-trigger-secret-0123456789".to_string();
    let server = Server::start(&dir, &db, &secret, &[]);
    Target { client: server.client(), admin, admin2, secret, _server: Some(server) }
}

fn getrandom_fill(b: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(b)
}

/// A unique agent id for one test.
pub fn agent_id(tag: &str) -> String {
    let mut b = [0u8; 4];
    let _ = getrandom_fill(&mut b);
    format!("{tag}-{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>())
}

/// The demo agent's manifest re-targeted at `agent` (entries, units), as a publish body.
pub fn demo_publish_body(agent: &str, version: &str) -> Value {
    let dir = crate::root().join("examples").join("demo-agent");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("demo manifest")).expect("demo manifest json");
    let mut entries = m["entries"].as_array().cloned().unwrap_or_default();
    let mut units = serde_json::Map::new();
    for e in entries.iter_mut() {
        let name = e["name"].as_str().unwrap_or_default().to_string();
        e["fact_uri"] = json!(format!("instruction:demo/{agent}/{name}/v1"));
        let content = std::fs::read_to_string(dir.join("units").join(format!("{name}.md"))).expect("unit file");
        units.insert(name, Value::String(content));
    }
    json!({
        "version": version, "deployment": "demo", "agent_role": m["agent_role"], "entries": entries, "units": units,
        "approvals": {"guarantee_load": true, "task_types": [], "force_position": []},
    })
}

/// The demo agent's publish body with four twin units that cannot all rank in the top 3
/// for their own paraphrases, so the coverage gate fails them; `guaranteed: false` clears
/// every `guarantee_load` (a bypass then needs no co-signature, S7).
pub fn weak_publish_body(agent: &str, version: &str, guaranteed: bool) -> Value {
    let mut body = demo_publish_body(agent, version);
    // Room under the 1000-token cap for the twins.
    body["units"].as_object_mut().unwrap().retain(|k, _| k != "writing-status-updates" && k != "dependency-upgrades");
    let entries = body["entries"].as_array_mut().unwrap();
    entries.retain(|e| e["name"] != "writing-status-updates" && e["name"] != "dependency-upgrades");
    if !guaranteed {
        for e in entries.iter_mut() {
            e["guarantee_load"] = json!(false);
        }
    }
    const TWINS: [&str; 4] = ["twin-a", "twin-b", "twin-c", "twin-d"];
    for n in TWINS {
        entries.push(json!({
            "name": n, "description": "Archive old build artifacts.", "required_by_task_types": [], "guarantee_load": false,
            "load_triggers": {"intents": ["archive the old build artifacts"], "keywords": [], "task_types": []},
            "fact_uri": format!("instruction:demo/{agent}/{n}/v1"), "path": null,
        }));
    }
    for n in TWINS {
        body["units"][n] = json!("Archive old build artifacts to cold storage.");
    }
    body
}

/// Sign an HS256 heartbeat trigger.
pub fn sign_trigger(secret: &str, claims: &Value) -> String {
    jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256), claims, &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes())).expect("sign")
}

/// Base64url without padding (a JWT segment).
pub fn b64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Unix seconds now.
pub fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    /// The table the hosts' refusals are checked against is read, not empty: a README
    /// reworded past the parser would otherwise fail every refusal, or one reworded into
    /// another shape could list nothing.
    #[test]
    fn the_readme_error_table_is_read_row_by_row() {
        let t = super::error_table();
        for pair in [("intent_required", 400), ("manifest_coverage_failure", 400), ("instruction_scope_denied", 403), ("mcp_sessions_exhausted", 429), ("mcp_sessions_exhausted", 503), ("engine_failed", 500), ("fact_too_large", 413)] {
            assert!(t.contains(&pair), "{pair:?} not read from the README's table");
        }
        assert!(!t.contains(&("intent_required", 404)));
        // a row of four codes and four statuses pairs them in order
        assert!(t.contains(&("method_not_allowed", 405)) && t.contains(&("not_acceptable", 406)) && !t.contains(&("method_not_allowed", 413)));
        assert!(t.len() > 60, "{} pairs", t.len());
    }
}
