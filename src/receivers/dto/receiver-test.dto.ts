import { ApiProperty } from '@nestjs/swagger';
import { PhasesDto } from '../../model/phases.dto.js';
import { OUTCOMES } from '../../model/states.js';

/**
 * `POST /v1/receivers/{name}/test`: the one example call made, as an attempt (nothing is
 * stored); through its transform, when it has one, as its callbacks go.
 */
export class ReceiverTestDto {
  @ApiProperty({ example: 'merchant-42' }) receiver: string;
  @ApiProperty({ description: 'Where it was sent: the URL its transform made, when it has one' }) url: string;
  @ApiProperty({ description: 'The webhook-id it was sent with (made for this test; no callback holds it)' }) webhookId: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'The body sent: {"type": "receiver.test", …}, or what its transform made of it (null: none). When nothing was sent (its transform failed or returned null), the example',
  })
  body: string | null;
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty() durationMs: number;
  @ApiProperty({ type: Number, nullable: true, description: 'HTTP status; null without a response' }) statusCode: number | null;
  @ApiProperty({
    type: String,
    enum: OUTCOMES,
    nullable: true,
    description:
      '`transform_error`: its transform failed, nothing was sent; null: its transform returned null, so nothing was sent (a callback would be cancelled)',
  })
  outcome: string | null;
  @ApiProperty({ description: 'Whether a callback would count it a success (2xx)' }) ok: boolean;
  @ApiProperty({ type: String, nullable: true }) error: string | null;
  @ApiProperty({ type: PhasesDto, description: 'Phase timings, ms from the start (tokenMs: an OAuth2 token fetched first)' }) phases: PhasesDto;
  @ApiProperty({ type: String, nullable: true, enum: ['basic', 'bearer', 'oauth2'], description: 'The authentication it went with; null: none' }) auth:
    string | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, nullable: true }) responseHeaders: Record<string, string> | null;
  @ApiProperty({ type: String, nullable: true, description: 'Start of the response body (capped)' }) responseBody: string | null;
}
