// The worker's entry module (wrangler.toml `main`): worker-build's output (build/index.js,
// the Rust worker) plus a warm-up that runs once per isolate at worker start, when workerd
// evaluates this module (before `wrangler dev` says Ready), never on a request.
//
// Why: V8 compiles wasm functions lazily, on their first call, so without this the first
// request pays for compiling the whole fetch path (request conversion, router, handler,
// JSON, response building): ≈ 10 ms under `wrangler dev` here (README "Worker figures").
// The warm-up sends one GET /healthz through the real Rust fetch handler with an empty env
// (the route reads no binding: no I/O, no clock, no randomness) and drops the answer. The
// route also warms the engine, which in this build lays out the cl100k table from the
// compact form the bundle ships (lid-core `tokens::table`), so no request pays for it.
// workerd forbids constructing a `Response` at global scope, so for the duration of this
// synchronous warm-up `Response` is a plain stand-in and is restored before any request
// can arrive (the handler's promise settles in this module's evaluation microtasks).
import Worker from '../build/index.js';

function warmUp() {
  const RealResponse = globalThis.Response;
  const restore = () => { globalThis.Response = RealResponse; };
  globalThis.Response = class WarmUpResponse {
    constructor(body, init) {
      this.body = body;
      this.status = init?.status ?? 200;
      this.headers = new Headers(init?.headers);
    }
  };
  try {
    const answer = Worker.prototype.fetch.call({ env: {}, ctx: {} }, new Request('http://warm-up.invalid/healthz'));
    Promise.resolve(answer).then(restore, (e) => { restore(); console.warn('lid worker warm-up failed (harmless):', e); });
  } catch (e) {
    restore();
    console.warn('lid worker warm-up failed (harmless):', e);
  }
}

warmUp();

export default Worker;
