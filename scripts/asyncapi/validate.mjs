// Validates AsyncAPI documents with the official parser (@asyncapi/parser):
// node validate.mjs FILE... prints every diagnostic and exits 1 when any
// has severity error (or a document cannot be read), 0 otherwise.
import { readFile } from "node:fs/promises";
import { Parser, DiagnosticSeverity } from "@asyncapi/parser";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node validate.mjs FILE...");
  process.exit(2);
}
const parser = new Parser();
let errors = 0;
for (const file of files) {
  const { document, diagnostics } = await parser.parse(await readFile(file, "utf8"));
  for (const d of diagnostics) {
    const severity = ["error", "warning", "information", "hint"][d.severity] ?? d.severity;
    console.log(`${file}: ${severity}: ${d.code}: ${d.message} at /${d.path.join("/")}`);
    if (d.severity === DiagnosticSeverity.Error) errors++;
  }
  if (document === undefined && !diagnostics.some((d) => d.severity === DiagnosticSeverity.Error)) {
    console.log(`${file}: error: the parser made no document`);
    errors++;
  }
}
process.exit(errors > 0 ? 1 : 0);
