import { ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import type { ValidatorOptions } from 'class-validator';
import { AppError } from './app.error.js';
import { isPlainJson, passesAllRules } from './validation.fast-path.js';
import { dtoObjects, holdVerbatim, putBack, silentlyDroppedKey, verbatimProperties } from './verbatim.js';

/** Problems listed in an error response; the rest are counted. */
const MAX_LISTED = 20;

/**
 * DTO validation for every route: unknown fields are errors (not silently
 * dropped), and failures become one `validation_failed` error whose details name
 * each bad field by path (`callbacks.3.url`).
 */
export function buildValidationPipe(): ValidationPipe {
  return new FastPathValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    stopAtFirstError: true,
    exceptionFactory: (errors) => {
      const problems = flatten(errors);
      const listed = problems.slice(0, MAX_LISTED);
      const more = problems.length - listed.length;
      return new AppError(
        'validation_failed',
        `invalid request: ${listed[0]?.message ?? 'bad input'}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`,
        { problems: listed, ...(more > 0 && { more }) },
      );
    },
  });
}

/** class-validator's error for an unknown property at `path` (e.g. callbacks, 0, toString), as its whitelist check words it. */
function unknownPropertyError(path: Array<string | number>): ValidationError {
  const property = String(path.at(-1));
  let error: ValidationError = { property, constraints: { whitelistValidation: `property ${property} should not exist` }, children: [] };
  for (const step of path.slice(0, -1).reverse()) error = { property: String(step), children: [error] };
  return error;
}

function flatten(errors: ValidationError[], prefix = ''): Array<{ field: string; message: string }> {
  const out: Array<{ field: string; message: string }> = [];
  for (const e of errors) {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    for (const m of Object.values(e.constraints ?? {})) {
      out.push({ field, message: m.startsWith(e.property) && prefix ? `${field}${m.slice(e.property.length)}` : m });
    }
    if (e.children?.length) out.push(...flatten(e.children, field));
    if (out.length > MAX_LISTED * 5) break;
  }
  return out;
}

/**
 * Nest's pipe, which asks class-validator only when the cheap walk over the same
 * rules (`passesAllRules`) is not sure the value is valid: so valid requests skip
 * class-validator's per-property bookkeeping, and invalid ones get its errors.
 *
 * A JSON body that is valid also skips the pipe's own walks over the value: it
 * closes sparse arrays, deletes `__proto__`, `prototype` and `constructor` keys and
 * looks for binary values, and a plain JSON value without those keys (`isPlainJson`)
 * has none of them, so they would change nothing. For one-callback batches those
 * walks cost about as much as the validation itself. Every other value, and every
 * body the fast path is not sure of, takes Nest's whole way.
 */
class FastPathValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype } = metadata;
    if (metadata.type !== 'body' || !metatype || !this.toValidate(metadata)) return super.transform(value, metadata);
    // The fast path takes only bodies without keys the transformation drops or
    // mangles (`isPlainJson`). On Nest's way, the client's data (`@Verbatim`: a
    // callback's body and headers) is kept as sent, and such keys of the DTOs' own
    // objects, which it would drop unseen, are refused (verbatim.ts).
    const valid = this.validBody(value, metadata);
    if (valid) return valid;
    const objects = dtoObjects(value, metatype);
    const dropped = silentlyDroppedKey(objects);
    if (dropped) throw await this.exceptionFactory([unknownPropertyError(dropped)]);
    // Nest strips keys from, and validates, copies of the verbatim values; the DTO
    // gets the originals back and is validated again as it will be used.
    const held = holdVerbatim(objects);
    const dto = (await super.transform(value, metadata)) as object;
    if (held.length === 0) return dto;
    putBack(dto, held);
    const errors = await this.validate(dto, this.validatorOptions);
    if (errors.length > 0) throw await this.exceptionFactory(errors);
    return dto;
  }

  /** What Nest's transform returns for a valid plain JSON body (the DTO instance), or undefined when not sure. */
  private validBody(value: unknown, metadata: ArgumentMetadata): object | undefined {
    const { metatype } = metadata;
    if (metadata.type !== 'body' || !metatype || !this.toValidate(metadata) || !this.isTransformEnabled || this.transformOptions) return undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !isPlainJson(value)) return undefined;
    const entity = instanceKeepingTopVerbatim(metatype as new () => unknown, value as Record<string, unknown>);
    return entity.constructor === metatype && passesAllRules(entity, this.validatorOptions) ? entity : undefined;
  }

  protected override validate(object: object, options?: ValidatorOptions): Promise<ValidationError[]> | ValidationError[] {
    if (options && passesAllRules(object, options)) return [];
    return super.validate(object, options);
  }
}

/**
 * `plainToInstance`, with the client's data held directly by the body (`@Verbatim`
 * properties of the DTO itself: an event's payload) handed over as parsed.
 * class-transformer would copy such a value, walking all of it, before `@Verbatim` puts
 * the parsed one back: for a payload of 12,000 objects, a copy on the event loop for
 * nothing. Nested DTOs' verbatim values (a batch's callback bodies) take the usual way.
 */
function instanceKeepingTopVerbatim(metatype: new () => unknown, value: Record<string, unknown>): Record<string, unknown> {
  const held = verbatimProperties(metatype)
    .filter((key) => Object.hasOwn(value, key))
    .map((key) => [key, value[key]] as const);
  for (const [key] of held) value[key] = null;
  const entity = plainToInstance(metatype as new () => Record<string, unknown>, value);
  for (const [key, parsed] of held) value[key] = entity[key] = parsed;
  return entity;
}
