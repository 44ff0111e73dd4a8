#!/usr/bin/env python3
"""lid's MCP server under a real MCP client that lid did not write: the official Python SDK
(`mcp`, pinned in requirements.txt), driven by tests/tests/mcp.rs.

For each transport - stdio (`lid mcp --server URL --key KEY --agent ID` as a subprocess) and
streamable HTTP (`/mcp` on `lid serve` with the bearer header), each in the SDK's default
mode (2026-07-28 discovery) and in its legacy initialize-handshake mode - it lists the tools
and checks their schemas, calls recall_instruction and submit_instruction_audit (twice:
idempotent), provokes lid errors (tool errors with lid's code; JSON-RPC errors with lid's
error body in `data`), gets the boot_stub prompt and reads the boot-stub and boot-context
resources. It prints one `MCP_RESULT {json}` line per run for the Rust test to compare with
the REST API, and exits 1 on the first failed check.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

INTENT = "production is broken after the deploy"
INVALID_PARAMS = -32602
# Resource not found: -32002 before protocol 2026-07-28, invalid params from it on (SEP-2164).
RESOURCE_NOT_FOUND_LEGACY = -32002


class CheckFailed(Exception):
    pass


def check(cond: object, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


def lid_code(result) -> str:
    """The lid error code of a tool result with isError."""
    sc = result.structured_content or {}
    return (sc.get("error") or {}).get("code", "")


async def expect_rpc_error(coro, code: int, lid: str | None, what: str) -> None:
    try:
        await coro
    except MCPError as e:
        check(e.code == code, f"{what}: JSON-RPC code {e.code}, expected {code} ({e.message})")
        if lid is not None:
            got = ((e.data or {}).get("error") or {}).get("code")
            check(got == lid, f"{what}: lid code {got!r} in data, expected {lid!r} ({e.data})")
        return
    raise CheckFailed(f"{what}: no error")


async def scenario(name: str, client: Client, agent: str, peer: str) -> dict:
    out: dict = {"transport": name, "protocol_version": client.protocol_version}
    info = client.server_info
    check(info is not None and info.name == "lid", f"server info {info!r}")

    # Tools and their schemas (the §21.3.1 request, the §21.5.2 submission).
    tools = {t.name: t for t in (await client.list_tools()).tools}
    check(set(tools) == {"recall_instruction", "submit_instruction_audit"}, f"tools {sorted(tools)}")
    rs = tools["recall_instruction"].input_schema
    check(rs.get("type") == "object" and rs.get("required") == ["intent"], f"recall schema {rs}")
    props = rs.get("properties", {})
    for field, typ in [("intent", "string"), ("max_chunks", "integer"), ("token_budget", "integer"), ("manifest_hint", "array"), ("agent_id", "string")]:
        check(props.get(field, {}).get("type") == typ, f"recall schema: {field} should be {typ}: {props.get(field)}")
    osch = tools["recall_instruction"].output_schema or {}
    check({"chunks", "audit_token", "total_tokens", "truncated"} <= set(osch.get("required", [])), f"recall output schema {osch}")
    aus = tools["submit_instruction_audit"].input_schema
    check(aus.get("required") == ["audit_token"], f"audit schema {aus}")
    for field in ("used_chunks", "missed_chunks"):
        check(aus.get("properties", {}).get(field, {}).get("type") == "array", f"audit schema: {field}")
    out["tools"] = sorted(tools)

    # recall_instruction: chunks and an audit token; the text content is the same JSON. The
    # SDK validates the structured content against the declared output schema.
    r = await client.call_tool("recall_instruction", {"intent": INTENT, "max_chunks": 3})
    check(not r.is_error, f"recall failed: {r.content}")
    sc = r.structured_content
    check(isinstance(sc, dict) and sc.get("chunks"), f"no chunks: {sc}")
    for c in sc["chunks"]:
        check(c.get("name") and c.get("content") and isinstance(c.get("tokens"), int), f"chunk {c}")
    token = sc.get("audit_token", "")
    check(token.startswith("audi_"), f"audit token {token!r}")
    check(json.loads(r.content[0].text) == sc, "the text content is not the structured JSON")
    out["recall_chunks"] = [c["name"] for c in sc["chunks"]]
    out["audit_token"] = token

    hinted = await client.call_tool("recall_instruction", {"intent": INTENT, "manifest_hint": ["no-such-unit"], "token_budget": 2000})
    check(not hinted.is_error and hinted.structured_content["missed_hints"] == ["no-such-unit"], f"missed hints: {hinted.structured_content}")

    # submit_instruction_audit: recorded; an identical resubmission too (idempotent); other
    # feedback for the closed record is lid's audit_token_invalid as a tool error.
    used = [sc["chunks"][0]["name"]]
    body = {"audit_token": token, "used_chunks": used, "missed_chunks": []}
    for attempt in ("first", "identical second"):
        a = await client.call_tool("submit_instruction_audit", body)
        check(not a.is_error and a.structured_content == {"recorded": True, "audit_token": token}, f"{attempt} audit: {a.content}")
    other = await client.call_tool("submit_instruction_audit", {**body, "missed_chunks": ["a-unit-it-did-not-get"]})
    check(other.is_error and lid_code(other) == "audit_token_invalid", f"changed feedback: {other.content}")
    out["used_chunks"] = used

    # lid errors as tool errors, with code, status and message.
    e = await client.call_tool("recall_instruction", {"intent": ""})
    check(e.is_error and lid_code(e) == "intent_required", f"empty intent: {e.content}")
    e = await client.call_tool("recall_instruction", {"intent": INTENT, "agent_id": peer})
    check(e.is_error and lid_code(e) == "instruction_scope_denied" and e.structured_content["error"]["status"] == 403, f"peer agent: {e.content}")
    check("instruction_scope_denied (403)" in e.content[0].text, f"error text {e.content[0].text!r}")
    e = await client.call_tool("submit_instruction_audit", {"audit_token": "audi_unknown"})
    check(e.is_error and lid_code(e) == "audit_token_invalid", f"unknown token: {e.content}")
    await expect_rpc_error(client.call_tool("no_such_tool", {}), INVALID_PARAMS, None, "unknown tool")

    # The boot stub as a prompt.
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    check(set(prompts) == {"boot_stub"}, f"prompts {sorted(prompts)}")
    check({a.name for a in prompts["boot_stub"].arguments or []} == {"profile", "agent_id"}, "boot_stub arguments")
    p = await client.get_prompt("boot_stub")
    check(len(p.messages) == 1 and p.messages[0].role == "user", f"prompt messages {p.messages}")
    stub = p.messages[0].content.text
    check(agent in stub and "recall_instruction" in stub, f"the stub does not name the agent and the tool: {stub[:200]!r}")
    out["prompt_stub"] = stub
    p = await client.get_prompt("boot_stub", {"profile": "openai-assistants"})
    out["prompt_stub_openai"] = p.messages[0].content.text
    await expect_rpc_error(client.get_prompt("boot_stub", {"agent_id": peer}), INVALID_PARAMS, "instruction_scope_denied", "peer's stub")

    # ... and as resources, with the boot context.
    uris = {r.uri for r in (await client.list_resources()).resources}
    stub_uri, ctx_uri = f"lid://agents/{agent}/boot-stub", f"lid://agents/{agent}/boot-context"
    check(uris == {stub_uri, ctx_uri}, f"resources {sorted(uris)}")
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    check(any("boot-stub" in t for t in templates) and any("boot-context" in t for t in templates), f"templates {templates}")
    rr = await client.read_resource(stub_uri)
    check(rr.contents[0].mime_type == "text/markdown", f"stub mime {rr.contents[0].mime_type}")
    out["resource_stub"] = rr.contents[0].text
    rc = await client.read_resource(ctx_uri)
    check(rc.contents[0].mime_type == "application/json", f"context mime {rc.contents[0].mime_type}")
    bundle = json.loads(rc.contents[0].text)
    check(isinstance(bundle, dict), f"boot context {bundle!r}")
    out["boot_context"] = bundle
    rm = await client.read_resource(ctx_uri + "?format=markdown")
    check(rm.contents[0].mime_type == "text/markdown", f"context markdown mime {rm.contents[0].mime_type}")
    out["boot_context_markdown"] = rm.contents[0].text
    not_found = INVALID_PARAMS if client.protocol_version >= "2026-07-28" else RESOURCE_NOT_FOUND_LEGACY
    await expect_rpc_error(client.read_resource(f"lid://agents/{agent}/nothing"), not_found, "resource_not_found", "unknown resource")
    await expect_rpc_error(client.read_resource(f"lid://agents/{peer}/boot-stub"), INVALID_PARAMS, "instruction_scope_denied", "peer's resource")
    return out


async def run(args) -> int:
    runs = []
    for mode in ("auto", "legacy"):
        stdio = StdioServerParameters(command=args.lid, args=["mcp", "--server", args.base, "--agent", args.agent], env={"LID_API_KEY": args.key, "LID_LOG": "warn"})
        runs.append((f"stdio-{mode}", lambda s=stdio, m=mode: Client(s, mode=m)))
        def http(m=mode):
            hc = httpx2.AsyncClient(headers={"Authorization": f"Bearer {args.key}"}, timeout=httpx2.Timeout(30, read=120))
            return Client(streamable_http_client(args.base + "/mcp", http_client=hc), mode=m)
        runs.append((f"http-{mode}", http))
    for name, make in runs:
        with anyio.fail_after(120):
            async with make() as client:
                out = await scenario(name, client, args.agent, args.peer)
        print("MCP_RESULT " + json.dumps(out, sort_keys=True), flush=True)

    # A key the service refuses: stdio still serves the tool list, and the service's 401
    # comes back as a tool error with lid's code.
    bad = StdioServerParameters(command=args.lid, args=["mcp", "--server", args.base, "--agent", args.agent, "--key", "lid_agent_" + "0" * 40], env={"LID_LOG": "warn"})
    with anyio.fail_after(60):
        async with Client(bad) as client:
            r = await client.call_tool("recall_instruction", {"intent": INTENT})
            check(r.is_error and lid_code(r) == "api_key_invalid" and r.structured_content["error"]["status"] == 401, f"bad key: {r.content}")
    print(f"mcp client: every check passed over {len(runs)} runs and the bad-key run", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lid", required=True, help="the lid binary")
    ap.add_argument("--base", required=True, help="base URL of lid serve")
    ap.add_argument("--key", required=True, help="an agent API key")
    ap.add_argument("--agent", required=True, help="the key's agent")
    ap.add_argument("--peer", required=True, help="an agent the key may not read")
    args = ap.parse_args()
    try:
        return anyio.run(run, args)
    except CheckFailed as e:
        print(f"CHECK FAILED: {e}", file=sys.stderr, flush=True)
    except Exception:  # any SDK or transport failure is a failed run, with its traceback
        traceback.print_exc()
    return 1


if __name__ == "__main__":
    sys.exit(main())
