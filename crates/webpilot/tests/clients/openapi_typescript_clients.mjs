// Generates TypeScript clients from the service's OpenAPI document with openapi-typescript (types for
// openapi-fetch) and @hey-api/openapi-ts (an SDK), compiles a program that calls send-message through
// each with `tsc --strict`, and runs it.
//
// Usage: node openapi_typescript_clients.mjs <base URL> <API key> <session id>
// Fails on any warning of either generator, on an operation missing from either output, or on a type
// error. Prints {"operations", "openapiFetch": {status, body}, "heyApi": {status, body}}.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const bin = (name) => join(here, "node_modules", ".bin", name);
const [base, key, session] = process.argv.slice(2);

const METHODS = ["get", "put", "post", "delete", "patch"];
const doc = await (await fetch(`${base}/openapi.json`)).json();
const operations = Object.values(doc.paths).flatMap((item) =>
  Object.entries(item).filter(([m]) => METHODS.includes(m)).map(([, op]) => op.operationId),
);

// Inside this folder, so that the program finds openapi-fetch and the types in ./node_modules; removed at exit.
const work = mkdtempSync(join(here, ".generated-"));
process.on("exit", () => rmSync(work, { recursive: true, force: true }));
writeFileSync(join(work, "openapi.json"), JSON.stringify(doc));

/** Runs a generator; its output must hold no warning. */
function generate(name, args) {
  const out = execFileSync(bin(name), args, { cwd: work, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (/warn|error|⚠/i.test(out)) {
    throw new Error(`${name} warned:\n${out}`);
  }
}
generate("openapi-typescript", ["openapi.json", "-o", "schema.d.ts"]);
generate("openapi-ts", ["-i", "openapi.json", "-o", "heyapi"]);

const schema = readFileSync(join(work, "schema.d.ts"), "utf8");
const operationsBlock = schema.slice(schema.indexOf("export interface operations"));
const sdk = readFileSync(join(work, "heyapi", "sdk.gen.ts"), "utf8");
const heyName = (op) => (op === "console" ? "console_" : op);
const missing = operations.filter(
  (op) => !operationsBlock.includes(`\n    ${op}: {`) || !sdk.includes(`export const ${heyName(op)} = `),
);
if (missing.length > 0) {
  throw new Error(`operations missing from a generated client: ${missing.join(", ")}`);
}

writeFileSync(
  join(work, "call.ts"),
  `
import createClient from "openapi-fetch";
import type { paths } from "./schema";
import { sendMessage } from "./heyapi/sdk.gen";
import { client } from "./heyapi/client.gen";

async function main(): Promise<void> {
  const [base, key, session] = process.argv.slice(2);
  const headers = { Authorization: \`Bearer \${key}\` };
  const api = createClient<paths>({ baseUrl: base, headers });
  const viaFetch = await api.POST("/start/send-message", {
    body: { sessionId: session, message: { actionType: "interaction", action: { type: "releaseControl" } } },
  });
  client.setConfig({ baseUrl: base, headers });
  const viaSdk = await sendMessage({
    body: { sessionId: session, message: { actionType: "interaction", action: { type: "takeOverControl" } } },
  });
  console.log(JSON.stringify({
    openapiFetch: { status: viaFetch.response.status, body: viaFetch.data ?? viaFetch.error },
    heyApi: { status: viaSdk.response.status, body: viaSdk.data ?? viaSdk.error },
  }));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
`,
);
// CommonJS output: the generated SDK imports its modules without file extensions.
writeFileSync(join(work, "package.json"), JSON.stringify({ type: "commonjs" }));
try {
  execFileSync(
    bin("tsc"),
    ["--strict", "--module", "commonjs", "--moduleResolution", "node10", "--target", "es2022", "--skipLibCheck",
      "--types", "node", "--outDir", "out", "call.ts"],
    { cwd: work, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
} catch (e) {
  throw new Error(`tsc --strict failed:\n${e.stdout}${e.stderr}`);
}
const ran = execFileSync("node", [join(work, "out", "call.js"), base, key, session], { cwd: work, encoding: "utf8" });
const calls = JSON.parse(ran.trim().split("\n").pop());
console.log(JSON.stringify({ operations: operations.length, ...calls }));
