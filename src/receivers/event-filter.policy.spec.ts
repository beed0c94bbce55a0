import { describe, expect, it } from 'vitest';
import { matchesFilter } from '../events/checks/filter-match.mjs';
import { filterProblem, type Filter } from './event-filter.policy.js';

const payload = {
  type: 'order.paid',
  data: { amount: 1500, currency: 'EUR', tags: ['vip', 'eu'], customer: { id: 'c-1', country: 'DE' }, note: null },
  items: [{ sku: 'A-1', qty: 2 }],
};

describe('matchesFilter', () => {
  it.each<[string, Filter, boolean]>([
    ['empty filter', {}, true],
    ['implicit $eq', { 'data.currency': 'EUR' }, true],
    ['implicit $eq, other value', { 'data.currency': 'USD' }, false],
    ['$eq on an object, deeply, any key order', { 'data.customer': { country: 'DE', id: 'c-1' } }, true],
    ['plain object value is equality', { 'data.customer': { id: 'c-1' } }, false],
    ['$eq on an array', { 'data.tags': { $eq: ['vip', 'eu'] } }, true],
    ['$eq null where null', { 'data.note': null }, true],
    ['$eq null where missing', { 'data.missing': null }, false],
    ['$ne', { 'data.currency': { $ne: 'USD' } }, true],
    ['$ne on a missing path holds', { 'data.missing': { $ne: 1 } }, true],
    ['$in', { 'data.currency': { $in: ['USD', 'EUR'] } }, true],
    ['$in, none', { 'data.currency': { $in: ['USD'] } }, false],
    ['$nin', { 'data.currency': { $nin: ['USD'] } }, true],
    ['$nin, listed', { 'data.currency': { $nin: ['EUR'] } }, false],
    ['$gt', { 'data.amount': { $gt: 1000 } }, true],
    ['$gt, equal', { 'data.amount': { $gt: 1500 } }, false],
    ['$gte, equal', { 'data.amount': { $gte: 1500 } }, true],
    ['$lt', { 'data.amount': { $lt: 1500 } }, false],
    ['$lte', { 'data.amount': { $lte: 1500 } }, true],
    ['range: every operator holds', { 'data.amount': { $gte: 1000, $lt: 2000 } }, true],
    ['range: one fails', { 'data.amount': { $gte: 1000, $lt: 1200 } }, false],
    ['strings compare as strings', { 'data.customer.country': { $gt: 'AT' } }, true],
    ['a number never compares with a string', { 'data.amount': { $gt: '1000' } }, false],
    ['$gt on a missing path', { 'data.missing': { $gt: 0 } }, false],
    ['$exists true', { 'data.customer.id': { $exists: true } }, true],
    ['$exists false', { 'data.customer.email': { $exists: false } }, true],
    ['$exists true on a null value', { 'data.note': { $exists: true } }, true],
    ['array index in a path', { 'items.0.sku': 'A-1' }, true],
    ['array index past the end', { 'items.1.sku': { $exists: true } }, false],
    ['a path through a scalar', { 'data.amount.value': { $exists: true } }, false],
    ['inherited keys are not paths', { 'data.constructor': { $exists: true } }, false],
    ['entries are all required', { 'data.currency': 'EUR', 'data.amount': { $lt: 100 } }, false],
    ['$and', { $and: [{ 'data.currency': 'EUR' }, { 'data.amount': { $gt: 1 } }] }, true],
    ['$and, one fails', { $and: [{ 'data.currency': 'EUR' }, { 'data.amount': { $gt: 9999 } }] }, false],
    ['$or', { $or: [{ 'data.currency': 'USD' }, { 'data.customer.country': 'DE' }] }, true],
    ['$or, none', { $or: [{ 'data.currency': 'USD' }, { 'data.customer.country': 'FR' }] }, false],
    ['$not', { $not: { 'data.currency': 'USD' } }, true],
    ['$not of a match', { $not: { 'data.currency': 'EUR' } }, false],
    ['nested combinators', { $or: [{ $and: [{ 'data.currency': 'EUR' }, { $not: { 'data.tags': { $eq: [] } } }] }, { type: 'x' }] }, true],
  ])('%s', (_, filter, expected) => {
    expect(filterProblem(filter)).toBeUndefined();
    expect(matchesFilter(filter, payload)).toBe(expected);
  });

  it('should read a scalar payload as having no paths', () => {
    expect(matchesFilter({ a: { $exists: false } }, 42)).toBe(true);
    expect(matchesFilter({ a: 1 }, null)).toBe(false);
  });
});

describe('filterProblem', () => {
  it.each<[string, unknown, string]>([
    ['not an object', [], 'filter: a filter is an object'],
    ['a string', 'data.amount > 5', 'filter: a filter is an object'],
    ['unknown operator', { 'data.amount': { $gt: 1, $regex: 'x' } }, 'filter["data.amount"].$regex: unknown operator'],
    ['$gt of an object', { 'data.amount': { $gt: {} } }, 'filter["data.amount"].$gt: takes a number or a string'],
    ['$in of a scalar', { 'data.currency': { $in: 'EUR' } }, 'filter["data.currency"].$in: takes an array'],
    ['$exists of a string', { a: { $exists: 'yes' } }, 'filter["a"].$exists: takes true or false'],
    ['mixed keys', { a: { $eq: 1, b: 2 } }, 'filter["a"]: mixes operators'],
    ['empty path part', { 'data..amount': 1 }, 'filter["data..amount"]: a path is dot-separated'],
    ['unknown combinator', { $nor: [] }, 'filter.$nor: unknown combinator'],
    ['$or of an object', { $or: { a: 1 } }, 'filter.$or: takes a non-empty array'],
    ['empty $and', { $and: [] }, 'filter.$and: takes a non-empty array'],
    ['deep in a combinator', { $or: [{ a: 1 }, { $not: { b: { $lt: true } } }] }, 'filter.$or[1].$not["b"].$lt: takes a number or a string'],
    ['$not of an array', { $not: [{ a: 1 }] }, 'filter.$not: a filter is an object'],
  ])('%s', (_, filter, problem) => {
    expect(filterProblem(filter)).toContain(problem);
  });

  it('should refuse combinators nested deeper than 16 and filters over 16 KiB', () => {
    let deep: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < 17; i++) deep = { $not: deep };
    expect(filterProblem(deep)).toMatch(/nest at most 16 deep/);
    expect(filterProblem({ a: { $in: Array.from({ length: 3000 }, (_, i) => `value-${i}`) } })).toMatch(/at most 16384 bytes/);
  });
});
