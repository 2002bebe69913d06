//! The SDK under Deno (run by `crates/webpilot/tests/api/sdk_typescript.rs` as
//! `deno run --allow-net --allow-read --allow-env dist-test/test/deno.js '<config JSON>'`): the same flow as in
//! a browser page, with Deno's own `fetch`, WebCrypto and npm resolution of `socket.io-client` from the SDK's
//! `node_modules`. Prints a JSON summary; a failed step throws.

import { type Config, portableRun } from "./portable.js";

declare const Deno: { args: string[]; version: { deno: string } };

const config = JSON.parse(Deno.args[0] ?? "{}") as Config;
const summary = await portableRun(config);
console.log(JSON.stringify({ ok: true, deno: Deno.version.deno, summary }));
