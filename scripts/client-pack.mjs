// `npm run client:pack [-- <folder>]`: the typed client (src/client/) as an npm package
// another repository installs: `npm install ./callback-dispatch-client-<version>.tgz`.
// Compiles api.client.ts and the generated api.schema.ts with their declarations, puts
// the OpenAPI document beside them, writes the package's own package.json (its one
// dependency: openapi-fetch, at the range this project uses) and packs it with `npm
// pack`. Prints the tarball's path. The folder defaults to dist-client/.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.resolve(process.argv[2] ?? path.join(root, 'dist-client'));
const stage = path.join(out, 'package');
const project = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
execFileSync(
  process.execPath,
  [
    path.join(root, 'node_modules/typescript/bin/tsc'),
    ...['--outDir', stage, '--rootDir', path.join(root, 'src/client')],
    ...['--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--lib', 'ES2022,DOM'],
    ...['--declaration', '--strict', '--skipLibCheck', '--types', 'node', '--ignoreConfig'],
    path.join(root, 'src/client/api.client.ts'),
  ],
  { cwd: root, stdio: 'inherit' },
);
copyFileSync(path.join(root, 'src/client/openapi.json'), path.join(stage, 'openapi.json'));
const manifest = {
  name: '@callback-dispatch/client',
  version: project.version,
  description: 'Typed client of the callback dispatch service API (openapi-fetch over types generated from its OpenAPI document)',
  license: project.license,
  type: 'module',
  exports: {
    '.': { types: './api.client.d.ts', default: './api.client.js' },
    './openapi.json': './openapi.json',
  },
  types: './api.client.d.ts',
  files: ['*.js', '*.d.ts', 'openapi.json', 'README.md'],
  engines: project.engines,
  dependencies: { 'openapi-fetch': project.dependencies['openapi-fetch'] },
};
writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
writeFileSync(
  path.join(stage, 'README.md'),
  `# @callback-dispatch/client

The typed client of the callback dispatch service's HTTP API, version ${project.version}: the service's
OpenAPI document (\`openapi.json\`, also served at \`/docs/openapi.json\`) as TypeScript types, and
[openapi-fetch](https://www.npmjs.com/package/openapi-fetch) for the calls.

\`\`\`ts
import { createApiClient, unwrap } from '@callback-dispatch/client';

const api = createApiClient({ baseUrl: 'http://127.0.0.1:3000', key: process.env.CALLBACKS_API_KEY });
const { data, error } = await api.POST('/v1/batches', { body: { callbacks: [{ url: 'https://example.com/hooks/a' }] } });
const batch = await unwrap(api.GET('/v1/batches/{id}', { params: { path: { id: data!.id } } })); // throws ApiError unless 2xx
\`\`\`
`,
);
const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], { cwd: stage, encoding: 'utf8' }).trim().split('\n').at(-1);
console.log(path.join(out, tarball));
