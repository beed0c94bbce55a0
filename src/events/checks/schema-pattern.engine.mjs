import { RE2JS } from 're2js';

/**
 * The regular expression engine of event types' schemas (`pattern`, `patternProperties`,
 * `pattern` under `propertyNames`): RE2 (re2js, a pure-JS port), given to ajv as its
 * `code.regExp`. Schemas and payloads both come from API keys, and V8's backtracking
 * engine takes time exponential in the input for patterns such as `^(a+)+$`; RE2 matches
 * in time linear in the input, whatever the pattern (test/event-types.e2e.test.ts,
 * "ReDoS"). The price: what RE2 cannot do in linear time it refuses, so lookahead,
 * lookbehind and backreferences make a schema a 400 at PUT (JSON Schema's own advice for
 * portable patterns leaves them out too). Otherwise a pattern means what it means in
 * ECMAScript (named groups and `\u{…}` are translated), found anywhere in the string as
 * JSON Schema asks, except that `\s` is ASCII whitespace only and `.` matches `\r`.
 */
export class UnsupportedPattern extends Error {}

class Re2Pattern {
  /** @param {string} source @param {RE2JS} re */
  constructor(source, re) {
    this.source = source;
    this.re = re;
  }

  /** @param {string} s */
  test(s) {
    return this.re.test(s);
  }

  /** ajv keys its compiled patterns by this: one entry per pattern text. */
  toString() {
    return `re2:${this.source}`;
  }
}

/** @param {string} pattern */
function compilePattern(pattern) {
  try {
    return new Re2Pattern(pattern, RE2JS.compile(RE2JS.translateRegExp(pattern)));
  } catch (error) {
    throw new UnsupportedPattern(
      `pattern ${JSON.stringify(pattern)} is not supported: ${error.message} ` +
        '(patterns are matched in linear time, by RE2: no lookahead, lookbehind or backreference)',
    );
  }
}

/** ajv's RegExpEngine: (pattern, flags) → { test }; `code` is only read by ajv's standalone code, which this service does not use. */
export const schemaPatternEngine = Object.assign((/** @type {string} */ pattern) => compilePattern(pattern), { code: 're2js' });
