import { parentPort } from 'node:worker_threads';
import { matchesFilter } from './filter-match.mjs';
import { PayloadSchemas, SchemaRefused } from './payload-schemas.mjs';

/**
 * A payload check thread (PayloadCheckPool): compiles event types' schemas, validates
 * payloads against them, evaluates receivers' filters, one job at a time. Whatever a job
 * costs, it costs this thread, never the API's event loop; the pool gives each job a
 * budget and ends the thread (worker.terminate(), which stops even a loop that never
 * yields) when a job outruns it.
 * A job: `{ id, kind: 'compile', schema }`, `{ id, kind: 'validate', schema, body }` or
 * `{ id, kind: 'filter', filters, body }`, with `schema` and `body` as JSON text (the
 * payload is parsed here, off the event loop too). The answer: `{ id, result }`, or
 * `{ id, refused }` for a schema that cannot be compiled, or `{ id, failed }` for any
 * other error (a `$ref` that recurses without end overflows the stack, for one).
 */
const schemas = new PayloadSchemas();

function run(job) {
  switch (job.kind) {
    case 'compile':
      schemas.validatorOf(job.schema);
      return true;
    case 'validate':
      return schemas.problemOf(job.schema, JSON.parse(job.body)) ?? null;
    case 'filter': {
      const payload = JSON.parse(job.body);
      return job.filters.map((f) => matchesFilter(f, payload));
    }
    default:
      throw new Error(`unknown job ${job.kind}`);
  }
}

// ajv compiles the draft 2020-12 meta-schema the first time it checks a schema (hundreds of ms):
// done here, while the thread loads, so no job's budget pays for it
schemas.problemOf(JSON.stringify({ type: 'array', items: { type: 'object', properties: { a: { type: 'string', format: 'email' } } } }), []);
// loaded: the pool starts a job's budget when it hands the job over, from now on
parentPort.postMessage({ ready: true });

parentPort.on('message', (job) => {
  try {
    parentPort.postMessage({ id: job.id, result: run(job) });
  } catch (error) {
    if (error instanceof SchemaRefused) parentPort.postMessage({ id: job.id, refused: error.message });
    else parentPort.postMessage({ id: job.id, failed: `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}` });
  }
});
