import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import type { PortalCaller } from '../portal/portal-session.service.js';
import type { ReadReplica } from '../database/read-replica.js';

/** Methods that never write. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * With a read replica (DATABASE_READ_URL): a request that may have written (any other
 * method, by a key or a portal session) notes its key's write in `onSend`, after its
 * transaction committed and before its answer leaves, so the client's next read of
 * the key stays on the primary until the replica has the write (ReadReplica).
 */
export function registerReadAfterWrite(fastify: FastifyInstance, replica: ReadReplica): void {
  if (!replica.configured) return;
  fastify.addHook('onSend', (req: FastifyRequest, _reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (!READS.has(req.method)) {
      const r = req as FastifyRequest & { apiKey?: AuthenticatedKey; portal?: PortalCaller };
      const key = r.apiKey?.id ?? r.portal?.apiKeyId;
      if (key) replica.noteWrite(key);
    }
    done(null, payload);
  });
}
