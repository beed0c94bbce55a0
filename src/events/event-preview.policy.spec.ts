import { describe, expect, it } from 'vitest';
import { previewVerdict, type PreviewCandidate } from './event-preview.policy.js';

const patterns = ['order.paid', 'order.*'];
const base: PreviewCandidate = { name: 'r', url: 'https://r.example/hooks', disabled: false, eventTypes: ['order.*'], eventFilter: null };

describe('previewVerdict', () => {
  it.each<[string, Partial<PreviewCandidate>, boolean, string | null, boolean, string]>([
    ['subscribed by a wildcard', {}, true, null, true, 'delivered'],
    ['subscribed by name', { eventTypes: ['order.paid'] }, true, null, true, 'delivered'],
    ['disabled: held, still a delivery', { disabled: true }, true, null, true, 'disabled'],
    ['another type only', { eventTypes: ['invoice.*'] }, true, null, false, 'not_subscribed'],
    ['no subscriptions', { eventTypes: [] }, true, null, false, 'not_subscribed'],
    ['without a url', { url: null }, true, null, false, 'no_url'],
    ['its filter fails', { eventFilter: { amount: { $gte: 100 } } }, false, null, false, 'filter_failed'],
    ['its filter passes', { eventFilter: { amount: { $gte: 10 } } }, true, null, true, 'delivered'],
    ['not subscribed before its filter', { eventTypes: ['invoice.*'], eventFilter: { amount: { $gte: 100 } } }, false, null, false, 'not_subscribed'],
    ['the event refused before all else', { disabled: true }, true, 'payload at /amount must be integer', false, 'event_refused'],
  ])('should decide %s', (_, change, passesFilter, problem, delivers, reason) => {
    expect(previewVerdict({ ...base, ...change }, patterns, passesFilter, problem)).toMatchObject({ delivers, reason });
  });
});
