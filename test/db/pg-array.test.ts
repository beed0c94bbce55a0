import { describe, expect, it } from 'vitest';
import { pgArray } from '../../src/database/pg-array.js';
import { useTestDatabase } from '../support/database.js';

describe('pgArray', () => {
  const test = useTestDatabase();

  const roundTrip = async (literal: string, type: string) => (await test.db.query(`SELECT $1::${type} AS a`, [literal])).rows[0].a as unknown[];

  it('should give Postgres back exactly the strings, whatever characters they hold', async () => {
    const values = [
      'plain',
      '',
      'NULL',
      'null',
      ' spaced ',
      'a,b',
      '{braces}',
      '"quoted"',
      'back\\slash',
      '\\"',
      'x"\\"y',
      '\t\r\n',
      'é ✓ 💥',
      '{"json":[1,"two"]}',
      null,
    ];
    expect(await roundTrip(pgArray(values), 'text[]')).toEqual(values);
  });

  it('should carry numbers, uuids and nulls to typed arrays', async () => {
    expect(await roundTrip(pgArray([1, -2, 0, null, 2147483647]), 'int[]')).toEqual([1, -2, 0, null, 2147483647]);
    const ids = ['0193a0b0-0000-7000-8000-000000000001', '0193a0b0-0000-7000-8000-000000000002'];
    expect(await roundTrip(pgArray(ids), 'uuid[]')).toEqual(ids);
    expect(await roundTrip(pgArray([]), 'text[]')).toEqual([]);
  });

  it('should carry int[] literals as elements of a text[] to cast one by one (retry delays)', async () => {
    const { rows } = await test.db.query(`SELECT d::int[] AS d FROM unnest($1::text[]) AS d`, [pgArray(['{100,200}', null, '{}'])]);
    expect(rows.map((r) => r.d)).toEqual([[100, 200], null, []]);
  });
});
