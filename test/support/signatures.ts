import { Webhook } from 'standardwebhooks';
import type { ReceivedRequest } from './receiver.js';

/** What the `standardwebhooks` package (an independent implementation) says about a received request. */
export function verifies(secret: string, r: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>, { jsonParse: false });
    return true;
  } catch {
    return false;
  }
}
