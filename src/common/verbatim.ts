import { Transform, Type } from 'class-transformer';
import { declaredProperties, isStrippedKey } from './validation.fast-path.js';

/**
 * Request DTOs hold two kinds of objects: the DTO's own (a batch, a callback), whose keys
 * are its declared fields, and the client's data inside them (a callback's body and
 * headers), which the API must store and send exactly as received.
 * Turning the parsed request into DTO instances changes the second kind unless told not
 * to: class-transformer copies nested objects and leaves out every key that names an
 * inherited method (`toString`, `valueOf`, `hasOwnProperty`, …), and Nest's
 * ValidationPipe deletes `prototype` and `constructor` keys at any depth (a body
 * `{"constructor": "x", "toString": 1, "n": 1}` would go out as `{"n": 1}`). On the DTO's
 * own objects the same two steps drop such keys without a word, where any other unknown
 * field is refused.
 */

/** Nested DTO classes by DTO class and property (own ones; `nestedTypeOf` looks at inherited ones too). */
const nestedByClass = new Map<Function, Map<string, () => Function>>();

/**
 * class-transformer's `@Type` for a property holding a nested DTO (or an array of
 * them), recorded here too, so `dtoObjects` can walk a request's DTO objects without
 * reading class-transformer's own metadata store (not part of its published API).
 */
export function NestedType(typeFunction: () => Function): PropertyDecorator {
  const type = Type(typeFunction);
  return (target, key) => {
    const owner = target.constructor;
    const own = nestedByClass.get(owner) ?? new Map<string, () => Function>();
    own.set(String(key), typeFunction);
    nestedByClass.set(owner, own);
    type(target, key);
  };
}

/** The DTO class `@NestedType` says `key` of `type` holds (its own or an inherited property), or undefined. */
function nestedTypeOf(type: Function, key: string): Function | undefined {
  for (let t: Function | null = type; t && t !== Function.prototype; t = Object.getPrototypeOf(t) as Function | null) {
    const found = nestedByClass.get(t)?.get(key);
    if (found) return found();
  }
  return undefined;
}

/** Verbatim properties by DTO class (own ones; `verbatimProperties` adds inherited ones). */
const verbatimByClass = new Map<Function, string[]>();

/**
 * Marks a DTO property that holds the client's data: class-transformer hands over
 * the parsed value itself, not a copy, and the validation pipe keeps it away from
 * Nest's key stripping (`holdVerbatim`).
 */
export function Verbatim(): PropertyDecorator {
  const keepParsed = Transform(({ obj, key }) => (obj as Record<string, unknown>)[key], { toClassOnly: true });
  return (target, key) => {
    const type = target.constructor;
    verbatimByClass.set(type, [...(verbatimByClass.get(type) ?? []), String(key)]);
    keepParsed(target, key);
  };
}

/** The verbatim properties of `type`, its own and inherited. */
export function verbatimProperties(type: Function): string[] {
  const names: string[] = [];
  for (let t: Function | null = type; t && t !== Function.prototype; t = Object.getPrototypeOf(t) as Function | null) {
    names.push(...(verbatimByClass.get(t) ?? []));
  }
  return names;
}

/** A plain object of the request that becomes an instance of `type`, and where it is. */
export interface DtoObject {
  object: Record<string, unknown>;
  type: Function;
  path: Array<string | number>;
}

/**
 * The objects of a parsed request body that become DTO instances: the body itself
 * as `type`, and, through the `@NestedType` of each property, the nested ones (an array's
 * items each). Values not shaped as the DTO expects are passed over: validation
 * refuses them.
 */
export function dtoObjects(value: unknown, type: Function): DtoObject[] {
  const found: DtoObject[] = [];
  const stack: DtoObject[] = [];
  const visit = (node: unknown, nodeType: Function, path: Array<string | number>) => {
    if (typeof node === 'object' && node !== null && !Array.isArray(node)) stack.push({ object: node as Record<string, unknown>, type: nodeType, path });
  };
  visit(value, type, []);
  while (stack.length > 0) {
    const dto = stack.pop()!;
    found.push(dto);
    for (const key of Object.keys(dto.object)) {
      const nested = nestedTypeOf(dto.type, key);
      if (!nested) continue;
      const child = dto.object[key];
      if (Array.isArray(child)) child.forEach((item, i) => visit(item, nested, [...dto.path, key, i]));
      else visit(child, nested, [...dto.path, key]);
    }
  }
  return found;
}

/**
 * The path of the first key of the DTOs' own objects (`dtoObjects`) that is not a
 * declared field and that the transformation would drop without a word (a name of
 * an Object.prototype member, or `prototype`), or undefined. Other unknown keys
 * reach class-validator, which refuses them.
 */
export function silentlyDroppedKey(objects: DtoObject[]): Array<string | number> | undefined {
  for (const { object, type: dtoType, path } of objects) {
    const declared = declaredProperties(dtoType);
    for (const key of Object.keys(object)) {
      if (!declared.has(key) && isStrippedKey(key)) return [...path, key];
    }
  }
  return undefined;
}

/** Verbatim values of a request body, and where they are. */
export type HeldValues = Array<{ path: Array<string | number>; value: unknown }>;

/**
 * For a body on Nest's whole way (which strips keys and lets class-transformer walk
 * every value): each verbatim value is replaced by a copy for that way, and the
 * original is held to be put back into the DTO with `putBack`.
 */
export function holdVerbatim(objects: DtoObject[]): HeldValues {
  const held: HeldValues = [];
  for (const { object, type: dtoType, path } of objects) {
    for (const key of verbatimProperties(dtoType)) {
      if (!Object.hasOwn(object, key)) continue;
      held.push({ path: [...path, key], value: object[key] });
      object[key] = structuredClone(object[key]);
    }
  }
  return held;
}

/** Puts held values back at their paths in `dto`, made from the same body. */
export function putBack(dto: unknown, held: HeldValues): void {
  for (const { path, value } of held) {
    let node = dto as Record<string | number, unknown>;
    for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
    node[path.at(-1)!] = value;
  }
}
