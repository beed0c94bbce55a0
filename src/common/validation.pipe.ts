import { ValidationPipe, type ValidationError } from '@nestjs/common';
import type { ValidatorOptions } from 'class-validator';
import { AppError } from './app.error.js';
import { passesAllRules } from './validation.fast-path.js';

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
 */
class FastPathValidationPipe extends ValidationPipe {
  protected override validate(object: object, options?: ValidatorOptions): Promise<ValidationError[]> | ValidationError[] {
    if (options && passesAllRules(object, options)) return [];
    return super.validate(object, options);
  }
}
