// Writes the OpenAPI document (src/client/openapi.json) and the client's types
// generated from it by openapi-typescript (src/client/api.schema.ts), from the built
// app (dist/) in Nest's preview mode: no database, no port. Run through
// `npm run client:generate`, which builds first.
import 'reflect-metadata';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const dist = new URL('../dist/', import.meta.url);
const { previewOpenApiDocument } = await import(new URL('openapi.document.js', dist).href);
const { clientSchemaSource, documentSource } = await import(new URL('client/schema.generator.js', dist).href);

const document = await previewOpenApiDocument();
const out = (name) => fileURLToPath(new URL(`../src/client/${name}`, import.meta.url));
await writeFile(out('openapi.json'), documentSource(document));
await writeFile(out('api.schema.ts'), await clientSchemaSource(document));
console.log(`wrote src/client/openapi.json and src/client/api.schema.ts (${Object.keys(document.paths).length} paths)`);
