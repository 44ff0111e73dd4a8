//! lid's MCP server (issue 5, part 5) under a real MCP client that lid did not write: the
//! official Python SDK (`tests/mcp/client.py`, pinned in `tests/mcp/requirements.txt`),
//! over stdio (`lid mcp`) and streamable HTTP (`/mcp` on `lid serve`), each in the SDK's
//! 2026-07-28 mode and its legacy handshake mode. What it saw is compared with the REST
//! API of the same server: the same boot stub (§21.8.1), the same recall (§21.3), the same
//! boot-context bundle; its audit submissions (§21.5.2) closed the records in the database.
//!
//! The client runs in the venv `.ci/run` prepares (`target/mcp-venv`), or the Python named
//! by `LID_MCP_PYTHON`; without it the test fails and says how to create it.

use std::path::PathBuf;
use std::process::Command;

use lid_tests::http::{create_key, demo_publish_body, lid_bin, temp_dir, Server};
use serde_json::{json, Value};

const SECRET: &str = "mcp-tests-trigger-secret-0123456789";
const AGENT: &str = "mcp-agent";
const PEER: &str = "mcp-peer";
const INTENT: &str = "production is broken after the deploy";

fn python() -> PathBuf {
    let p = std::env::var_os("LID_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            lid_tests::root()
                .join("target")
                .join("mcp-venv")
                .join("bin")
                .join("python")
        });
    let ok = Command::new(&p)
        .args(["-c", "import mcp"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "{} cannot import the MCP client SDK: create the venv with `python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install -r tests/mcp/requirements.txt` (as .ci/run does), or point LID_MCP_PYTHON at a Python that has it",
        p.display()
    );
    p
}

#[test]
fn official_python_client_over_stdio_and_streamable_http() {
    let py = python();
    let dir = temp_dir("mcp");
    let db = dir.join("lid.db");
    let admin = create_key(
        &db,
        "admin",
        None,
        &["admin", "read", "instruction:write"],
        "admin:mcp",
    );
    let key = create_key(&db, "agent", Some(AGENT), &[], "agent:mcp-agent");
    let server = Server::start(&dir, &db, SECRET, &[]);
    let c = server.client();
    let r = c.put(
        &format!("/v1/agents/{AGENT}/instruction-manifest"),
        Some(&admin),
        &demo_publish_body(AGENT, "v1"),
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // /mcp authenticates every request like the REST routes: 401 with lid's error body.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string();
    let accept = [("Accept", "application/json, text/event-stream")];
    for (k, code) in [
        (None, "api_key_required"),
        (
            Some("lid_agent_0000000000000000000000000000000000000000"),
            "api_key_invalid",
        ),
    ] {
        let r = c.req_with("POST", "/mcp", k, Some(&init), &accept);
        assert_eq!((r.status, r.code()), (401, code.to_string()), "{}", r.body);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }

    // What the REST API says, to compare with what the MCP client saw.
    let stub = c.get(&format!("/v1/agents/{AGENT}/boot-stub"), Some(&key));
    assert_eq!(stub.status, 200);
    let stub_openai = c
        .get(
            &format!("/v1/agents/{AGENT}/boot-stub?profile=openai-assistants"),
            Some(&key),
        )
        .body;
    let recall = c
        .post(
            &format!("/v1/agents/{AGENT}/recall-instruction"),
            Some(&key),
            &json!({"intent": INTENT, "max_chunks": 3}),
        )
        .json();
    let names: Vec<Value> = recall["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert!(!names.is_empty());
    let ctx = c.get(&format!("/v1/agents/{AGENT}/boot-context"), Some(&key));
    assert_eq!(ctx.status, 200, "{}", ctx.body);
    let ctx_md = c.get(
        &format!("/v1/agents/{AGENT}/boot-context?format=markdown"),
        Some(&key),
    );

    let out = Command::new(&py)
        .arg(
            lid_tests::root()
                .join("tests")
                .join("mcp")
                .join("client.py"),
        )
        .args([
            "--lid",
            lid_bin().to_str().unwrap_or_default(),
            "--base",
            &server.base,
            "--key",
            &key,
            "--agent",
            AGENT,
            "--peer",
            PEER,
        ])
        .env("LID_LOG", "error")
        .output()
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client failed ({}):\n{stdout}\n{stderr}\nserver log:\n{}",
        out.status,
        server.log_text()
    );
    assert!(
        stdout.contains("mcp client: every check passed over 4 runs and the bad-key run"),
        "{stdout}"
    );

    let runs: Vec<Value> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("MCP_RESULT "))
        .map(|l| serde_json::from_str(l).expect("MCP_RESULT JSON"))
        .collect();
    let transports: Vec<&str> = runs
        .iter()
        .map(|r| r["transport"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        transports,
        ["stdio-auto", "http-auto", "stdio-legacy", "http-legacy"]
    );
    let conn = rusqlite::Connection::open(&db).expect("open db");
    for r in &runs {
        let t = r["transport"].as_str().unwrap_or_default();
        // The modern runs negotiated 2026-07-28; the legacy ones a handshake-era version.
        let pv = r["protocol_version"].as_str().unwrap_or_default();
        assert_eq!(
            pv >= "2026-07-28",
            t.ends_with("-auto"),
            "{t}: protocol {pv}"
        );
        assert_eq!(
            r["tools"],
            json!(["recall_instruction", "submit_instruction_audit"]),
            "{t}"
        );
        assert_eq!(
            r["prompt_stub"].as_str(),
            Some(stub.body.as_str()),
            "{t}: the boot_stub prompt is not GET /boot-stub"
        );
        assert_eq!(
            r["resource_stub"].as_str(),
            Some(stub.body.as_str()),
            "{t}: the boot-stub resource is not GET /boot-stub"
        );
        assert_eq!(
            r["prompt_stub_openai"].as_str(),
            Some(stub_openai.as_str()),
            "{t}: profile"
        );
        assert_eq!(
            r["recall_chunks"],
            json!(names),
            "{t}: recall over MCP differs from the REST recall (§21.3.4)"
        );
        assert_eq!(r["boot_context"], ctx.json(), "{t}: boot-context resource");
        assert_eq!(
            r["boot_context_markdown"].as_str(),
            Some(ctx_md.body.as_str()),
            "{t}: boot-context markdown"
        );
        // The audit record of the MCP recall is closed with the submitted feedback.
        let token = r["audit_token"].as_str().unwrap_or_default();
        let (agent, used, missed, closed): (String, String, String, Option<i64>) = conn
            .query_row("SELECT agent_id, used_chunks, missed_chunks, audit_closed FROM instruction_audit WHERE audit_token = ?1", [token], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
            .unwrap_or_else(|e| panic!("{t}: no audit row for {token}: {e}"));
        assert_eq!(agent, AGENT);
        assert!(closed.is_some(), "{t}: audit record not closed");
        assert_eq!(
            serde_json::from_str::<Value>(&used).unwrap_or_default(),
            r["used_chunks"],
            "{t}"
        );
        assert_eq!(
            missed, "[]",
            "{t}: the differing resubmission changed a closed record"
        );
    }
}

/// The JSON-RPC message of an `/mcp` answer: the body (JSON), or its SSE event with an id.
fn rpc(r: &lid_tests::http::Resp) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(&r.body) {
        return v;
    }
    r.body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {:?}", r.body))
}

/// What the SDK on its own answers wrongly or not at all, on both transports (the MCP
/// specification's lifecycle, pagination, session and JSON-RPC error rules): params it
/// cannot read are -32602, not "method not found"; a cursor lid never gave is -32602; a
/// field given twice is refused as the REST routes refuse it; a closed session's DELETE
/// is 404; on stdio a line that is not JSON is answered (-32700) and a notification
/// before `initialize` does not stop the server.
#[test]
fn protocol_errors_are_answered_on_both_transports() {
    use std::io::{BufRead, BufReader, Write};
    let dir = temp_dir("mcp-errors");
    let db = dir.join("lid.db");
    let admin = create_key(&db, "admin", None, &["admin", "read", "instruction:write"], "admin:mcp");
    let key = create_key(&db, "agent", Some(AGENT), &[], "agent:mcp-agent");
    let server = Server::start(&dir, &db, SECRET, &[]);
    let c = server.client();
    let r = c.put(&format!("/v1/agents/{AGENT}/instruction-manifest"), Some(&admin), &demo_publish_body(AGENT, "v1"));
    assert_eq!(r.status, 200, "{}", r.body);

    // ---- streamable HTTP ----
    let accept = ("Accept", "application/json, text/event-stream");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string();
    let r = c.req_with("POST", "/mcp", Some(&key), Some(&init), &[accept]);
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let session = [accept, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let post = |body: &str| c.req_with("POST", "/mcp", Some(&key), Some(body), &session);
    assert_eq!(post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).status, 202);
    // an `initialize` inside a live session starts nothing (MCP sends it without one)
    let r = post(&init);
    assert_eq!((r.status, r.code()), (400, "invalid_request".to_string()), "{}", r.body);
    assert!(r.body.contains("already initialized") && r.body.contains("without an Mcp-Session-Id"), "{}", r.body);
    let error_of = |body: &str| {
        let r = post(body);
        assert_eq!(r.status, 200, "{body}: {}", r.body);
        let v = rpc(&r);
        (v["error"]["code"].as_i64().unwrap_or_default(), v["error"]["message"].as_str().unwrap_or_default().to_string())
    };
    let (code, msg) = error_of(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}"#);
    assert_eq!(code, -32602, "{msg}");
    assert!(msg.contains("missing field `name`"), "{msg}");
    assert_eq!(error_of(r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":5}}"#).0, -32602);
    let (code, msg) = error_of(r#"{"jsonrpc":"2.0","id":4,"method":"tools/cal"}"#);
    assert_eq!(code, -32601);
    assert!(msg.contains("tools/cal"), "{msg}");
    // an MCP method lid does not serve is not found, whatever its params, not -32602
    let (code, msg) = error_of(r#"{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}"#);
    assert_eq!(code, -32601, "{msg}");
    assert!(msg.contains("tasks/list") && msg.contains("lid does not serve") && msg.contains("tools/call"), "{msg}");
    let (code, msg) = error_of(r#"{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"boot_stub"},"argument":{"name":"profile","value":"g"}}}"#);
    assert_eq!(code, -32601, "{msg}");
    assert!(msg.contains("completion/complete") && msg.contains("lid does not serve"), "{msg}");
    // and so are the two the SDK refuses itself by its capability check, with their name
    // alone as its message
    for method in ["tasks/get", "tasks/cancel"] {
        let (code, msg) = error_of(&json!({"jsonrpc": "2.0", "id": 4, "method": method, "params": {"taskId": "t1"}}).to_string());
        assert_eq!(code, -32601, "{msg}");
        assert!(msg.contains(method) && msg.contains("lid does not serve") && msg.contains("tools/call"), "{msg}");
    }
    for list in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"] {
        let (code, msg) = error_of(&json!({"jsonrpc": "2.0", "id": 5, "method": list, "params": {"cursor": "bogus"}}).to_string());
        assert_eq!(code, -32602, "{list}: {msg}");
    }
    assert_eq!(error_of(r#"{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"boot_stub","arguments":{"foo":"x"}}}"#).0, -32602);
    // a field given twice, a batch, JSON-RPC 1.0: refused before the SDK reads them
    for (body, code) in [
        (r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall_instruction","arguments":{"intent":"a","intent":"b"}}}"#, "invalid_request"),
        (r#"[{"jsonrpc":"2.0","id":8,"method":"ping"}]"#, "invalid_request"),
        (r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#, "invalid_request"),
        (r#"{"jsonrpc":"2.0","id":10,"method":"ping""#, "invalid_json"),
    ] {
        let r = post(body);
        assert_eq!((r.status, r.code()), (400, code.to_string()), "{body}: {}", r.body);
    }
    // a byte-order mark is skipped, as on the REST routes
    let r = post("\u{feff}{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}");
    assert_eq!((r.status, rpc(&r)["result"].clone()), (200, json!({})), "{}", r.body);
    // a recall still works in the same session, and the session ends once
    let r = post(r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"recall_instruction","arguments":{"intent":"rollback the deploy","max_chunks":1}}}"#);
    assert_eq!(rpc(&r)["result"]["structuredContent"]["chunks"][0]["name"], "rollback-procedure", "a recall in the same session: {}", r.body);
    // Two requests with one id at once (MCP: an id is never reused in a session): each is
    // answered, the one that comes while the other is being answered with a refusal. The
    // SDK alone answered one and held the other's stream open with no answer, kept alive
    // by pings until the session ended.
    for round in 0..10 {
        let body = json!({"jsonrpc": "2.0", "id": format!("twin-{round}"), "method": "tools/call", "params": {"name": "recall_instruction", "arguments": {"intent": "rollback the deploy", "max_chunks": 1}}}).to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..2 {
            let (c, key, sid, body, tx) = (c.clone(), key.clone(), sid.clone(), body.clone(), tx.clone());
            std::thread::spawn(move || {
                let session = [accept, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
                let _ = tx.send(c.req_with("POST", "/mcp", Some(&key), Some(&body), &session));
            });
        }
        for _ in 0..2 {
            let r = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap_or_else(|_| panic!("round {round}: a request with an id in flight was never answered"));
            if r.status == 200 {
                assert_eq!(rpc(&r)["result"]["structuredContent"]["chunks"][0]["name"], "rollback-procedure", "round {round}: {}", r.body);
            } else {
                assert_eq!((r.status, r.code()), (400, "invalid_request".to_string()), "round {round}: {}", r.body);
                assert!(r.body.contains("still being answered") && r.body.contains("-32600"), "{}", r.body);
            }
        }
    }
    // a DELETE is answered 204 (the SDK's own 202 makes the MCP SDKs' clients warn)
    assert_eq!(c.req_with("DELETE", "/mcp", Some(&key), None, &session).status, 204);
    let r = c.req_with("DELETE", "/mcp", Some(&key), None, &session);
    assert_eq!((r.status, r.code()), (404, "session_not_found".to_string()), "{}", r.body);
    assert_eq!(post(r#"{"jsonrpc":"2.0","id":13,"method":"ping"}"#).status, 404);
    // A key holds at most 16 sessions open at once: another `initialize` is refused
    // (429) until one closes, and other keys are not held up by it.
    let open = |k: &str| c.req_with("POST", "/mcp", Some(k), Some(&init), &[accept]);
    let sids: Vec<String> = (0..16)
        .map(|i| {
            let r = open(&key);
            assert_eq!(r.status, 200, "session {i}: {}", r.body);
            r.header("mcp-session-id").expect("a session id").to_string()
        })
        .collect();
    let r = open(&key);
    assert_eq!((r.status, r.code()), (429, "mcp_sessions_exhausted".to_string()), "{}", r.body);
    assert!(r.body.contains("DELETE /mcp"), "{}", r.body);
    let r = open(&admin);
    assert_eq!(r.status, 200, "another key opens its own: {}", r.body);
    let first = [accept, ("Mcp-Session-Id", sids[0].as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    assert_eq!(c.req_with("DELETE", "/mcp", Some(&key), None, &first).status, 204);
    assert_eq!(open(&key).status, 200, "a closed session frees its place");
    // `initialize` calls racing each other are counted before any is answered: 32 at once
    // from a fresh key open at most 16 sessions, the others get the 429
    let racer = create_key(&db, "agent", Some(AGENT), &[], "agent:mcp-racer");
    let answers: Vec<(u16, String)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..32).map(|_| s.spawn(|| open(&racer))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).map(|r| (r.status, if r.status == 200 { String::new() } else { r.code() })).collect()
    });
    let opened = answers.iter().filter(|a| a.0 == 200).count();
    assert_eq!(opened, 16, "{answers:?}");
    assert!(answers.iter().all(|a| a.0 == 200 || *a == (429, "mcp_sessions_exhausted".to_string())), "{answers:?}");
    // an `initialize` whose params cannot be read says so (the SDK alone asked for a
    // session id, which a client cannot have before it initializes)
    for params in ["", r#","params":{}"#, r#","params":{"protocolVersion":"2025-11-25"}"#] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"initialize"{params}}}"#);
        let r = c.req_with("POST", "/mcp", Some(&admin), Some(&body), &[accept]);
        assert_eq!((r.status, r.code()), (400, "invalid_request".to_string()), "{body}: {}", r.body);
        assert!(r.body.contains("invalid params for initialize (-32602)") && !r.body.contains("Session ID"), "{}", r.body);
    }

    // ---- stdio (`lid mcp`) ----
    let mut child = Command::new(lid_bin())
        .args(["mcp", "--server", &server.base, "--agent", AGENT])
        .env("LID_API_KEY", &key)
        .env("LID_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start lid mcp");
    let lines = [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_string(),
        init.replace("\"id\":1", "\"id\":2"),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"ping""#.to_string(),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"recall_instruction","arguments":{"intent":"a","intent":"b"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"recall_instruction","arguments":{"intent":"rollback the deploy","max_chunks":1}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"t1"}}"#.to_string(),
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    for l in &lines {
        writeln!(stdin, "{l}").expect("write to lid mcp");
    }
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut answers = std::collections::BTreeMap::new();
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(&line.expect("read lid mcp")).expect("stdout carries JSON-RPC only");
        answers.insert(v["id"].to_string(), v);
        // ids 1, 2, 4, 5, 6, 7 and the parse error's null
        if answers.len() == 7 {
            break;
        }
    }
    drop(stdin);
    let status = child.wait().expect("lid mcp exits");
    assert!(status.success(), "lid mcp exited with {status}");
    assert_eq!(answers["1"]["error"]["code"], -32602, "a request before initialize, without the 2026-07-28 metadata: {:?}", answers["1"]);
    assert_eq!(answers["2"]["result"]["serverInfo"]["name"], "lid", "initialize after it: {:?}", answers["2"]);
    assert_eq!(answers["null"]["error"]["code"], -32700, "a line that is not JSON: {:?}", answers["null"]);
    assert_eq!(answers["4"]["error"]["code"], -32602);
    assert_eq!(answers["5"]["error"]["code"], -32600);
    assert_eq!(answers["6"]["result"]["structuredContent"]["chunks"][0]["name"], "rollback-procedure", "{:?}", answers["6"]);
    assert_eq!(answers["7"]["error"]["code"], -32601, "{:?}", answers["7"]);
    assert!(answers["7"]["error"]["message"].as_str().unwrap_or_default().contains("lid does not serve"), "{:?}", answers["7"]);
}

/// `lid mcp` against a service that takes the connection and never answers: each forwarded
/// request gives up after `--timeout-secs` with `upstream_unavailable` (retryable) naming
/// the option, and the session goes on (the client is not left waiting).
#[test]
fn stdio_gives_up_on_a_silent_service_after_its_timeout() {
    use std::io::{BufRead, BufReader, Write};
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    // accepts, reads nothing, answers nothing; the held sockets close when the test ends
    let held = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().take(2) {
            held.push(s);
        }
        std::thread::sleep(std::time::Duration::from_secs(8));
    });
    let base = format!("http://127.0.0.1:{port}");
    assert!(!Command::new(lid_bin()).args(["mcp", "--server", &base, "--agent", AGENT, "--timeout-secs", "0"]).env("LID_API_KEY", "k").output().expect("lid mcp").status.success(), "--timeout-secs 0 is out of range");
    let mut child = Command::new(lid_bin())
        .args(["mcp", "--server", &base, "--agent", AGENT, "--timeout-secs", "1"])
        .env("LID_API_KEY", "lid_agent_0000")
        .env("LID_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start lid mcp");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let mut stdin = child.stdin.take().expect("stdin");
    for l in [
        init,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall_instruction","arguments":{"intent":"rollback the deploy"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    ] {
        writeln!(stdin, "{l}").expect("write to lid mcp");
    }
    let mut answers = std::collections::BTreeMap::new();
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let v: Value = serde_json::from_str(&line.expect("read lid mcp")).expect("JSON-RPC");
        answers.insert(v["id"].to_string(), v);
        if answers.len() == 3 {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().expect("lid mcp exits").success());
    let recall = &answers["2"]["result"];
    assert_eq!(recall["isError"], true, "{recall:?}");
    let e = &recall["structuredContent"]["error"];
    assert_eq!((e["code"].as_str(), e["status"].as_u64()), (Some("upstream_unavailable"), Some(503)), "{recall:?}");
    assert_eq!(e["details"]["retryable"], true, "{recall:?}");
    let m = e["message"].as_str().unwrap_or_default();
    assert!(m.contains("did not answer within 1 s") && m.contains("--timeout-secs"), "{m}");
    assert!(answers["3"]["result"].is_object(), "the session goes on: {:?}", answers["3"]);
    drop(held);
}
