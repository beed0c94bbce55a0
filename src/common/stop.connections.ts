import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * What a stop (SIGTERM) does with HTTP connections still open. The HTTP server's
 * close waits for every connection Node counts as busy, and two kinds never end by
 * themselves:
 * - one that never sent a request (a client's pool or a proxy connecting ahead):
 *   Node counts it busy from the start (its headers timeout runs, and close stops
 *   that timer). It is cut when the HTTP server closes: nothing is in flight on it.
 * - one with a request that does not end (headers or body that never finish, an
 *   answer its client does not read): cut `graceMs` after the stop began, with any
 *   other request still running then.
 * Either held a stop until the process's shutdown limit (main.ts), which then exited
 * with code 1: the benchmarks' ingest client left pooled connections of the first
 * kind behind, and every API it stopped took 20 s.
 *
 * Returns `stopping`, to call when the stop begins; it returns the function that
 * cancels the grace timer once the stop is done.
 */
export function cutConnectionsOnStop(fastify: FastifyInstance, graceMs: number): () => () => void {
  const server = fastify.server as Server;
  const connections = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  fastify.addHook('preClose', (done) => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
    done();
  });
  return () => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    return () => clearTimeout(timer);
  };
}
