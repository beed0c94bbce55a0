import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';
import { Allow, ArrayMaxSize, IsArray, IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { PRIORITIES, type Priority } from '../../model/states.js';
import { NoNul } from '../../common/validators.js';
import { Verbatim } from '../../common/verbatim.js';

/** Any JSON value, as the OpenAPI document says it. */
const ANY_JSON: ApiPropertyOptions = {
  nullable: true,
  anyOf: [{ type: 'object' }, { type: 'array', items: {} }, { type: 'string' }, { type: 'number' }, { type: 'boolean' }],
};

/** An event's id: the sender's own, safe in a URL path. */
export const EVENT_ID = /^[A-Za-z0-9][A-Za-z0-9._~:@-]{0,254}$/;

/** `POST /v1/events`. */
export class PublishEventDto {
  @ApiProperty({ example: 'order.paid', description: 'An event type of your key (PUT /v1/event-types/{name})' })
  @MaxLength(128)
  @IsString()
  type: string;

  @ApiProperty({
    ...ANY_JSON,
    description: "Any JSON value: what every receiver gets as the body (application/json); it must pass the type's schema",
    example: { orderId: 'o-42', amount: 1500 },
  })
  @Allow()
  @Verbatim()
  payload: unknown;

  @ApiPropertyOptional({
    example: 'evt_2f9c1e',
    description:
      'Your id for the event (1-255 of letters, digits and . _ ~ : @ -). The same id with the same body answers the first event; with another body, 409. Default: one is made',
  })
  @IsOptional()
  @Matches(EVENT_ID, { message: 'id must be 1 to 255 letters, digits and . _ ~ : @ -, starting with a letter or digit' })
  @IsString()
  id?: string;

  @ApiPropertyOptional({ type: [String], description: 'Only these receivers (by name), of those subscribed; an unknown name is a 400' })
  @IsOptional()
  @IsString({ each: true })
  @ArrayMaxSize(1000)
  @IsArray()
  receivers?: string[];

  @ApiPropertyOptional({
    description: 'Per receiver: its deliveries with the same ordering key go one at a time, in the order published (stored as `<receiver>/<orderingKey>`)',
  })
  @IsOptional()
  @NoNul()
  @MaxLength(200)
  @MinLength(1)
  @IsString()
  orderingKey?: string;

  @ApiPropertyOptional({ enum: PRIORITIES, default: 'normal' })
  @IsOptional()
  @IsIn(PRIORITIES)
  priority?: Priority;
}

/** An event as listings show it (without its payload: GET /v1/events/{id} has it). */
export class EventSummaryDto {
  @ApiProperty({ description: 'yours, or the one made' }) id: string;
  @ApiProperty() type: string;
  @ApiProperty({ description: 'callbacks made: one per receiver that matched (0: none subscribed; the event is stored all the same)' })
  deliveries: number;
  @ApiProperty({ description: 'the batch holding its deliveries (GET /v1/callbacks?event= or GET /v1/batches/{id}/callbacks pages through them)' })
  batchId: string;
  @ApiProperty() createdAt: string;
}

/** `POST /v1/events` answers it (202), and a replay of the same id and body answers the first one. */
export class AcceptedEventDto extends EventSummaryDto {}

export class EventDeliveryDto {
  @ApiProperty() callbackId: string;
  @ApiProperty({ type: String, nullable: true, description: 'null once the receiver is deleted' }) receiver: string | null;
  @ApiProperty({ enum: ['pending', 'in_flight', 'succeeded', 'failed', 'cancelled'] }) status: string;
  @ApiProperty({ description: 'pending but held: its receiver is disabled' }) held: boolean;
  @ApiProperty() attempts: number;
  @ApiProperty({ type: Number, nullable: true }) lastStatusCode: number | null;
  @ApiProperty({ type: String, nullable: true }) lastError: string | null;
}

/** `GET /v1/events/{id}`: the event with its payload and its deliveries (the first 1,000; GET /v1/callbacks?event= pages through all). */
export class EventDetailDto extends EventSummaryDto {
  @ApiProperty({ ...ANY_JSON, description: 'what was published' }) payload: unknown;
  @ApiProperty({ type: [EventDeliveryDto] }) callbacks: EventDeliveryDto[];
}

export class EventPageDto {
  @ApiProperty({ type: [EventSummaryDto] }) items: EventSummaryDto[];
  @ApiProperty({ type: String, nullable: true, description: "the next page's `cursor`; null on the last page" }) nextCursor: string | null;
}
