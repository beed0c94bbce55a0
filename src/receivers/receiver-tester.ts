import type { ReceiverTestDto } from './dto/receiver-test.dto.js';

/**
 * Sends one signed example call to a receiver now, with its credentials, and answers
 * the attempt; stores nothing. The worker's transport does it (dispatch/ provides
 * this token), so the call goes exactly as its callbacks do.
 */
export abstract class ReceiverTester {
  /** `type`: the example body's type (`receiver.test`; the portal's `portal.test`). */
  abstract testReceiver(apiKeyId: string, name: string, type?: string): Promise<ReceiverTestDto>;
}
