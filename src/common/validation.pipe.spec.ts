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
    ['a batch with defaults and nested bodies', {
      label: 'l', defaults: { method: 'PUT', headers: { 'x-a': '1' }, retryDelaysMs: [1, 2] },
      callbacks: [{ url: 'https://e.com/', body: [{ a: [null, true, 1.5] }] }, { url: 'https://e.com/b', body: 'text' }],
    }],
    // Nest deletes these keys before validating; the fast path leaves such bodies to it.
    ['a body with a "prototype" key', { callbacks: [{ url: 'https://e.com/', body: { prototype: 1, keep: 2 } }] }],
    ['a body with a "constructor" key', { callbacks: [{ url: 'https://e.com/', body: { constructor: 'x' } }] }],
    ['a "prototype" field beside the callbacks', { prototype: 1, callbacks: [{ url: 'https://e.com/' }] }],
    ['an unknown field', { callbacks: [{ url: 'https://e.com/', extra: 1 }] }],
    ['a bad URL', { callbacks: [{ url: 'ftp://e.com/' }] }],
  ])('should answer %s as Nest\'s own ValidationPipe does', async (_name, value) => {
    expect(await outcome(pipe, value)).toEqual(await outcome(stock, value));
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
