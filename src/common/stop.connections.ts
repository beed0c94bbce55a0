import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * What a stop (SIGTERM) does with open HTTP connections. The server's close waits for
 * every connection Node counts as busy; two kinds never end by themselves and would hold
 * a stop until the process's shutdown limit (main.ts):
 * - one that never sent a request (a client's pool or a proxy connecting ahead), which
 *   Node counts busy from the start (its headers timeout runs; close stops that timer):
 *   cut when the HTTP server closes, as nothing is in flight on it.
 * - one with a request that does not end (headers or body never finishing, an answer not
 *   read): cut `graceMs` after the stop began, with any request still running.
 * Returns `stopping`, called as the stop begins; its result cancels the grace timer.
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
