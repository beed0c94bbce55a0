import { getMetadataStorage, ValidationTypes, type ValidationArguments, type ValidatorConstraintInterface, type ValidatorOptions } from 'class-validator';

type ValidationMetadata = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>[number];

/** One property of a class as class-validator would check it, resolved once per class. */
interface PropertyRules {
  name: string;
  /** @IsOptional / @ValidateIf: when one says no, the property is not checked at all. */
  conditions: Array<(object: object, value: unknown) => boolean>;
  checks: Array<{ metadata: ValidationMetadata; constraint: ValidatorConstraintInterface }>;
  nested: boolean;
}

type ClassRules = { properties: PropertyRules[]; names: ReadonlySet<string> } | 'unsupported';

const rulesByClass = new Map<Function, ClassRules>();

/**
 * True only when class-validator, with `options`, would find nothing wrong with `object`
 * (an instance made by class-transformer); false means "not sure", and the caller then
 * runs class-validator itself, which also words the errors. The rules are the DTOs' own
 * decorators, read from class-validator's metadata, and every check is class-validator's
 * own constraint: this only skips the bookkeeping that makes it slow on a large batch (an
 * error object, four array filters and a metadata lookup per property and per item;
 * `npm run bench:ingest`). Anything this does not model (groups, `always`, async or
 * promise validation, skip options, whitelist stripping, arrays of arrays) answers false,
 * so it can make validation cheaper but never more lenient (validation.fast-path.spec.ts
 * checks it against class-validator on valid and invalid batches).
 */
export function passesAllRules(object: unknown, options: ValidatorOptions): boolean {
  if (
    options.groups?.length ||
    options.always ||
    options.strictGroups ||
    options.skipMissingProperties ||
    options.skipNullProperties ||
    options.skipUndefinedProperties
  )
    return false;
  if (options.forbidUnknownValues === false || (options.whitelist && !options.forbidNonWhitelisted)) return false;
  return passes(object, options);
}

function passes(object: unknown, options: ValidatorOptions): boolean {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return false;
  const rules = rulesOf(object.constructor);
  if (rules === 'unsupported') return false;
  if (options.whitelist) {
    for (const key of Object.keys(object)) if (!rules.names.has(key)) return false;
  }
  for (const property of rules.properties) {
    const value = (object as Record<string, unknown>)[property.name];
    if (!property.conditions.every((condition) => condition(object, value))) continue;
    for (const { metadata, constraint } of property.checks) {
      if (metadata.validateIf && !metadata.validateIf(object, value)) continue;
      const args: ValidationArguments = { targetName: object.constructor.name, property: property.name, object, value, constraints: metadata.constraints };
      const items = metadata.each && (Array.isArray(value) || value instanceof Set || value instanceof Map) ? [...value.values()] : [value];
      for (const item of items) {
        const valid = constraint.validate(item, args);
        if (valid !== true) return false;
      }
    }
    if (property.nested && value !== undefined) {
      const items = Array.isArray(value) || value instanceof Set || value instanceof Map ? [...value.values()] : [value];
      for (const item of items) if (!(item instanceof Object) || !passes(item, options)) return false;
    }
  }
  return true;
}

function rulesOf(target: Function): ClassRules {
  let rules = rulesByClass.get(target);
  if (!rules) {
    rules = compile(target);
    rulesByClass.set(target, rules);
  }
  return rules;
}

/** The class's rules by property, as class-validator would group them; 'unsupported' for anything not modelled. */
function compile(target: Function): ClassRules {
  const storage = getMetadataStorage();
  const metadatas = storage.getTargetValidationMetadatas(target, '', false, false, undefined);
  if (metadatas.length === 0) return 'unsupported'; // forbidUnknownValues: an instance of a class without rules is an error
  const byName = new Map<string, PropertyRules>();
  for (const m of metadatas) {
    if (m.groups?.length || m.always !== undefined) return 'unsupported';
    let property = byName.get(m.propertyName);
    if (!property) byName.set(m.propertyName, (property = { name: m.propertyName, conditions: [], checks: [], nested: false }));
    switch (m.type) {
      case ValidationTypes.WHITELIST:
        break;
      case ValidationTypes.CONDITIONAL_VALIDATION:
        property.conditions.push(m.constraints[0] as (object: object, value: unknown) => boolean);
        break;
      case ValidationTypes.NESTED_VALIDATION:
        property.nested = true;
        break;
      case ValidationTypes.CUSTOM_VALIDATION:
      case ValidationTypes.IS_DEFINED:
        for (const c of storage.getTargetValidatorConstraints(m.constraintCls)) {
          if (c.async) return 'unsupported';
          property.checks.push({ metadata: m, constraint: c.instance });
        }
        break;
      default:
        return 'unsupported';
    }
  }
  return { properties: [...byName.values()], names: declaredProperties(target) };
}

const declaredByClass = new Map<Function, ReadonlySet<string>>();

/** The properties `target` declares with class-validator decorators (its whitelist), inherited ones included. */
export function declaredProperties(target: Function): ReadonlySet<string> {
  let names = declaredByClass.get(target);
  if (!names) {
    names = new Set(
      getMetadataStorage()
        .getTargetValidationMetadatas(target, '', false, false, undefined)
        .map((m) => m.propertyName),
    );
    declaredByClass.set(target, names);
  }
  return names;
}

/**
 * A key that turning a request into DTO instances drops or mangles: `prototype`, or
 * a name of an Object.prototype member (`constructor`, `__proto__`, `toString`, …).
 */
export function isStrippedKey(key: string): boolean {
  return key === 'prototype' || key in Object.prototype;
}

/**
 * True when `value` is made only of what `JSON.parse` makes: objects with
 * Object.prototype, dense arrays, strings, numbers, booleans and null, and no key
 * `prototype` or named like a member of Object.prototype (`constructor`, `__proto__`,
 * `toString`, …). Such a value has no sparse array, prototype key or binary value for
 * Nest's ValidationPipe to fix or refuse, and no key that the transformation to DTO
 * instances drops or mangles (see verbatim.ts), so the fast path can take it whole.
 * Iterative, so depth cannot overflow the stack.
 */
export function isPlainJson(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean') continue;
    if (typeof node !== 'object') return false;
    if (Array.isArray(node)) {
      if (Object.getPrototypeOf(node) !== Array.prototype) return false;
      for (let i = 0; i < node.length; i++) {
        if (!(i in node)) return false;
        stack.push(node[i]);
      }
      continue;
    }
    if (Object.getPrototypeOf(node) !== Object.prototype) return false;
    for (const key in node) {
      if (isStrippedKey(key)) return false;
      stack.push((node as Record<string, unknown>)[key]);
    }
  }
  return true;
}
