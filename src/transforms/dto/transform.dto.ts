import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { NoNul } from '../../common/validators.js';
import { Verbatim } from '../../common/verbatim.js';

const EXAMPLE = `function handler(webhook) {
  webhook.body = { text: 'Order ' + webhook.body.orderId + ' paid' };
  return webhook;
}`;

/** A receiver's transform: JavaScript that defines `function handler(webhook)` (docs/guide.md, Transformations). */
export class TransformDto {
  @ApiProperty({
    example: EXAMPLE,
    description:
      'JavaScript defining `function handler(webhook)`: it gets `{method, url, headers, body, eventType, receiver, attempt}` (body parsed when JSON) and returns the webhook, changed or not, or null to send nothing. At most 64 KiB',
  })
  @IsString()
  code: string;
}

/** `POST /v1/receivers/{name}/transform/test`: a run on a sample or a past delivery, nothing sent. */
export class TransformTestDto {
  @ApiPropertyOptional({ description: "The code to run; left out: the receiver's own transform", example: EXAMPLE })
  @IsOptional()
  @IsString()
  code?: string;

  @ApiPropertyOptional({
    description: "A sample body (any JSON value; a string is sent as it is), sent to the receiver's URL with its headers. Give this or callbackId",
    example: { orderId: 'o-1001', amount: 1500 },
  })
  @Allow()
  @Verbatim()
  payload?: unknown;

  @ApiPropertyOptional({ description: 'The event type the sample stands for (`webhook.eventType`)', example: 'order.paid' })
  @IsOptional()
  @NoNul()
  @MaxLength(128)
  @IsString()
  eventType?: string;

  @ApiPropertyOptional({ description: 'A past delivery of this receiver (a callback id): its stored request, as its next attempt would get it' })
  @IsOptional()
  @IsUUID()
  callbackId?: string;
}

export class TransformRequestDto {
  @ApiProperty() method: string;
  @ApiProperty() url: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'as they would go out: with user-agent and the Standard Webhooks headers, signed now',
  })
  headers: Record<string, string>;
  @ApiProperty({ type: String, nullable: true }) body: string | null;
}

export class TransformErrorDto {
  @ApiProperty({ example: "TypeError: cannot read property 'orderId' of undefined" }) message: string;
  @ApiProperty({ type: Number, nullable: true, description: 'line in the code (1 = first); null when no line of it is to blame' }) line: number | null;
  @ApiProperty({ type: Number, nullable: true }) column: number | null;
}

/** What a transform made of the input: `send` with the request, `cancel` (it returned null), or `error`. */
export class TransformTestResultDto {
  @ApiProperty({ enum: ['send', 'cancel', 'error'] }) result: 'send' | 'cancel' | 'error';
  @ApiProperty({ type: TransformRequestDto, nullable: true, description: 'what would be sent (result send)' }) request: TransformRequestDto | null;
  @ApiProperty({ type: TransformErrorDto, nullable: true, description: 'why it failed (result error)' }) error: TransformErrorDto | null;
  @ApiProperty({ description: 'the run, in the sandbox' }) durationMs: number;
  @ApiProperty({ type: TransformRequestDto, description: 'the webhook the handler was given (its body as text)' }) input: TransformRequestDto;
  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['basic', 'bearer', 'oauth2'],
    description:
      "the receiver's authentication, added when the call is sent, after the transform: its Authorization header replaces any in `request` (and is never shown); null: none",
  })
  auth: string | null;
  @ApiProperty({ description: "the call goes through the receiver's own TLS settings (client certificate, CA) when sent" }) tls: boolean;
}

/** The OpenAPI of `transform` in a receiver's settings (the API's and the portal's): an object {code}, or null to remove it. */
export const TRANSFORM_PROPERTY = {
  type: TransformDto,
  nullable: true,
  description: 'JavaScript that reshapes each request before it is sent (docs/guide.md, Transformations); null removes it',
} as const;
