// Validate `agentrun render --format k8s` output offline (tests/integration/k8s_schema.sh).
//   node validate.mjs LIST.json STREAM.yaml
// 1. Every item of the v1/List validates against the Kubernetes OpenAPI schema
//    (kubernetes-models) or Cilium's CRD schema (@kubernetes-models/cilium).
// 2. No object has a field the schema does not know (the generated schemas allow
//    unknown fields, so a typo would pass 1): walked over the models' type declarations.
// 3. The YAML stream, read by js-yaml, is the same objects as the List.
// Prints one line per object; exits 1 on the first kind of failure it finds.
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import yaml from "js-yaml";

// Run from the directory holding node_modules (the test copies it there).
const here = path.dirname(new URL(import.meta.url).pathname);
const modules = path.join(here, "node_modules");

function modelPath(apiVersion, kind) {
  if (apiVersion.startsWith("cilium.io/"))
    return `@kubernetes-models/cilium/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion.includes("/") ? apiVersion : "v1"}/${kind}`;
}

// ---- strict field walk over the .d.ts declarations ----
const ifaceCache = new Map();
function declFile(spec, fromFile) {
  if (spec.startsWith(".")) return path.resolve(path.dirname(fromFile), spec.replace(/\.js$/, ".d.ts"));
  return path.join(modules, spec.replace(/\.js$/, "") + ".d.ts");
}
function loadIface(file) {
  if (ifaceCache.has(file)) return ifaceCache.get(file);
  const text = fs.readFileSync(file, "utf8");
  const imports = new Map();
  for (const m of text.matchAll(/import \{ (\w+) \} from "([^"]+)";/g)) imports.set(m[1], declFile(m[2], file));
  const body = text.match(/export interface I\w+ (?:extends [^{]+)?\{\n([\s\S]*?)\n\}/);
  const props = new Map();
  // every member's name; its type only when it is on one line (maps span several)
  if (body) for (const m of body[1].matchAll(/^ {4}"([^"]+)"\??: (.*)$/gm)) props.set(m[1], m[2].replace(/;$/, ""));
  const r = { props, imports, file };
  ifaceCache.set(file, r);
  return r;
}
function strict(value, iface, where, errors) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  for (const [k, v] of Object.entries(value)) {
    if (!iface.props.has(k)) {
      errors.push(`${where}/${k}: unknown field (${path.basename(iface.file)})`);
      continue;
    }
    let type = iface.props.get(k);
    const arr = type.match(/^Array<(\w+)>$/);
    if (arr) type = arr[1];
    if (!iface.imports.has(type)) continue; // a scalar, a map or an inline type
    const sub = loadIface(iface.imports.get(type));
    if (arr && Array.isArray(v)) v.forEach((x, i) => strict(x, sub, `${where}/${k}/${i}`, errors));
    else strict(v, sub, `${where}/${k}`, errors);
  }
}

const [listFile, yamlFile] = process.argv.slice(2);
const list = JSON.parse(fs.readFileSync(listFile, "utf8"));
assert.equal(list.apiVersion, "v1");
assert.equal(list.kind, "List");
let failed = 0;
for (const item of list.items) {
  const id = `${item.kind}/${item.metadata.name}`;
  const mod = modelPath(item.apiVersion, item.kind);
  const Model = (await import(mod))[item.kind];
  try {
    new Model(item).validate();
  } catch (e) {
    console.log(`FAIL schema ${id}: ${e.message}`);
    failed++;
    continue;
  }
  const errors = [];
  if (!item.apiVersion.startsWith("cilium.io/")) strict(item, loadIface(path.join(modules, mod + ".d.ts")), id, errors);
  for (const e of errors) console.log(`FAIL field ${e}`);
  failed += errors.length;
  if (errors.length === 0) console.log(`ok schema ${id} (${mod})`);
}
if (yamlFile) {
  const docs = yaml.loadAll(fs.readFileSync(yamlFile, "utf8")).filter((d) => d !== null);
  try {
    assert.deepStrictEqual(docs, list.items);
    console.log(`ok yaml stream = v1/List (${docs.length} objects)`);
  } catch (e) {
    console.log(`FAIL yaml stream differs from the v1/List: ${e.message.slice(0, 2000)}`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
