import { describe, expect, it } from 'vitest';
import { previewVerdict, type PreviewCandidate } from './event-preview.policy.js';

const patterns = ['order.paid', 'order.*'];
const base: PreviewCandidate = { name: 'r', url: 'https://r.example/hooks', disabled: false, eventTypes: ['order.*'], eventFilter: null };

describe('previewVerdict', () => {
  it.each<[string, Partial<PreviewCandidate>, string | null, boolean, string]>([
    ['subscribed by a wildcard', {}, null, true, 'delivered'],
    ['subscribed by name', { eventTypes: ['order.paid'] }, null, true, 'delivered'],
    ['disabled: held, still a delivery', { disabled: true }, null, true, 'disabled'],
    ['another type only', { eventTypes: ['invoice.*'] }, null, false, 'not_subscribed'],
    ['no subscriptions', { eventTypes: [] }, null, false, 'not_subscribed'],
    ['without a url', { url: null }, null, false, 'no_url'],
    ['its filter fails', { eventFilter: { amount: { $gte: 100 } } }, null, false, 'filter_failed'],
    ['its filter passes', { eventFilter: { amount: { $gte: 10 } } }, null, true, 'delivered'],
    ['the event refused before all else', { disabled: true }, 'payload at /amount must be integer', false, 'event_refused'],
  ])('should decide %s', (_, change, problem, delivers, reason) => {
    expect(previewVerdict({ ...base, ...change }, patterns, { amount: 50 }, problem)).toMatchObject({ delivers, reason });
  });
});
