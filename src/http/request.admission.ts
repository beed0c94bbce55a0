import type { FastifyRequest } from 'fastify';

/** Requests whose API key or portal session the authentication hook found valid (auth.hooks.ts). */
const admitted = new WeakSet<FastifyRequest>();

/** Marks `req` as carrying a valid credential: its body may be as large as MAX_REQUEST_BYTES. */
export function admit(req: FastifyRequest): void {
  admitted.add(req);
}

/** True once the authentication hook admitted `req`; security.hooks.ts bounds the body of any other. */
export function isAdmitted(req: FastifyRequest): boolean {
  return admitted.has(req);
}
