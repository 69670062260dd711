// Compiles the backscroll wire schema with ajv in strict mode (every strict option on) and prints,
// for each record of a corpus file (a JSON array), whether the schema accepts it: a JSON array of
// booleans on stdout. Exit 1 with the compile error when the schema does not compile.
//
//   node schemas/js/validate.mjs schemas/wire-v1.schema.json corpus.json
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [schemaPath, corpusPath] = process.argv.slice(2);
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
const ajv = new Ajv2020({ strict: true, allErrors: false });
addFormats(ajv);
let validate;
try {
  validate = ajv.compile(schema);
} catch (error) {
  process.stderr.write(`ajv strict compile failed: ${error.message}\n`);
  process.exit(1);
}
const corpus = corpusPath ? JSON.parse(readFileSync(corpusPath, "utf8")) : [];
process.stdout.write(JSON.stringify(corpus.map((record) => validate(record) === true)) + "\n");
