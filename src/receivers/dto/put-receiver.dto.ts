import { ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { MaxAttemptsSetting, RetryDelaysMsSetting, TimeoutMsSetting } from '../../model/delivery-settings.js';
import { Allow, IsArray, IsBoolean, IsObject, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { IsHeaderMap, IsHttpUrl, NoNul } from '../../common/validators.js';
import { NestedType, Verbatim } from '../../common/verbatim.js';
import { BasicAuthDto, BearerAuthDto, OAuth2AuthDto, ReceiverTlsInputDto } from '../../receiver-auth/dto/credentials.dto.js';
import { TRANSFORM_PROPERTY, TransformDto } from '../../transforms/dto/transform.dto.js';

/** `whsec_` + base64 (the Standard Webhooks form); at least 24 bytes is checked by the service. */
export const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

/**
 * `PUT /v1/receivers/{name}`: the receiver's settings. On an update, what is left out
 * stays as it was, and `null` clears a setting (`disabled: null` and `secret: null`
 * leave them as they are). The settings apply to its callbacks below the callback's own and
 * the batch's `defaults`, above the service's configuration.
 */
export class PutReceiverDto {
  @ApiPropertyOptional({ example: 'https://shop.example/hooks', description: 'Used when a callback naming this receiver gives no url' })
  @IsOptional()
  @IsHttpUrl()
  url?: string;

  @ApiPropertyOptional() @IsOptional() @NoNul() @MaxLength(1000) @IsString() description?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsHeaderMap()
  @Verbatim()
  headers?: Record<string, string>;

  @TimeoutMsSetting()
  timeoutMs?: number;

  @MaxAttemptsSetting()
  maxAttempts?: number;

  @RetryDelaysMsSetting()
  retryDelaysMs?: number[];

  @ApiPropertyOptional({
    type: [String],
    nullable: true,
    example: ['order.paid', 'invoice.*'],
    description: 'The event types it takes: names, and `prefix.*` for every type under a prefix. Empty or null: none (callbacks naming it still reach it)',
  })
  @IsOptional()
  @IsString({ each: true })
  @IsArray()
  eventTypes?: string[] | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    example: { 'data.amount': { $gte: 100 }, $or: [{ 'data.currency': 'EUR' }, { 'data.currency': 'USD' }] },
    description:
      'Only events whose payload passes it: dotted paths with $eq $ne $in $nin $gt $gte $lt $lte $exists, combined with $and $or $not (README, Events). null removes it',
  })
  @Allow()
  @Verbatim()
  filter?: Record<string, unknown> | null;

  @ApiPropertyOptional({ description: 'true holds its callbacks (pending, not sent, no attempt used) until false' })
  @IsOptional()
  @IsBoolean()
  disabled?: boolean;

  @ApiPropertyOptional({ description: "The receiver's existing key, `whsec_` + base64 of at least 24 bytes; else one is made" })
  @IsOptional()
  @Matches(SECRET_PATTERN, { message: 'secret must be whsec_ followed by base64' })
  @MaxLength(200)
  @IsString()
  secret?: string;

  @ApiPropertyOptional(TRANSFORM_PROPERTY)
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @NestedType(() => TransformDto)
  transform?: TransformDto | null;

  @ApiPropertyOptional({
    oneOf: [{ $ref: getSchemaPath(BasicAuthDto) }, { $ref: getSchemaPath(BearerAuthDto) }, { $ref: getSchemaPath(OAuth2AuthDto) }],
    discriminator: { propertyName: 'type' },
    nullable: true,
    description:
      'How each call authenticates: basic, bearer, or an OAuth2 token of the client credentials grant. Secrets are write-only (answers show "set"); on an update of the same type a secret left out is kept. null removes it',
  })
  @Allow()
  @Verbatim()
  auth?: unknown;

  @ApiPropertyOptional({
    type: ReceiverTlsInputDto,
    nullable: true,
    description: "Mutual TLS: a client certificate and its key, and/or the CA the receiver's certificate must chain to. The key is write-only. null removes it",
  })
  @Allow()
  @Verbatim()
  tls?: unknown;
}
