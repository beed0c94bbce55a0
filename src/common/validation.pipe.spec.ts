import 'reflect-metadata';
import { ValidationPipe, type ArgumentMetadata } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { CreateBatchDto } from '../batches/dto/create-batch.dto.js';
import { AppError } from './app.error.js';
import { buildValidationPipe } from './validation.pipe.js';

const body: ArgumentMetadata = { type: 'body', metatype: CreateBatchDto };
/** Nest's own pipe with the API's options: what the fast path must agree with. */
const stock = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true, transform: true, stopAtFirstError: true });
const pipe = buildValidationPipe();

/** What a pipe makes of `value`: the DTO (class and fields) or that it refused it. */
async function outcome(p: ValidationPipe, value: unknown): Promise<unknown> {
  try {
    const dto = (await p.transform(structuredClone(value), body)) as object;
    return { class: dto.constructor.name, dto: JSON.parse(JSON.stringify(dto)) };
  } catch {
    return 'refused';
  }
}

describe('buildValidationPipe', () => {
  it.each<[string, unknown]>([
    ['a one-callback batch', { callbacks: [{ url: 'http://127.0.0.1:9/h', body: { order: 1, note: 'n' }, externalId: 'o-1' }] }],
    [
      'a batch with defaults and nested bodies',
      {
        label: 'l',
        defaults: { method: 'PUT', headers: { 'x-a': '1' }, retryDelaysMs: [1, 2] },
        callbacks: [
          { url: 'https://e.com/', body: [{ a: [null, true, 1.5] }] },
          { url: 'https://e.com/b', body: 'text' },
        ],
      },
    ],
    ['an unknown field', { callbacks: [{ url: 'https://e.com/', extra: 1 }] }],
    ['a bad URL', { callbacks: [{ url: 'ftp://e.com/' }] }],
  ])("should answer %s as Nest's own ValidationPipe does", async (_name, value) => {
    expect(await outcome(pipe, value)).toEqual(await outcome(stock, value));
  });

  // Nest's own pipe deletes `prototype` and `constructor` keys at any depth, and
  // class-transformer leaves out keys naming inherited methods: the client's data
  // (a callback's body and headers) must go out as sent, so this pipe differs there.
  it.each<[string, unknown]>([
    ['"prototype" and "constructor" keys', { prototype: 1, constructor: 'x', keep: 2 }],
    ['keys naming inherited methods, at any depth', { toString: null, valueOf: 1, n: { hasOwnProperty: 2, k: 3 }, a: [{ toString: 'y' }] }],
    ['a body made only of such keys', { constructor: { name: 'c' } }],
  ])('should keep a callback body with %s exactly as sent', async (_name, callbackBody) => {
    const sent = {
      callbacks: [
        { url: 'https://e.com/', body: callbackBody },
        { url: 'https://e.com/b', body: [callbackBody] },
      ],
    };
    const dto = (await pipe.transform(structuredClone(sent), body)) as CreateBatchDto;
    expect(dto).toBeInstanceOf(CreateBatchDto);
    expect(JSON.stringify(dto.callbacks.map((c) => c.body))).toBe(JSON.stringify([callbackBody, [callbackBody]]));
  });

  it('should keep header names such as "toString" or "valueOf", in a callback and in the defaults', async () => {
    const sent = {
      defaults: { headers: { toString: 'd', 'x-a': '1' } },
      callbacks: [{ url: 'https://e.com/', headers: { hasOwnProperty: 'h', valueOf: 'v' } }],
    };
    const dto = (await pipe.transform(structuredClone(sent), body)) as CreateBatchDto;
    expect(JSON.stringify(dto.defaults?.headers)).toBe(JSON.stringify(sent.defaults.headers));
    expect(JSON.stringify(dto.callbacks[0].headers)).toBe(JSON.stringify(sent.callbacks[0].headers));
  });

  it.each<[string, unknown, string]>([
    ['"toString" in a callback', { callbacks: [{ url: 'https://e.com/', toString: 1 }] }, 'callbacks.0.toString'],
    ['"valueOf" in the second callback', { callbacks: [{ url: 'https://e.com/' }, { url: 'https://e.com/', valueOf: null }] }, 'callbacks.1.valueOf'],
    ['"hasOwnProperty" in the defaults', { defaults: { hasOwnProperty: 1 }, callbacks: [{ url: 'https://e.com/' }] }, 'defaults.hasOwnProperty'],
    ['"constructor" beside the callbacks', { constructor: 'x', callbacks: [{ url: 'https://e.com/' }] }, 'constructor'],
    ['"prototype" beside the callbacks', { prototype: 1, callbacks: [{ url: 'https://e.com/' }] }, 'prototype'],
  ])('should refuse an unknown field named %s, which the transformation would drop unseen', async (_name, value, field) => {
    await expect(pipe.transform(structuredClone(value), body)).rejects.toMatchObject({
      code: 'validation_failed',
      details: { problems: [{ field, message: `property ${field.split('.').at(-1)} should not exist` }] },
    } satisfies Partial<AppError>);
  });

  it.each<[string, unknown, string, RegExp]>([
    ['a string timeout', { callbacks: [{ url: 'https://e.com/', timeoutMs: 'abc' }] }, 'callbacks.0.timeoutMs', /must be an integer/],
    ['an object for maxAttempts', { callbacks: [{ url: 'https://e.com/', maxAttempts: {} }] }, 'callbacks.0.maxAttempts', /must be an integer/],
    ['a string for the retry delays', { callbacks: [{ url: 'https://e.com/', retryDelaysMs: 'x' }] }, 'callbacks.0.retryDelaysMs', /must be an array/],
    ['an object among the retry delays', { callbacks: [{ url: 'https://e.com/', retryDelaysMs: [{}] }] }, 'callbacks.0.retryDelaysMs', /must be an integer/],
    ['a number label', { label: 5, callbacks: [{ url: 'https://e.com/' }] }, 'label', /must be a string/],
    ['a number externalId', { callbacks: [{ url: 'https://e.com/', externalId: 5 }] }, 'callbacks.0.externalId', /must be a string/],
    ['an object for the callbacks', { callbacks: { url: 'https://e.com/' } }, 'callbacks', /must be an array/],
  ])('should say what is wrong with %s, not a later rule', async (_name, value, field, message) => {
    const error = await pipe.transform(structuredClone(value), body).then(
      () => undefined,
      (e: AppError) => e,
    );
    expect(error?.details).toMatchObject({ problems: [{ field, message: expect.stringMatching(message) }] });
  });

  it('should return an instance of the DTO for a valid body', async () => {
    const dto = await pipe.transform({ callbacks: [{ url: 'https://e.com/' }] }, body);
    expect(dto).toBeInstanceOf(CreateBatchDto);
  });

  it('should refuse an invalid body with one validation_failed error naming the field', async () => {
    await expect(pipe.transform({ callbacks: [{ url: 'ftp://e.com/' }] }, body)).rejects.toMatchObject({
      code: 'validation_failed',
      details: { problems: [expect.objectContaining({ field: 'callbacks.0.url' })] },
    } satisfies Partial<AppError>);
  });
});
