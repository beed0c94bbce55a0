/**
 * Why a receiver would or would not get an event (POST /v1/events/preview), in the
 * order a publish decides it (EventService.publishEvent, subscribersOf): the event
 * itself (its type known, its payload passing the schema), the subscription, a URL,
 * the filter; a disabled receiver gets its delivery held.
 */
export const PREVIEW_REASONS = ['delivered', 'disabled', 'not_subscribed', 'filter_failed', 'no_url', 'event_refused'] as const;
export type PreviewReason = (typeof PREVIEW_REASONS)[number];

export interface PreviewCandidate {
  name: string;
  url: string | null;
  disabled: boolean;
  eventTypes: string[];
  eventFilter: unknown;
}

export interface PreviewVerdict {
  receiver: string;
  delivers: boolean;
  reason: PreviewReason;
  detail: string;
}

/**
 * `patterns`: the type and its `prefix.*` wildcards (patternsOf); `passesFilter`: the
 * payload passes its filter, or it has none (evaluated in a payload check thread, as
 * a publish does: EventService); `problem`: why the event itself is refused, if it is.
 */
export function previewVerdict(r: PreviewCandidate, patterns: readonly string[], passesFilter: boolean, problem: string | null): PreviewVerdict {
  const verdict = (delivers: boolean, reason: PreviewReason, detail: string) => ({ receiver: r.name, delivers, reason, detail });
  if (problem !== null) return verdict(false, 'event_refused', problem);
  const through = r.eventTypes.find((p) => patterns.includes(p));
  if (through === undefined) return verdict(false, 'not_subscribed', `its eventTypes take none of ${patterns.join(', ')}`);
  if (r.url === null) return verdict(false, 'no_url', 'it has no url');
  if (!passesFilter) return verdict(false, 'filter_failed', 'the payload fails its filter');
  if (r.disabled) return verdict(true, 'disabled', `subscribed through ${through}; disabled: the delivery is held until it is enabled`);
  return verdict(true, 'delivered', `subscribed through ${through}`);
}
