// The official TypeScript SDK's client on custody mcp --stdio, as
// TestElicitationTypeScriptClient runs it: a client whose user approves
// custody's first approval form and declines the second, then a client
// that declared no elicitation, which is never asked. It prints what it
// was shown and what each call answered, as JSON.
//
//   node elicit_client.mjs SDK_DIR CUSTODY_BIN CONFIG DATA_DIR FILE
import { pathToFileURL } from "node:url";

const [sdk, bin, config, data, file] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(`${sdk}/dist/esm/${path}`).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { ElicitRequestSchema } = await load("types.js");

const custody = () =>
  new StdioClientTransport({
    command: bin,
    args: ["mcp", "--stdio", "--config", config, "--data", data, "--console-addr", "off"],
    stderr: "inherit",
  });
const edit = (oldText, newText) => ({ name: "fs__edit_file", arguments: { path: file, edits: [{ oldText, newText }] } });

// The user: approve, then decline.
const forms = [];
const answers = [{ action: "accept", content: { decision: "approve" } }, { action: "decline" }];
const client = new Client({ name: "ts-elicit-test", version: "1.2.3" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  forms.push(req.params);
  return answers[forms.length - 1] ?? { action: "cancel" };
});
await client.connect(custody());
const approved = await client.callTool(edit("ship on friday", "ship on monday"));
const declined = await client.callTool(edit("ship on monday", "ship never"));
await client.close();

// A client without the capability: held for an operator, never asked.
const plain = new Client({ name: "ts-plain-test", version: "1" });
await plain.connect(custody());
const held = await plain.callTool(edit("then rest", "then sleep"));
await plain.close();

console.log(JSON.stringify({ forms, approved, declined, held }));
