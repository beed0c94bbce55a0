import { ApiProperty } from '@nestjs/swagger';
import { PhasesDto } from '../../callbacks/dto/callback.dto.js';
import { OUTCOMES } from '../../common/states.js';

/** `POST /v1/receivers/{name}/test`: the one example call made, as an attempt (nothing is stored). */
export class ReceiverTestDto {
  @ApiProperty({ example: 'merchant-42' }) receiver: string;
  @ApiProperty() url: string;
  @ApiProperty({ description: 'The webhook-id it was sent with (made for this test; no callback holds it)' }) webhookId: string;
  @ApiProperty({ description: 'The body sent: {"type": "receiver.test", …}' }) body: string;
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty() durationMs: number;
  @ApiProperty({ type: Number, nullable: true, description: 'HTTP status; null without a response' }) statusCode: number | null;
  @ApiProperty({ enum: OUTCOMES }) outcome: string;
  @ApiProperty({ description: 'Whether a callback would count it a success (2xx)' }) ok: boolean;
  @ApiProperty({ type: String, nullable: true }) error: string | null;
  @ApiProperty({ type: PhasesDto, description: 'Phase timings, ms from the start (tokenMs: an OAuth2 token fetched first)' }) phases: PhasesDto;
  @ApiProperty({ type: String, nullable: true, enum: ['basic', 'bearer', 'oauth2'], description: 'The authentication it went with; null: none' }) auth:
    string | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, nullable: true }) responseHeaders: Record<string, string> | null;
  @ApiProperty({ type: String, nullable: true, description: 'Start of the response body (capped)' }) responseBody: string | null;
}
