import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { Allow, IsBoolean, IsISO8601, IsObject, IsOptional, IsString, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { AttemptDto, CallbackDetailDto } from '../../callbacks/dto/callback.dto.js';
import { cursorParam, dateParam, pageLimit } from '../../common/params.js';
import { statusParam, CALLBACK_STATUSES, type CallbackStatus } from '../../model/states.js';
import { IsHeaderMap, IsHttpUrl } from '../../common/validators.js';
import { NestedType, Verbatim } from '../../common/verbatim.js';
import { LatencyQueryDto } from '../../history/dto/latency.dto.js';
import { ReceiverDto, ReceiverFiguresDto } from '../../receivers/dto/receiver.dto.js';
import { ReceiverAuthDto, ReceiverTlsDto, ReceiverTlsInputDto } from '../../receiver-auth/dto/credentials.dto.js';
import { SecretDto } from '../../signing/dto/secrets.dto.js';
import { TRANSFORM_PROPERTY, TransformDto } from '../../transforms/dto/transform.dto.js';
import { PORTAL_CAPABILITIES, type PortalCapability } from '../portal-token.policy.js';

/** A PATCH field that was sent (null included): validated, so null is refused rather than read as left out. */
const given = (_: object, value: unknown) => value !== undefined;

/** `GET /portal/api/session`: who the portal is for and what it may do. */
export class PortalSessionViewDto {
  @ApiProperty({ example: 'merchant-42' }) receiver: string;
  @ApiProperty({ type: [String], enum: PORTAL_CAPABILITIES }) capabilities: PortalCapability[];
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
  @ApiProperty({ description: 'Send it as x-csrf-token on every change made with the session cookie' }) csrfToken: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, nullable: true, description: 'CSS variables of the session' })
  theme: Record<string, string> | null;
  @ApiProperty({ type: String, nullable: true }) returnUrl: string | null;
}

/** The receiver as its portal shows it: settings, its credentials write-only, figures; no secrets (GET /portal/api/secrets), no subscriptions. */
export class PortalReceiverDto extends ReceiverDto {
  @ApiProperty({ type: ReceiverFiguresDto }) figures: ReceiverFiguresDto;
  @ApiProperty({ type: ReceiverAuthDto, nullable: true, description: 'how its calls authenticate (secrets shown as "set"); null: none' })
  auth: ReceiverAuthDto | null;
  @ApiProperty({ type: ReceiverTlsDto, nullable: true, description: 'its client certificate and CA (the key shown as "set"); null: none' })
  tls: ReceiverTlsDto | null;
  @ApiProperty({ ...TRANSFORM_PROPERTY, description: 'its transform; null: none' }) transform: TransformDto | null;
}

export class PortalSecretsDto {
  @ApiProperty({ type: [SecretDto], description: 'newest first; two while a rotation overlaps' }) secrets: SecretDto[];
}

/** `PATCH /portal/api/receiver` (edit): what a receiver may change of itself. */
export class PortalSettingsDto {
  // left out leaves it as it is; null is refused (IsOptional would let it clear the url every batch naming the receiver needs)
  @ApiPropertyOptional({ example: 'https://shop.example/hooks' }) @ValidateIf(given) @IsHttpUrl() url?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, description: 'Headers sent with its callbacks (replaces them)' })
  @ValidateIf(given)
  @IsHeaderMap()
  @Verbatim()
  headers?: Record<string, string>;

  @ApiPropertyOptional({ description: 'true holds its callbacks; false sends them again' }) @ValidateIf(given) @IsBoolean() disabled?: boolean;

  @ApiPropertyOptional({
    description: 'How its calls authenticate, as PUT /v1/receivers/{name} takes it (basic, bearer, oauth2; secrets write-only); null removes it',
    nullable: true,
    type: 'object',
    additionalProperties: true,
  })
  @Allow()
  @Verbatim()
  auth?: unknown;

  @ApiPropertyOptional({
    type: ReceiverTlsInputDto,
    nullable: true,
    description: 'Mutual TLS, as PUT /v1/receivers/{name} takes it (the key write-only); null removes it',
  })
  @Allow()
  @Verbatim()
  tls?: unknown;

  @ApiPropertyOptional(TRANSFORM_PROPERTY)
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @NestedType(() => TransformDto)
  transform?: TransformDto | null;
}

/** ?status=&since=&until=&eventType=&cursor=&limit= of GET /portal/api/deliveries. */
export class PortalDeliveryQueryDto {
  @ApiPropertyOptional({ enum: CALLBACK_STATUSES })
  @Allow()
  @Transform(({ value }) => statusParam(value))
  status?: CallbackStatus;

  @ApiPropertyOptional({ type: String, format: 'date-time', description: 'Only deliveries accepted since (ISO-8601)' })
  @Allow()
  @Transform(({ value }) => dateParam('since', value))
  since?: Date;

  @ApiPropertyOptional({ type: String, format: 'date-time', description: 'Only deliveries accepted before (ISO-8601)' })
  @Allow()
  @Transform(({ value }) => dateParam('until', value))
  until?: Date;

  @ApiPropertyOptional({ description: 'Only the deliveries of events of this type', example: 'order.paid' })
  @IsOptional()
  @MaxLength(128)
  @IsString()
  eventType?: string;

  @ApiPropertyOptional({ description: 'nextCursor of the previous page' })
  @Allow()
  @Transform(({ value }) => cursorParam(value))
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 200, default: 50 })
  @Allow()
  @Transform(({ value }) => pageLimit(value, 50, 200))
  limit: number = 50;
}

export class SentRequestDto {
  @ApiProperty() method: string;
  @ApiProperty() url: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    description:
      'The headers of an attempt: stored ones, user-agent and the Standard Webhooks headers, with webhook-timestamp the second the attempt started and webhook-signature made again with the secrets that signed then',
  })
  headers: Record<string, string>;
  @ApiProperty({ type: String, nullable: true, description: 'the body as sent' }) body: string | null;
}

export class PortalAttemptDto extends AttemptDto {
  @ApiProperty({ type: SentRequestDto }) request: SentRequestDto;
}

/** A delivery with its attempts, each with the request as sent. */
export class PortalDeliveryDto extends CallbackDetailDto {
  @ApiProperty({ type: [PortalAttemptDto] }) declare attempts: PortalAttemptDto[];
  @ApiProperty({ type: String, nullable: true, description: 'the body' }) body: string | null;
}

/** `POST /portal/api/replays` (replay): send again every failed delivery accepted since `since`. */
export class PortalReplayDto {
  @ApiProperty({ format: 'date-time', description: 'at most 31 days ago' }) @IsISO8601({ strict: true }) since: string;
}

/** ?from=&to=&bucket= of GET /portal/api/latency (the receiver is the session's). */
export class PortalLatencyQueryDto extends PickType(LatencyQueryDto, ['from', 'to', 'bucket'] as const) {}
