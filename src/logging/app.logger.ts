import type { LoggerService, LogLevel as NestLogLevel } from '@nestjs/common';
import { pino, type DestinationStream, type Level, type Logger } from 'pino';
import type { LogLevel } from '../config/app.config.js';
import { redactText, redactValue } from './redact.policy.js';
import { requestContext } from './request.context.js';

/** Nest's levels as pino's. */
const LEVELS: Record<NestLogLevel, Level> = { fatal: 'fatal', error: 'error', warn: 'warn', log: 'info', debug: 'debug', verbose: 'trace' };

/**
 * Nest's logger as one JSON line per event (pino): `level`, `time`, `context`,
 * `msg`, and `requestId` when the line is written while serving an API request.
 * Secrets are redacted from messages and fields, at every level: `whsec_` signing
 * secrets, `cbk_` keys, `cbp_` portal tokens, bearer tokens, credentials in query
 * strings, fields named like secrets, and the configured secrets (BOOTSTRAP_API_KEY,
 * METRICS_TOKEN, SECRETS_KEY) whatever they look like (redact.policy.ts).
 */
export class AppLogger implements LoggerService {
  private readonly pino: Logger;

  constructor(
    level: LogLevel,
    private readonly secrets: string[] = [],
    destination?: DestinationStream,
  ) {
    this.pino = pino(
      { level: LEVELS[level], base: undefined, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
      destination,
    );
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  /** Nest calls `(message, ...optional, context)`; an error's first optional is its stack. */
  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const rest = [...params];
    const context = rest.length > 0 && typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const stack = level === 'error' && typeof rest[0] === 'string' ? (rest.shift() as string) : undefined;
    const fields: Record<string, unknown> = {};
    if (context) fields.context = context;
    const requestId = requestContext.getStore()?.requestId;
    if (requestId) fields.requestId = requestId;
    let msg: string;
    if (message !== null && typeof message === 'object' && !(message instanceof Error)) {
      const { msg: m, message: mm, ...other } = message as Record<string, unknown>;
      Object.assign(fields, redactValue(other, this.secrets));
      msg = String(m ?? mm ?? '');
    } else {
      msg = message instanceof Error ? message.message : String(message);
      if (message instanceof Error && !stack) fields.stack = redactText(message.stack ?? '', this.secrets);
    }
    if (stack) fields.stack = redactText(stack, this.secrets);
    if (rest.length > 0) fields.details = redactValue(rest, this.secrets);
    this.pino[level](fields, redactText(msg, this.secrets));
  }
}
