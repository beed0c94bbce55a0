import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';
import { MaxAttemptsSetting, RetryDelaysMsSetting, TimeoutMsSetting } from '../../model/delivery-settings.js';
import {
  Allow,
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsISO8601,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { IsHeaderMap, IsHttpUrl, NoNul } from '../../common/validators.js';
import { NestedType, Verbatim } from '../../common/verbatim.js';
import { PRIORITIES, type Priority } from '../../model/states.js';
import { METHODS } from '../../model/methods.js';

/** A callback's body, any JSON value, as the OpenAPI document says it (reflection alone says `object`). */
const ANY_JSON: ApiPropertyOptions = {
  nullable: true,
  anyOf: [{ type: 'object', additionalProperties: true }, { type: 'array', items: {} }, { type: 'string' }, { type: 'number' }, { type: 'boolean' }],
};

// class-validator checks a property's decorators from the one nearest its name
// outwards, and the API reports the first failure: so the type check is written
// last, and `"abc"` for a number says "must be an integer", not "must not be greater".

/** Settings shared by the callbacks of a batch; each callback may override them. */
export class CallbackDefaultsDto {
  @ApiPropertyOptional({ enum: METHODS, default: 'POST' })
  @IsOptional()
  @IsIn(METHODS)
  method?: (typeof METHODS)[number];

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsHeaderMap()
  @Verbatim()
  headers?: Record<string, string>;

  @TimeoutMsSetting('Per-call timeout in ms (default 15000)')
  timeoutMs?: number;

  @MaxAttemptsSetting('Attempts in all, first included (default 8)')
  maxAttempts?: number;

  @RetryDelaysMsSetting()
  retryDelaysMs?: number[];

  @ApiPropertyOptional({
    enum: PRIORITIES,
    default: 'normal',
    description: "Within the key's share: due high callbacks go before normal, normal before low (low still moves)",
  })
  @IsOptional()
  @IsIn(PRIORITIES)
  priority?: Priority;
  @ApiPropertyOptional({
    example: 'merchant-42',
    description: 'A receiver of your key (PUT /v1/receivers/{name}): signed with its secrets, its settings below these',
  })
  @IsOptional()
  @MaxLength(128)
  @IsString()
  receiver?: string;
}

export class CallbackInputDto extends CallbackDefaultsDto {
  @ApiPropertyOptional({ example: 'https://example.com/hooks/order', description: "Required unless the callback's receiver has a url" })
  @IsOptional()
  @IsHttpUrl()
  url?: string;

  @ApiPropertyOptional({ description: 'A string is sent as is; any other JSON value is sent as application/json; null or none: no body', ...ANY_JSON })
  @Allow()
  @Verbatim()
  body?: unknown;

  @ApiPropertyOptional({ description: 'Not before this time (ISO-8601)' })
  @IsOptional()
  @IsISO8601({ strict: true })
  runAt?: string;

  @ApiPropertyOptional({ description: 'Your own id for this callback, echoed back' })
  @IsOptional()
  @NoNul()
  @MaxLength(200)
  @IsString()
  externalId?: string;

  @ApiPropertyOptional({
    description: 'Callbacks of this key with the same ordering key are delivered one at a time, in the order accepted (batch order, then array order)',
  })
  @IsOptional()
  @NoNul()
  @MaxLength(200)
  @MinLength(1)
  @IsString()
  orderingKey?: string;
}

/** Where this batch's batch.completed goes besides the key's operator endpoint: a url, or a receiver of the key (exactly one). */
export class BatchNotifyDto {
  @ApiPropertyOptional({
    example: 'https://example.com/hooks/batch-done',
    description: 'Signed with the secret of its destination, as a callback without a receiver',
  })
  @IsOptional()
  @IsHttpUrl()
  url?: string;

  @ApiPropertyOptional({ example: 'merchant-42', description: 'A receiver of your key: its url, settings and secret (resolved when the batch is stored)' })
  @IsOptional()
  @MaxLength(128)
  @IsString()
  receiver?: string;
}

export class CreateBatchDto {
  @ApiPropertyOptional() @IsOptional() @NoNul() @MaxLength(200) @IsString() label?: string;

  @ApiPropertyOptional({ type: CallbackDefaultsDto })
  // @IsObject: on its own, nested validation would take an array here (or in callbacks) and check its items instead.
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @NestedType(() => CallbackDefaultsDto)
  defaults?: CallbackDefaultsDto;

  @ApiPropertyOptional({ type: BatchNotifyDto, description: "Also send this batch's batch.completed operator event here (see Operator events)" })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @NestedType(() => BatchNotifyDto)
  notify?: BatchNotifyDto;

  @ApiProperty({ type: [CallbackInputDto] })
  @ValidateNested({ each: true })
  @IsObject({ each: true })
  @ArrayMaxSize(100_000)
  @ArrayMinSize(1)
  @IsArray()
  @NestedType(() => CallbackInputDto)
  callbacks: CallbackInputDto[];
}
