import { ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import type { ValidatorOptions } from 'class-validator';
import { AppError } from './app.error.js';
import { isPlainJson, passesAllRules } from './validation.fast-path.js';

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
    return this.validBody(value, metadata) ?? super.transform(value, metadata);
  }

  /** What Nest's transform returns for a valid plain JSON body (the DTO instance), or undefined when not sure. */
  private validBody(value: unknown, metadata: ArgumentMetadata): object | undefined {
    const { metatype } = metadata;
    if (metadata.type !== 'body' || !metatype || !this.toValidate(metadata) || !this.isTransformEnabled || this.transformOptions) return undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !isPlainJson(value)) return undefined;
    const entity = plainToInstance(metatype, value) as object;
    return entity.constructor === metatype && passesAllRules(entity, this.validatorOptions) ? entity : undefined;
  }

  protected override validate(object: object, options?: ValidatorOptions): Promise<ValidationError[]> | ValidationError[] {
    if (options && passesAllRules(object, options)) return [];
    return super.validate(object, options);
  }
}
